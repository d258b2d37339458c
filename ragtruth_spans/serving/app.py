"""The HTTP service around one loaded detector (FastAPI): ``create_app(detector, ...)``.

Endpoints: ``POST /v1/detect`` (one item or a list), ``POST /v1/select`` (best-of-N selection),
``GET /v1/model`` (the detector and its run, without server paths), ``GET /health``, ``GET /openapi.json``; the
interactive docs (``/docs``, ``/redoc``, whose pages load scripts from a public CDN) only with ``docs=True``;
``GET /``, a self-contained page to try the detector (:mod:`~ragtruth_spans.serving.page`), only with ``ui=True``.

- Every detection goes through one :class:`~ragtruth_spans.serving.batcher.MicroBatcher`: concurrent requests
  share ``detect_batch`` calls; a full queue answers 503 (with ``Retry-After``). The batcher knows how many
  detection requests are in flight, so it waits ``max_wait_ms`` only when another request may still join.
  A batch that fails is retried item by item, so one bad request never fails another.
- Bodies are bounded before they are parsed (``max_body_bytes``, as the body arrives), and the item and character
  limits are checked on the parsed JSON before the request models run, so no work scales past the limits.
- Who and where from (:mod:`~ragtruth_spans.serving.origins`, before any route): a request for a host the server
  does not answer for (``ServeSettings.host_names``) 421, another site's page (``Origin``,
  ``Sec-Fetch-Site``) 403 on every POST route, two ``Host`` or ``Authorization`` headers 400.
- Errors: 415 for a body whose content type is not JSON (none included), 422 for a malformed body (one message
  per problem, naming the field, never echoing the client's text), 413 for a body, an item or a list beyond the
  limits, 401 without the bearer token (when the server has one), 500 with an ``error_id`` and no stack trace
  when the detector fails on the request's own item (the trace is logged server-side with the same id).
- ``"evidence": true`` on an item adds each span's evidence (docs/EVIDENCE.md), computed after detection, outside
  the batcher, in the service's own evidence pools, never in the shared thread pool, so detection, ``/v1/select``
  and ``/health`` never wait on evidence: a request whose evidence contexts total at most ``light_evidence_chars``
  characters goes to a pool of its own (one thread), heavier ones to ``evidence_workers`` threads, so a small
  evidence request never queues behind a heavy one; each pool lets at most ``evidence_queue`` requests wait
  (beyond, 503) (mode: ``ServeSettings.evidence_mode``).
- A cost budget per request, checked on the raw JSON before any work (413 naming the limit and its flag):
  ``max_items`` items, ``max_chars`` characters per item, ``max_request_chars`` characters over all items,
  ``max_evidence_items`` items asking for evidence and ``max_evidence_chars`` characters of their contexts.
- Shutdown (the lifespan's end, after uvicorn has stopped taking connections and waited for the requests in
  flight) closes the batcher, which finishes every queued item first.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from ragtruth_spans import __version__
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.lru import BoundedCache
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector, operating_point
from ragtruth_spans.serving.batcher import MicroBatcher, Overloaded, ShuttingDown, TooLarge
from ragtruth_spans.serving.body import (
    DETECT_BODY,
    SELECT_BODY,
    ServiceError,
    model_body,
    raw_chars,
    request_schema,
    without_server_paths,
)
from ragtruth_spans.serving.errors import install_handlers, internal_error, unavailable
from ragtruth_spans.serving.limits import (
    BearerAuth,
    BodyReader,
    ConnectionStats,
    HeadSizeLimit,
    InFlight,
)
from ragtruth_spans.serving.origins import SiteGuard
from ragtruth_spans.serving.parse import BodyParser, max_values
from ragtruth_spans.serving.schemas import (
    DetectionOut,
    DetectMany,
    DetectOne,
    DetectorRef,
    ErrorOut,
    HealthOut,
    SelectOut,
    SelectRequest,
)
from ragtruth_spans.serving.settings import ServeSettings

logger = logging.getLogger(__name__)

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


def create_app(detector: Detector, *, settings: ServeSettings | None = None,
               run_info: dict[str, Any] | None = None) -> FastAPI:
    """The FastAPI application serving ``detector`` (see the module docstring). ``run_info``: the run's
    ``run_info.json`` (for ``/v1/model`` and the fingerprint in every answer), None for a named detector."""
    service = Service(detector, settings or ServeSettings(), run_info)
    gates: list[Any] = []  # the gate's client to its upstream (ServeSettings.upstream), closed at the end

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        service.batcher.start()
        gc.freeze()  # start-up's objects (modules, the detector) left out of every later collection: a full one
        # over them held the event loop 0.11-0.23 s (/health) on 2 shared cores
        logger.info("serving %s (max batch %d, max wait %g ms, queue %d)", service.ref.model_dump(exclude_none=True),
                    service.settings.max_batch, service.settings.max_wait_ms, service.settings.max_queue)
        yield
        for gate in gates:
            await gate.aclose()
        logger.info("shutting down: finishing %d queued item(s)", service.batcher.pending)
        await run_in_threadpool(service.batcher.close)
        await run_in_threadpool(service.parser.close)
        for pool, _ in service.evidence_pools.values():
            await run_in_threadpool(pool.shutdown, True)

    docs = service.settings.docs
    app = FastAPI(title="ragtruth-spans", version=__version__, lifespan=lifespan,
                  docs_url="/docs" if docs else None, redoc_url="/redoc" if docs else None,
                  description="Hallucinated character spans in RAG answers. Offsets are characters (Unicode code "
                              "points) of the response, half-open [start, end).")
    app.state.service = service
    app.add_middleware(InFlight, counter=service.in_flight)  # innermost: counts what passed the checks below
    app.add_middleware(BodyReader, max_bytes=service.settings.max_body_bytes, stats=service.connections,
                       timeout=service.settings.body_timeout, read_timeout=service.settings.body_read_timeout)
    if service.settings.api_key is not None:
        app.add_middleware(BearerAuth, api_key=service.settings.api_key)
    app.add_middleware(SiteGuard, hosts=service.settings.host_names())  # before the key and the body
    app.add_middleware(HeadSizeLimit, max_bytes=service.settings.max_header_bytes,  # added last: runs first
                       stats=service.connections)
    install_handlers(app)
    _add_routes(app, service)
    if service.settings.upstream is not None:
        gates.append(_add_gate(app, service))
    return app


def _add_gate(app: FastAPI, service: Service) -> Any:
    """``POST /v1/chat/completions`` forwarding to ``settings.upstream`` (:mod:`~ragtruth_spans.serving.proxy`)."""
    from ragtruth_spans.serving.proxy import Upstream, add_gate_route

    s = service.settings
    upstream = Upstream(url=s.upstream or "", timeout=s.upstream_timeout, stream_timeout=s.upstream_stream_timeout,
                        require_context=s.require_context,
                        block_above=s.block_above, block_mode=s.block_mode, max_response_bytes=s.max_body_bytes,
                        api_key=s.upstream_api_key, connections=s.max_connections,
                        prepare_context=not s.encode_after_answer, stream_upstream=s.stream_upstream)
    return add_gate_route(app, service, upstream, detection_out)


def _add_page(app: FastAPI, service: Service) -> None:
    """``GET /``: the page to try the detector, rendered once; it tells no more than ``/health`` does."""
    from ragtruth_spans.serving.page import render_page

    page = render_page(service.ref.model_dump(), auth=service.settings.api_key is not None,
                       evidence=service.settings.max_evidence_items > 0, version=__version__)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def try_page() -> HTMLResponse:
        return HTMLResponse(page.html, headers=page.headers())


def _add_routes(app: FastAPI, service: Service) -> None:
    errors = _error_responses(service, body=False)
    if service.settings.ui:
        _add_page(app, service)

    @app.get("/health", response_model=HealthOut,
             responses={code: {"model": ErrorOut} for code in (400, 421, 431, 500)})
    async def health() -> dict[str, Any]:
        """Liveness and load: queue length and batching totals (no auth)."""
        return {"status": "shutting down" if service.batcher.closing else "ok", "detector": service.ref.model_dump(),
                "pending_items": service.batcher.pending, "stats": service.batcher.stats.to_dict(),
                "connections": service.connections.to_dict(),
                "context_cache": None if service.context_cache is None else service.context_cache.stats.to_dict()}

    @app.get("/v1/model", responses=errors)
    async def model() -> dict[str, Any]:
        """The detector's description, its operating point (decision settings and load options), its run
        metadata (run_info.json, with the fingerprint) and the limits; server paths are reduced to their last
        component."""
        return {"detector": without_server_paths(service.detector.describe()),
                "operating_point": without_server_paths(operating_point(service.detector)),
                "fingerprint": service.ref.fingerprint,
                "run_info": without_server_paths(service.run_info), "serving": service.settings.public(),
                "version": __version__}

    s = service.settings

    @app.post("/v1/detect", response_model=DetectOne | DetectMany, responses=_error_responses(service),
              openapi_extra=request_schema(DETECT_BODY, s.max_items, s.max_chars, budget=(
                  f"Also at most {s.max_chars} characters per item (context + question + response), "
                  f"{s.max_request_chars} over all items, {s.max_evidence_items} items asking for evidence and "
                  f"{s.max_evidence_chars} characters of their contexts (413 beyond).")))
    async def detect(request: Request) -> DetectOne | DetectMany:
        """Hallucinated spans of one item (answer: one detection) or a list of items (answer: ``results``)."""
        _, body = await model_body(request, DETECT_BODY, service.check_detect, service.settings.max_errors,
                                   service.parser, max_values(service.settings.max_items))
        items = body if isinstance(body, list) else [body]
        detect_items = [DetectItem(context=i.context, response=i.response, task=i.task, question=i.question)
                        for i in items]
        detections = await service.detect(detect_items)
        detections = await service.evidence(detect_items, detections, [i.evidence for i in items])
        outs = [detection_out(i.id, i.response, d) for i, d in zip(items, detections)]
        if isinstance(body, list):
            return DetectMany(results=outs, detector=service.ref)
        return DetectOne(**outs[0].model_dump(), detector=service.ref)

    _add_select_route(app, service)


def _error_responses(service: Service, body: bool = True) -> dict[int | str, Any]:
    """The error answers a ``/v1/*`` route may give (OpenAPI ``responses``): 400 (a header sent twice), 421 (a
    host the server does not answer for), 431 and 500 for all, 401 with a bearer token, 403 (another site's page),
    408, 413, 415, 422 and 503 for a route that reads a body."""
    codes = [400, 421, 431, 500] + ([401] if service.settings.api_key is not None else [])
    codes += [403, 408, 413, 415, 422, 503] if body else []
    return {code: {"model": ErrorOut} for code in sorted(codes)}


def _add_select_route(app: FastAPI, service: Service) -> None:
    """``POST /v1/select`` (best-of-N selection)."""
    s = service.settings
    budget = (f"Also at most {s.max_chars} characters per candidate (context + question + its response) and "
              f"{s.max_request_chars} over all candidates (413 beyond). Candidate ids must differ; a candidate "
              "without an id is known by its index (422 otherwise).")

    @app.post("/v1/select", response_model=SelectOut, responses=_error_responses(service),
              openapi_extra=request_schema(SELECT_BODY, s.max_items, s.max_chars, budget=budget))
    async def select(request: Request) -> dict[str, Any]:
        """Best-of-N selection: the index of the least hallucinated candidate and each candidate's spans;
        ``no_judgement: true`` and ``index: null`` when the detector could judge no candidate."""
        _, body = await model_body(request, SELECT_BODY, service.check_select, service.settings.max_errors,
                                   service.parser, max_values(service.settings.max_items))
        answer = (await service.select(body)).to_dict()
        given = [c.id for c in body.candidates]  # echoed as given: an integer id stays an integer
        for i, candidate in enumerate(answer.get("candidates") or []):
            if i < len(given) and given[i] is not None:
                candidate["id"] = given[i]
        if answer.get("index") is not None and given[answer["index"]] is not None:
            answer["id"] = given[answer["index"]]
        return answer | {"detector": service.ref.model_dump()}
