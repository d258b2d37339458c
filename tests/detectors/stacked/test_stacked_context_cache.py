"""The shipped (stacked) detector reads its context encodings through the byte-bounded context cache: the same
results with and without it, each context encoded once."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_results_are_identical_with_and_without_the_context_cache() -> None:
    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir
    from ragtruth_spans.detectors.base import DetectItem
    from ragtruth_spans.detectors.loader import load_detector

    detector = load_detector("default")
    cache = detector.context_cache()
    assert cache is not None
    records = load_ragtruth(sample_data_dir(), split="test")
    items = [DetectItem(context=r.context, response=r.response, task=r.task_type, question=r.question)
             for r in records]
    assert len({i.context for i in items}) < len(items)  # responses share contexts: the cache has work to do
    size = cache.max_bytes
    try:
        cache.clear()
        hits = cache.stats.hits
        cached = [detector.detect_batch([item])[0] for item in items]
        assert cache.stats.hits > hits
        cache.resize(0)
        uncached = [detector.detect_batch([item])[0] for item in items]
        assert cache.stats.entries == 0
    finally:
        cache.resize(size)
    assert cached == uncached
