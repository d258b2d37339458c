"""The state behind the HTTP service's routes: :class:`Service` (the detector, its micro-batcher, the evidence
pools, the cost budget of a request), and what the routes shape from it (:func:`detection_out`).

Detections go through the batcher (503 when its queue is full); evidence runs after detection in pools of its own;
a request's cost is checked on its raw JSON before any work (413 naming the limit and its flag).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from typing import Any

from fastapi.concurrency import run_in_threadpool

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.lru import BoundedCache
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.serving.batcher import MicroBatcher, Overloaded, ShuttingDown, TooLarge
from ragtruth_spans.serving.body import ServiceError, raw_chars
from ragtruth_spans.serving.errors import internal_error, unavailable
from ragtruth_spans.serving.limits import ConnectionStats
from ragtruth_spans.serving.parse import BodyParser
from ragtruth_spans.serving.schemas import DetectionOut, DetectorRef, SelectRequest
from ragtruth_spans.serving.settings import ServeSettings

EVIDENCE_INDEXES = 256
"""Contexts whose evidence index the service keeps (shared by its evidence threads; the gate builds them ahead)."""


async def when_free(attempt: Callable[[], Any], wait: float) -> Any:
    """``attempt()``, tried again (backing off) while it raises :class:`Overloaded`, for at most ``wait`` seconds
    (0: once): a caller that may wait (the gate's checks) waits for room instead of being refused."""
    deadline, pause = time.monotonic() + wait, 0.005
    while True:
        try:
            return attempt()
        except Overloaded:
            if time.monotonic() + pause > deadline:
                raise
            await asyncio.sleep(pause)
            pause = min(2 * pause, 0.1)


class BatchedDetector(Detector):
    """The served detector as seen by code that calls ``detect_batch`` itself (``select_best``): its calls go
    through the micro-batcher (call it from a worker thread, never from the event loop)."""

    def __init__(self, inner: Detector, batcher: MicroBatcher) -> None:
        self.kind = inner.kind  # type: ignore[misc]
        self.load_options = inner.load_options
        self._inner, self._batcher = inner, batcher

    def detect_batch(self, items: Any) -> list[Detection]:
        return self._batcher.submit([DetectItem.of(item) for item in items]).result()

    def describe(self) -> dict[str, Any]:
        return self._inner.describe()

    def prepare_context(self, context: str, question: str | None = None, *, task: str | None = None) -> None:
        self._inner.prepare_context(context, question, task=task)  # the encoder's own work: not the batcher's


def detection_out(item_id: Any, response: str, detection: Detection) -> DetectionOut:
    """One detection as a route answers it: each span with its text (``response[start:end]``)."""
    spans = [{"text": response[s.start:s.end], **s.to_dict()} for s in detection.spans]
    return DetectionOut(id=item_id, spans=spans, score=detection.score, error=detection.error,
                        diagnostics=detection.diagnostics)


class Service:
    """The state behind the routes: detector, batcher, settings, the detector reference put in every answer."""

    def __init__(self, detector: Detector, settings: ServeSettings, run_info: dict[str, Any] | None) -> None:
        self.detector, self.settings, self.run_info = detector, settings, run_info
        described = detector.describe()
        self.ref = DetectorRef(kind=detector.kind, name=described.get("name"),
                               fingerprint=(run_info or {}).get("fingerprint"))
        self.in_flight = SimpleNamespace(count=0)  # detection requests being served (the InFlight middleware)
        self.connections = ConnectionStats()  # requests that ended before a route saw them (/health)
        self.parser = BodyParser()  # bodies parsed off the event loop (a large one in another process)
        self.context_cache = detector.context_cache()  # its size is the service's (ServeSettings.context_cache_bytes)
        if self.context_cache is not None:
            self.context_cache.resize(settings.context_cache_bytes)
        self.batcher = MicroBatcher(detector.detect_batch, max_batch=settings.max_batch,
                                    max_wait_ms=settings.max_wait_ms, max_queue=settings.max_queue,
                                    in_flight=lambda: self.in_flight.count)
        self._finders = threading.local()  # one finder per evidence thread (encoder mode: its encoder)...
        self.evidence_indexes = BoundedCache(EVIDENCE_INDEXES)  # ...all reading one cache of context indexes
        self.evidence_pools = {
            "heavy": (ThreadPoolExecutor(max_workers=settings.evidence_workers, thread_name_prefix="evidence"),
                      threading.BoundedSemaphore(settings.evidence_workers + settings.evidence_queue)),
            "light": (ThreadPoolExecutor(max_workers=1, thread_name_prefix="evidence-light"),
                      threading.BoundedSemaphore(1 + settings.evidence_queue))}

    def prepare_context(self, context: str, question: str | None, task: str) -> None:
        """What every check of an answer to ``context`` shares, done ahead (the gate calls it, in a worker
        thread, while the upstream answers): the detector's context encoding and the context's evidence index."""
        from ragtruth_spans.core.text import normalise
        from ragtruth_spans.evidence.finder import cached_index

        self.detector.prepare_context(context, question, task=task)
        cached_index(self.evidence_indexes, normalise(context), task)  # the same index in either evidence mode

    def _attach(self, items: list[DetectItem], detections: list[Detection]) -> list[Detection]:
        finder = getattr(self._finders, "finder", None)
        if finder is None:
            from ragtruth_spans.evidence import EvidenceFinder

            finder = self._finders.finder = EvidenceFinder(self.settings.evidence_mode,
                                                           indexes=self.evidence_indexes)
        return finder.attach_batch(items, detections)

    async def evidence(self, items: list[DetectItem], detections: list[Detection],
                       wanted: list[bool], wait: float = 0.0) -> list[Detection]:
        """``detections`` with evidence on the spans of the items that asked for it, in the evidence pool (503
        when ``evidence_queue`` evidence requests already wait, after waiting ``wait`` seconds for room)."""
        chosen = [i for i, want in enumerate(wanted) if want]
        if not chosen:
            return detections
        light = sum(len(items[i].context) for i in chosen) <= self.settings.light_evidence_chars
        pool, slots = self.evidence_pools["light" if light else "heavy"]

        def take_slot() -> None:
            if not slots.acquire(blocking=False):
                raise Overloaded("too many evidence requests are waiting")

        try:
            await when_free(take_slot, wait)
        except Overloaded:
            raise ServiceError(503, "server busy: too many evidence requests are waiting; retry later",
                               {"Retry-After": "2"}) from None
        try:
            explained = await asyncio.wrap_future(pool.submit(
                self._attach, [items[i] for i in chosen], [detections[i] for i in chosen]))
        except InputError as exc:
            raise ServiceError(422, f"invalid request: {exc}") from None
        except Exception as exc:
            raise internal_error(exc, "evidence") from None
        finally:
            slots.release()
        out = list(detections)
        for i, detection in zip(chosen, explained):
            out[i] = detection
        return out

    def check_size(self, n_items: int, chars: list[int], *, what: str = "item",
                   parts: str = "context + question + response", evidence_chars: list[int] | None = None) -> None:
        """The request's cost budget (413 naming the limit and its flag): ``chars`` holds each item's own size
        (``parts``); ``evidence_chars`` the context size of each item that asks for evidence."""
        s = self.settings
        if n_items > s.max_items:
            raise ServiceError(413, f"{n_items} {what}s in one request; the limit is {s.max_items} (--max-items)")
        for i, n in enumerate(chars):
            if n > s.max_chars:
                raise ServiceError(413, f"{what} {i} has {n} characters ({parts}); the limit is {s.max_chars} "
                                   "per item (--max-chars)")
        if sum(chars) > s.max_request_chars:
            raise ServiceError(413, f"the request has {sum(chars)} characters over its {len(chars)} {what}s; the "
                               f"limit is {s.max_request_chars} per request (--max-request-chars): send fewer "
                               f"{what}s per request")
        evidence_chars = evidence_chars or []
        if len(evidence_chars) > s.max_evidence_items:
            raise ServiceError(413, f"{len(evidence_chars)} items ask for evidence; the limit is "
                               f"{s.max_evidence_items} per request (--max-evidence-items)")
        if sum(evidence_chars) > s.max_evidence_chars:
            raise ServiceError(413, f"the items asking for evidence have {sum(evidence_chars)} characters of "
                               f"context; the limit is {s.max_evidence_chars} per request (--max-evidence-chars)")

    def check_detect(self, raw: Any) -> None:
        """The cost budget of a raw ``/v1/detect`` body (an empty list: 422)."""
        if isinstance(raw, list) and not raw:
            raise ServiceError(422, "invalid request: the list of items is empty")
        rows = raw if isinstance(raw, list) else [raw]
        self.check_size(len(rows), [raw_chars(row, ("context", "response", "question")) for row in rows],
                        evidence_chars=[raw_chars(row, ("context",)) for row in rows
                                        if isinstance(row, dict) and row.get("evidence") is True])

    def check_select(self, raw: Any) -> None:
        """The cost budget of a raw ``/v1/select`` body."""
        candidates = raw.get("candidates") if isinstance(raw, dict) else None
        if isinstance(candidates, list):
            shared = raw_chars(raw, ("context", "question"))
            own = [len(c) if isinstance(c, str) else raw_chars(c, ("response",)) for c in candidates]
            self.check_size(len(candidates), [shared + n for n in own], what="candidate",
                            parts="context + question + its response")

    async def detect(self, items: list[DetectItem], wait: float = 0.0) -> list[Detection]:
        """The detections of ``items`` through the batcher (503 when its queue has no room for them after waiting
        ``wait`` seconds)."""
        try:
            return await asyncio.wrap_future(await when_free(lambda: self.batcher.submit(items), wait))
        except TooLarge as exc:
            raise ServiceError(413, str(exc)) from None
        except (Overloaded, ShuttingDown) as exc:
            raise unavailable(exc) from None
        except Exception as exc:
            raise internal_error(exc, "detect_batch") from None

    async def select(self, body: SelectRequest) -> Any:
        """``select_best`` over the candidates, in a worker thread, its detections through the batcher."""
        from ragtruth_spans.selection.select import select_best

        candidates = [c.model_dump(exclude_none=True) for c in body.candidates]
        try:
            return await run_in_threadpool(
                select_best, candidates, strategy=body.strategy, seed=body.seed, tie_break=body.tie_break,
                detector=BatchedDetector(self.detector, self.batcher), context=body.context, task=body.task,
                question=body.question)
        except TooLarge as exc:
            raise ServiceError(413, str(exc)) from None
        except (Overloaded, ShuttingDown) as exc:
            raise unavailable(exc) from None
        except InputError as exc:
            raise ServiceError(422, f"invalid request: {exc}") from None
        except Exception as exc:
            raise internal_error(exc, "select") from None
