"""A micro-batcher: concurrent requests gathered into one ``detect_batch`` call.

Requests put their items on one bounded queue; a single worker thread takes up to ``max_batch`` items at a time —
as soon as that many are waiting, or when the oldest waiting item has waited ``max_wait_ms``, or at once when no
other request can join (``arriving``, when given, counts the requests on their way to the queue: the HTTP layer
knows them; with none arriving, waiting would only add latency) — and runs them through the detector in one
call. Each request gets its own results back, in its own order, through a
:class:`concurrent.futures.Future` (awaitable with :func:`asyncio.wrap_future`). The detector is only ever called
from the worker thread, one batch at a time.

- Back-pressure: :meth:`MicroBatcher.submit` raises :class:`Overloaded` when the queue cannot take the request's
  items (the HTTP layer answers 503).
- Isolation: when a batch's ``detect_batch`` raises (or returns the wrong number of results), its items are run
  again one by one, so only the request whose own item fails gets the error (its remaining items are dropped
  from the queue); every other request in that batch gets its detections. One bad request never fails another.
- A request with more items than the queue can ever hold raises :class:`TooLarge` (not :class:`Overloaded`:
  retrying would never help).
- :meth:`MicroBatcher.close` stops taking requests (:class:`ShuttingDown`), lets the worker finish every item
  already queued, and joins it: in-flight requests complete.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, InvalidStateError
from contextlib import suppress
from dataclasses import asdict, dataclass
from typing import Any

from ragtruth_spans.detectors.base import Detection, DetectItem


class Overloaded(RuntimeError):
    """The queue is full: the request was not taken (retry later)."""


class ShuttingDown(RuntimeError):
    """The batcher is closing and takes no new request."""


class TooLarge(ValueError):
    """The request has more items than the queue can ever hold: retrying will not help."""


@dataclass
class BatcherStats:
    """Running totals: requests taken and rejected, items detected, batches run, the largest batch, and time
    spent in ``detect_batch`` (total and the longest call), in seconds."""

    requests: int = 0
    rejected: int = 0
    items: int = 0
    failed_items: int = 0
    batches: int = 0
    isolated_batches: int = 0
    largest_batch: int = 0
    busy_seconds: float = 0.0
    longest_batch_seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        mean = self.items / self.batches if self.batches else 0.0
        return asdict(self) | {"mean_batch_size": round(mean, 3)}


class _Request:
    """One request's items, the results gathered so far and its future."""

    def __init__(self, items: Sequence[DetectItem]) -> None:
        self.items = list(items)
        self.results: list[Detection | None] = [None] * len(self.items)
        self.remaining = len(self.items)
        self.future: Future[list[Detection]] = Future()

    def deliver(self, index: int, detection: Detection) -> None:
        self.results[index] = detection
        self.remaining -= 1
        if self.remaining == 0:
            with suppress(InvalidStateError):  # cancelled by its caller meanwhile
                self.future.set_result(list(self.results))  # type: ignore[arg-type]

    def fail(self, exc: BaseException) -> None:
        with suppress(InvalidStateError):
            self.future.set_exception(exc)


