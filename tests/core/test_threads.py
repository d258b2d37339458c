"""The cores a process may use, the one pool of native calls (a user's OMP_NUM_THREADS caps it), and the block
that holds BLAS to one thread."""

from __future__ import annotations

import pytest

from ragtruth_spans.core import threads


def test_the_usable_cores_are_at_least_one() -> None:
    assert threads.usable_cores() >= 1


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("3", 3)])
def test_omp_num_threads_caps_the_native_workers(value: str, expected: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert threads.native_workers() == expected


@pytest.mark.parametrize("value", [None, "0", "", "many"])
def test_without_a_cap_every_usable_core_works(value: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if value is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert threads.omp_threads() is None and threads.native_workers() == threads.usable_cores()


def test_the_pool_is_made_once_per_process() -> None:
    assert threads.native_pool() is threads.native_pool()
    assert list(threads.native_pool().map(abs, [-2, 3])) == [2, 3]


def test_one_native_thread_holds_blas_to_one_thread_within_the_block_only() -> None:
    import numpy as np
    from threadpoolctl import threadpool_info

    float(np.ones(2) @ np.ones(2))  # BLAS loaded
    before = [pool["num_threads"] for pool in threadpool_info()]
    with threads.one_native_thread():
        inside = [pool["num_threads"] for pool in threadpool_info()]
    assert inside and all(n == 1 for n in inside)
    assert [pool["num_threads"] for pool in threadpool_info()] == before
