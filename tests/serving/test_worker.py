"""``WorkerProcess``: work run in one spawned process, its initializer run once when the process starts, a bound on
the calls pending, a process that died replaced."""

from __future__ import annotations

import asyncio
import os
import time

import pytest

from ragtruth_spans.detectors.stream import load_splitter
from ragtruth_spans.serving.worker import WorkerProcess


def _pid_and_splitter_loaded() -> tuple[int, int]:
    """The worker's process id and how many splitters it has built (before any split in it)."""
    from ragtruth_spans.detectors.shared.sentences import _segmenter

    return os.getpid(), _segmenter.cache_info().currsize


def test_calls_run_in_one_other_process_whose_initializer_loaded_the_splitter() -> None:
    worker = WorkerProcess("test", initializer=load_splitter)
    try:
        first = asyncio.run(worker.run(_pid_and_splitter_loaded))
        again = asyncio.run(worker.run(_pid_and_splitter_loaded))
    finally:
        worker.close()
    assert first[0] != os.getpid() and first == again
    assert first[1] == 1  # built by the initializer at the process's start, never by a call
    assert not worker.started


def _niceness() -> int:
    return os.nice(0)


def test_the_worker_runs_at_the_lower_priority_it_is_given() -> None:
    worker = WorkerProcess("test", nice=5)
    try:
        assert asyncio.run(worker.run(_niceness)) == min(19, os.nice(0) + 5)
    finally:
        worker.close()


def test_pending_calls_are_bounded_and_counted_until_they_end_in_the_process() -> None:
    """A call left by its caller still counts while the process runs it (the bound is on the process's work)."""
    worker = WorkerProcess("test", max_pending=2)

    async def scenario() -> list[tuple[int, bool]]:
        seen = []
        first = asyncio.ensure_future(worker.run(time.sleep, 0.5))
        second = asyncio.ensure_future(worker.run(time.sleep, 0.5))
        await asyncio.sleep(0.1)
        seen.append((worker.pending, worker.full))
        second.cancel()  # its caller left; the call may already be on its way to the process
        await first
        for _ in range(100):
            if worker.pending == 0:
                break
            await asyncio.sleep(0.05)
        seen.append((worker.pending, worker.full))
        return seen

    asyncio.run(worker.run(int))  # started and ready
    try:
        assert asyncio.run(scenario()) == [(2, True), (0, False)]
    finally:
        worker.close()


def test_a_process_that_died_is_replaced_at_the_next_call() -> None:
    from concurrent.futures.process import BrokenProcessPool

    worker = WorkerProcess("test")
    try:
        with pytest.raises(BrokenProcessPool):
            asyncio.run(worker.run(os._exit, 3))
        assert asyncio.run(worker.run(_pid_and_splitter_loaded))[0] != os.getpid()
    finally:
        worker.close()