class MicroBatcher:
    """Gathers items of concurrent requests into batches for ``detect_batch`` (see the module docstring)."""

    def __init__(self, detect_batch: Callable[[list[DetectItem]], list[Detection]], *, max_batch: int = 32,
                 max_wait_ms: float = 10.0, max_queue: int = 1024,
                 in_flight: Callable[[], int] | None = None) -> None:
        """``in_flight``: the number of requests in flight at the caller's level (e.g. HTTP requests being
        served); those not yet submitted here are "arriving". None: always wait up to ``max_wait_ms``."""
        if max_batch < 1 or max_queue < 1 or max_wait_ms < 0:
            raise ValueError("max_batch and max_queue must be >= 1 and max_wait_ms >= 0")
        self.max_batch, self.max_wait, self.max_queue = max_batch, max_wait_ms / 1000.0, max_queue
        self._detect_batch = detect_batch
        self._queue: deque[tuple[_Request, int, float]] = deque()
        self._cond = threading.Condition()
        self._closing = False
        self._open: set[_Request] = set()  # submitted, not yet answered
        self._in_flight = in_flight
        self.stats = BatcherStats()
        self._thread = threading.Thread(target=self._run, name="ragtruth-spans-batcher", daemon=True)

    @property
    def pending(self) -> int:
        """Items waiting in the queue (not counting the batch being detected)."""
        return len(self._queue)

    @property
    def closing(self) -> bool:
        return self._closing

    def start(self) -> MicroBatcher:
        self._thread.start()
        return self

    def submit(self, items: Sequence[DetectItem]) -> Future[list[Detection]]:
        """Queue a request's items; the future gives their detections in order. Raises :class:`Overloaded` when
        the queue cannot take them all, :class:`ShuttingDown` after :meth:`close`."""
        request = _Request(items)
        with self._cond:
            if self._closing:
                raise ShuttingDown("the server is shutting down")
            if len(request.items) > self.max_queue:
                self.stats.rejected += 1
                raise TooLarge(f"{len(request.items)} items in one request; the queue holds at most {self.max_queue}")
            if len(self._queue) + len(request.items) > self.max_queue:
                self.stats.rejected += 1
                raise Overloaded(f"the queue holds {len(self._queue)} items and takes at most {self.max_queue}")
            if not request.items:
                request.future.set_result([])
                return request.future
            now = time.monotonic()
            self._queue.extend((request, i, now) for i in range(len(request.items)))
            self._open.add(request)
            self.stats.requests += 1
            self._cond.notify_all()
        return request.future

    def close(self, timeout: float | None = None) -> None:
        """Take no new request, finish the queued items, stop the worker (wait at most ``timeout`` seconds)."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _none_arriving(self) -> bool:
        """Whether every request in flight at the caller's level is already here (so none can join a batch)."""
        self._open = {r for r in self._open if not r.future.done()}
        return self._in_flight is not None and self._in_flight() <= len(self._open)

    def _take_batch(self) -> list[tuple[_Request, int, float]] | None:
        with self._cond:
            while not self._queue:
                if self._closing:
                    return None
                self._cond.wait()
            while len(self._queue) < self.max_batch and not self._closing and not self._none_arriving():
                left = self._queue[0][2] + self.max_wait - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            batch = []
            while self._queue and len(batch) < self.max_batch:
                entry = self._queue.popleft()
                if not entry[0].future.done():  # skip items of cancelled or failed requests
                    batch.append(entry)
            return batch

    def _run(self) -> None:
        while (batch := self._take_batch()) is not None:
            if batch:
                self._process(batch)

    def _detect(self, items: list[DetectItem]) -> list[Detection]:
        detections = self._detect_batch(items)
        if len(detections) != len(items):
            raise RuntimeError(f"the detector returned {len(detections)} results for {len(items)} items")
        return detections

    def _process(self, batch: list[tuple[_Request, int, float]]) -> None:
        started = time.perf_counter()
        try:
            detections = self._detect([request.items[i] for request, i, _ in batch])
        except Exception as exc:
            if len(batch) == 1:
                batch[0][0].fail(exc)
                self.stats.failed_items += 1
            else:
                self.stats.isolated_batches += 1
                self._one_by_one(batch)
            return
        finally:
            elapsed = time.perf_counter() - started
            self.stats.batches += 1
            self.stats.busy_seconds += elapsed
            self.stats.longest_batch_seconds = max(self.stats.longest_batch_seconds, elapsed)
            self.stats.largest_batch = max(self.stats.largest_batch, len(batch))
        self.stats.items += len(batch)
        for (request, i, _), detection in zip(batch, detections):
            request.deliver(i, detection)

    def _one_by_one(self, batch: list[tuple[_Request, int, float]]) -> None:
        """A failed batch again, item by item: only the requests whose own item fails are failed."""
        for request, i, _ in batch:
            if request.future.done():  # failed by an earlier item of its own (or cancelled)
                continue
            try:
                [detection] = self._detect([request.items[i]])
            except Exception as exc:
                request.fail(exc)
                self.stats.failed_items += 1
                continue
            self.stats.items += 1
            request.deliver(i, detection)
