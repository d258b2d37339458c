"""BoundedCache: least recently used entries go first, an entry is made once however many threads ask, and a
pickled copy starts empty."""

from __future__ import annotations

import pickle
import threading
import time

import pytest

from ragtruth_spans.core.lru import BoundedCache


def test_least_recently_used_goes_first_and_none_is_not_kept() -> None:
    cache = BoundedCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    cache.put("d", None)
    assert (cache.get("a"), cache.get("b"), cache.get("c"), cache.get("d"), len(cache)) == (1, None, 3, None, 2)


def test_threads_asking_together_make_an_entry_once() -> None:
    cache, made = BoundedCache(4), []

    def make() -> str:
        made.append(1)
        time.sleep(0.05)
        return "value"

    results: list[str] = []
    threads = [threading.Thread(target=lambda: results.append(cache.get_or_make("k", make))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == ["value"] * 4 and len(made) == 1


def test_a_failed_make_leaves_the_key_to_the_next_caller() -> None:
    cache = BoundedCache(4)

    def fail() -> str:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        cache.get_or_make("k", fail)
    assert cache.get_or_make("k", lambda: "second") == "second"


def test_a_pickled_copy_keeps_its_size_but_no_entries() -> None:
    cache = BoundedCache(3)
    cache.put("a", 1)
    copy = pickle.loads(pickle.dumps(cache))
    assert copy.size == 3 and len(copy) == 0 and copy.get_or_make("a", lambda: 2) == 2
