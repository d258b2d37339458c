"""The cache of context encodings: bounded in bytes, least recently used first, and results the same without it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from ragtruth_spans.detectors.shared.context_cache import ContextCache, context_key


def _array(n_floats: int) -> np.ndarray:
    return np.zeros(n_floats, dtype=np.float32)


def test_the_bound_is_in_bytes_and_the_least_recently_used_entry_goes_first() -> None:
    cache = ContextCache(max_bytes=1200)
    for key in "abc":
        cache.put(key, _array(100))  # 400 bytes each: all three fit
    assert cache.get("a") is not None  # "a" is now the most recently used
    cache.put("d", _array(100))
    assert cache.get("b") is None and cache.get("a") is not None and cache.get("d") is not None
    stats = cache.stats.to_dict()
    assert stats["bytes"] == 1200 and stats["entries"] == 3 and stats["evictions"] == 1


def test_an_entry_larger_than_the_cache_is_not_kept_and_zero_keeps_nothing() -> None:
    cache = ContextCache(max_bytes=100)
    cache.put("big", _array(1000))
    assert cache.get("big") is None and cache.stats.bytes == 0
    off = ContextCache(max_bytes=0)
    off.put("a", _array(1))
    assert off.get("a") is None and off.stats.to_dict()["hit_rate"] == 0.0


def test_resize_drops_entries_beyond_the_new_bound_at_once() -> None:
    cache = ContextCache(max_bytes=4000)
    for key in "abcd":
        cache.put(key, _array(250))
    cache.resize(2000)
    assert cache.stats.bytes == 2000 and cache.get("a") is None and cache.get("d") is not None
    with pytest.raises(ValueError):
        cache.resize(-1)


def test_a_key_changes_with_the_encoder_the_kind_and_the_units() -> None:
    base = context_key("minilm@1", "tokens", ["One.", "Two."])
    assert base == context_key("minilm@1", "tokens", ["One.", "Two."])
    assert len({base, context_key("minilm@2", "tokens", ["One.", "Two."]),
                context_key("minilm@1", "units", ["One.", "Two."]),
                context_key("minilm@1", "tokens", ["One.Two."]),
                context_key("minilm@1", "tokens", ["One.", "Two.", ""])}) == 5


def test_concurrent_use_keeps_the_byte_count_exact() -> None:
    cache = ContextCache(max_bytes=40 * 400)

    def work(offset: int) -> None:
        for i in range(300):
            cache.put(f"{offset}-{i % 60}", _array(100))
            cache.get(f"{offset}-{(i * 7) % 60}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert cache.stats.bytes == 400 * cache.stats.entries <= cache.max_bytes
