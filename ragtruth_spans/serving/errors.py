"""The service's error answers, one JSON shape (``{"error": message, ...}``): 422 with its problems capped, 503 with
``Retry-After``, 500 with an ``error_id`` (the trace only in the server log), and the app's exception handlers; a
client that left mid-request is a debug line and a count, never an error."""

from __future__ import annotations

import json
import logging
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ragtruth_spans.serving.batcher import Overloaded, ShuttingDown
from ragtruth_spans.serving.body import InvalidBody, ServiceError
from ragtruth_spans.serving.limits import validation_errors

logger = logging.getLogger(__name__)


def error_json(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **{k: v for k, v in extra.items() if k != "headers"}},
                        status_code=status, headers=extra.get("headers"))


OPENAI_ERROR_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                      429: "rate_limit_error"}
GATE_ROUTE = "/v1/chat/completions"
"""The gate's route (:mod:`~ragtruth_spans.serving.proxy`): its errors are in OpenAI's shape."""


def answer_error(request: Request, status: int, message: str, **extra: Any) -> JSONResponse:
    """:func:`error_json`, or on the gate's route OpenAI's ``{"error": {"message", "type", "code", "param"}}``
    (what OpenAI clients read; ``extra`` other than headers left out)."""
    if request.url.path != GATE_ROUTE:
        return error_json(status, message, **extra)
    kind = OPENAI_ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return JSONResponse({"error": {"message": message, "type": kind, "code": None, "param": None}},
                        status_code=status, headers=extra.get("headers"))


MAX_ERRORS_SHOWN = 5
"""Problems named in a 422's ``error`` line at most (``detail`` holds up to ``ServeSettings.max_errors``)."""


def invalid(detail: list[dict[str, Any]], total: int) -> JSONResponse:
    """422: the problems in ``detail`` (the first ones found), ``error_count`` of them in all."""
    summary = "; ".join(f"{d['field']}: {d['message']}" for d in detail[:MAX_ERRORS_SHOWN])
    more = total - min(len(detail), MAX_ERRORS_SHOWN)
    return error_json(422, f"invalid request: {summary}" + (f" (and {more} more)" if more > 0 else ""), detail=detail,
                  error_count=total)


def invalid_for(request: Request, detail: list[dict[str, Any]], total: int) -> JSONResponse:
    """:func:`invalid`, in OpenAI's shape on the gate's route (its message alone)."""
    answer = invalid(detail, total)
    if request.url.path != GATE_ROUTE:
        return answer
    return answer_error(request, 422, json.loads(answer.body)["error"])


def unavailable(exc: Overloaded | ShuttingDown) -> ServiceError:
    """503: the queue is full (retry in a second) or the server is shutting down."""
    if isinstance(exc, Overloaded):
        return ServiceError(503, f"server busy: {exc}; retry later", {"Retry-After": "1"})
    return ServiceError(503, str(exc), {"Retry-After": "5"})


def internal_error(exc: BaseException, where: str) -> ServiceError:
    error_id = uuid.uuid4().hex[:12]
    logger.error("internal error %s in %s", error_id, where, exc_info=exc)
    return ServiceError(500, f"internal error (error_id {error_id}); the server log has the details")


def install_handlers(app: FastAPI) -> None:
    """The exception handlers that give every error of ``app`` the service's JSON shape."""
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return answer_error(request, exc.status, exc.message, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid_json(request: Request, exc: RequestValidationError) -> JSONResponse:
        detail = validation_errors(exc.errors()[:MAX_ERRORS_SHOWN], exc.body)
        return invalid_for(request, detail, len(detail))

    @app.exception_handler(InvalidBody)
    async def invalid_body(request: Request, exc: InvalidBody) -> JSONResponse:
        return invalid_for(request, exc.detail, exc.total)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return answer_error(request, exc.status_code, str(exc.detail), headers=getattr(exc, "headers", None))

    @app.exception_handler(ClientDisconnect)
    async def client_left(request: Request, _: ClientDisconnect) -> Response:
        request.app.state.service.connections.client_disconnects += 1
        logger.debug("client disconnected (%s %s)", request.method, request.url.path)
        return Response(status_code=499)  # nobody reads it: the connection is gone

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        error = internal_error(exc, f"{request.method} {request.url.path}")
        return answer_error(request, 500, error.message)
