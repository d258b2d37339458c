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

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse

from ragtruth_spans import __version__
from ragtruth_spans.detectors.base import DetectItem, Detector, operating_point
from ragtruth_spans.serving.body import (
    DETECT_BODY,
    SELECT_BODY,
    model_body,
    request_schema,
    without_server_paths,
)
from ragtruth_spans.serving.errors import install_handlers
from ragtruth_spans.serving.limits import (
    BearerAuth,
    BodyReader,
    HeadSizeLimit,
    InFlight,
)
from ragtruth_spans.serving.origins import SiteGuard
from ragtruth_spans.serving.parse import max_values
from ragtruth_spans.serving.schemas import (
    DetectMany,
    DetectOne,
    ErrorOut,
    HealthOut,
    SelectOut,
)
from ragtruth_spans.serving.service import Service, detection_out
from ragtruth_spans.serving.settings import ServeSettings

logger = logging.getLogger(__name__)

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
