"""The micro-batcher alone: concurrent requests share batches, results go back to their own request in order,
the queue is bounded, a failing batch fails only its requests, and closing finishes what is queued."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from server_thread import EchoDetector

from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.serving.batcher import MicroBatcher, Overloaded, ShuttingDown


def _items(*responses: str) -> list[DetectItem]:
    return [DetectItem(context="c", response=r, task="QA") for r in responses]


def test_concurrent_requests_share_one_batch_and_get_their_own_results() -> None:
    gate = threading.Event()
    detector = EchoDetector(gate=gate)
    batcher = MicroBatcher(detector.detect_batch, max_batch=8, max_wait_ms=5).start()
    first = batcher.submit(_items("warm up"))
    assert detector.started.wait(5)  # the worker is busy with the first batch: the next requests queue up
    with ThreadPoolExecutor(8) as pool:
        futures = list(pool.map(lambda i: batcher.submit(_items(f"a{i} x", f"b{i} y")), range(4)))
    gate.set()
    assert first.result(5)[0].diagnostics["seen"] == "warm up"
    for i, future in enumerate(futures):
        assert [d.diagnostics["seen"] for d in future.result(5)] == [f"a{i} x", f"b{i} y"]
    assert [len(b) for b in detector.batches] == [1, 8]
    assert batcher.stats.items == 9 and batcher.stats.batches == 2 and batcher.stats.largest_batch == 8
    batcher.close(5)


def test_a_request_larger_than_a_batch_is_split_in_order() -> None:
    detector = EchoDetector()
    batcher = MicroBatcher(detector.detect_batch, max_batch=4, max_wait_ms=0).start()
    responses = [f"r{i}" for i in range(10)]
    results = batcher.submit(_items(*responses)).result(5)
    assert [d.diagnostics["seen"] for d in results] == responses
    assert [len(b) for b in detector.batches] == [4, 4, 2]
    batcher.close(5)


def test_a_full_queue_refuses_and_counts() -> None:
    gate = threading.Event()
    detector = EchoDetector(gate=gate)
    batcher = MicroBatcher(detector.detect_batch, max_batch=1, max_wait_ms=0, max_queue=3).start()
    running = batcher.submit(_items("running"))
    assert detector.started.wait(5)
    queued = batcher.submit(_items("q1", "q2", "q3"))
    with pytest.raises(Overloaded, match="takes at most 3"):
        batcher.submit(_items("one too many"))
    assert batcher.stats.rejected == 1 and batcher.pending == 3
    gate.set()
    assert len(running.result(5)) == 1 and len(queued.result(5)) == 3
    batcher.close(5)


def test_a_failing_batch_fails_only_its_requests() -> None:
    detector = EchoDetector(fail_on="boom")
    batcher = MicroBatcher(detector.detect_batch, max_batch=2, max_wait_ms=0).start()
    bad = batcher.submit(_items("boom", "a", "b", "c"))  # fails in its first batch: its other items are dropped
    with pytest.raises(RuntimeError, match="secret internal detail"):
        bad.result(5)
    good = batcher.submit(_items("fine"))
    assert good.result(5)[0].diagnostics["seen"] == "fine"
    assert ["a", "b"] not in detector.batches and ["b", "c"] not in detector.batches
    batcher.close(5)


def test_close_finishes_queued_items_then_refuses() -> None:
    gate = threading.Event()
    detector = EchoDetector(gate=gate)
    batcher = MicroBatcher(detector.detect_batch, max_batch=2, max_wait_ms=1000).start()
    futures = [batcher.submit(_items(f"r{i}")) for i in range(5)]
    closer = threading.Thread(target=batcher.close, args=(10,))
    closer.start()
    gate.set()
    closer.join(10)
    assert not closer.is_alive()
    assert [f.result(0)[0].diagnostics["seen"] for f in futures] == [f"r{i}" for i in range(5)]
    with pytest.raises(ShuttingDown):
        batcher.submit(_items("late"))


def test_no_waiting_when_no_other_request_is_in_flight() -> None:
    detector = EchoDetector()
    batcher = MicroBatcher(detector.detect_batch, max_batch=8, max_wait_ms=60_000, in_flight=lambda: 1).start()
    # the only request in flight is already queued: it runs at once instead of waiting a minute for company
    assert batcher.submit(_items("alone")).result(10)[0].diagnostics["seen"] == "alone"
    batcher.close(5)


def test_waits_for_a_request_still_on_its_way() -> None:
    detector = EchoDetector()
    batcher = MicroBatcher(detector.detect_batch, max_batch=8, max_wait_ms=60_000, in_flight=lambda: 2).start()
    first = batcher.submit(_items("first"))
    time.sleep(0.2)
    assert not first.done()  # a second request is in flight and not queued yet: the batch waits for it
    second = batcher.submit(_items("second"))
    assert len(first.result(10)) == len(second.result(10)) == 1
    assert detector.batches == [["first", "second"]]
    batcher.close(5)
