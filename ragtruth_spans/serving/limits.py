"""The checks made before a request reaches a route — bearer token (401), the body read in full within its size
(413) and time (408) limits — as ASGI middlewares, and readable validation errors (422)."""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

logger = logging.getLogger(__name__)

_UNION_TAGS = ("DetectItemIn", "list[DetectItemIn]")
"""Branch names pydantic puts in the location of errors in a one-item-or-a-list body."""


GATE_PATH = "/v1/chat/completions"
"""The gate's route (:mod:`~ragtruth_spans.serving.proxy`): the checks below answer it in OpenAI's error shape."""


async def _send_json(send: Any, status: int, payload: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
                     ) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *headers]})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


async def send_error(send: Any, scope: dict, status: int, message: str,
                     headers: Sequence[tuple[bytes, bytes]] = ()) -> None:
    """A one-line JSON error from a middleware: ``{"error": message}``, or OpenAI's
    ``{"error": {"message", "type", ...}}`` on :data:`GATE_PATH` (what OpenAI clients read)."""
    payload: dict[str, Any] = {"error": message}
    if scope.get("path") == GATE_PATH:
        payload = {"error": {"message": message, "type": "invalid_request_error", "code": None, "param": None}}
    await _send_json(send, status, payload, headers)


class BearerAuth:
    """Require ``Authorization: Bearer <api_key>`` on every path under ``prefix`` (401 otherwise, before the body
    is read); other paths (``/health``, the docs) stay open. A request with more than one ``Authorization``
    header is refused (400): which one counts would depend on the proxy in front."""

    def __init__(self, app: Any, api_key: str, prefix: str = "/v1/") -> None:
        self.app, self.key, self.prefix = app, api_key.encode(), prefix

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path", "").startswith(self.prefix):
            given = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
            if len(given) > 1:
                await send_error(send, scope, 400, f"{len(given)} Authorization headers; send exactly one")
                return
            value = given[0] if given else b""
            scheme, _, token = value.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self.key):
                await send_error(send, scope, 401, "missing or wrong bearer token (send 'Authorization: Bearer "
                                 "<key>')", [(b"www-authenticate", b"Bearer")])
                return
        await self.app(scope, receive, send)


class InFlight:
    """Counts the requests in flight on the detection routes into ``counter.count`` (read by the micro-batcher's
    worker to know whether more requests may join a batch; a heuristic, never needed for correctness)."""

    PATHS = ("/v1/detect", "/v1/select")

    def __init__(self, app: Any, counter: Any) -> None:
        self.app, self.counter = app, counter

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") not in self.PATHS:
            await self.app(scope, receive, send)
            return
        self.counter.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.counter.count -= 1


@dataclass
class ConnectionStats:
    """Requests that ended before the app saw them, counted for ``/health`` (``connections``): the client went
    away mid-body, a body or a request's headers too slow (408), a body too large (413), a request refused over the
    connection cap (503) or with a malformed or oversized head (400).

    >>> ConnectionStats(client_disconnects=2).to_dict()["client_disconnects"]
    2
    """

    client_disconnects: int = 0
    body_timeouts: int = 0
    header_timeouts: int = 0
    too_large: int = 0
    refused_connections: int = 0
    bad_requests: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


class HeadSizeLimit:
    """Refuse a request whose head (target and headers) is over ``max_bytes`` with 431 and close the connection:
    h11 bounds only a head still arriving (``--max-header-kb`` as its incomplete-event size), not one that comes
    whole in one read, so the bound is checked again here, on every request.

    >>> HeadSizeLimit(None, 16).max_bytes
    16
    """

    def __init__(self, app: Any, max_bytes: int, stats: ConnectionStats | None = None) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.stats = stats if stats is not None else ConnectionStats()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"") + sum(
                len(k) + len(v) + 4 for k, v in scope.get("headers") or [])
            if size > self.max_bytes:
                self.stats.bad_requests += 1
                await send_error(send, scope, 431, f"request headers of {size} bytes are over the limit of "
                                 f"{self.max_bytes} bytes (--max-header-kb)", [(b"connection", b"close")])
                return
        await self.app(scope, receive, send)


class _Ended(Exception):
    """The body could not be read: ``status`` (413, 408) and a message, or ``status`` 0 when the client left."""

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message)
        self.status, self.message = status, message


class BodyReader:
    """Read a request body in full before the app runs, bounded in size and time: over ``max_bytes`` (by its
    ``Content-Length``, or counted as it arrives) 413; no byte for ``read_timeout`` seconds, or the whole body not
    there after ``timeout`` seconds, 408; both close the connection. A client that leaves mid-body ends the request
    with one debug line, counted in ``stats`` (never an error). The app gets the body as one message."""

    METHODS = ("POST", "PUT", "PATCH")

    def __init__(self, app: Any, max_bytes: int, timeout: float = 60.0, read_timeout: float = 10.0,
                 stats: ConnectionStats | None = None) -> None:
        self.app, self.max_bytes, self.timeout, self.read_timeout = app, max_bytes, timeout, read_timeout
        self.stats = stats if stats is not None else ConnectionStats()

    async def _read(self, receive: Any, declared: int | None) -> bytes:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        chunks, size = [], 0
        while True:
            wait = min(self.read_timeout, deadline - loop.time())
            try:
                message = await asyncio.wait_for(receive(), max(wait, 0.0))
            except TimeoutError:
                whole = wait < self.read_timeout
                raise _Ended(408, f"the request body was not complete after {self.timeout:g} s (--body-timeout)"
                             if whole else f"no byte of the request body for {self.read_timeout:g} s "
                             "(--body-read-timeout)") from None
            if message["type"] != "http.request":
                raise _Ended(0)
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                raise _Ended(413, f"request body of {declared or f'more than {size}'} bytes is over the limit "
                             f"of {self.max_bytes} bytes")
            if not message.get("more_body"):
                return b"".join(chunks)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in self.METHODS:
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        declared = int(length) if length is not None and length.isdigit() else None
        try:
            if declared is not None and declared > self.max_bytes:
                raise _Ended(413, f"request body of {declared} bytes is over the limit of {self.max_bytes} bytes")
            body = await self._read(receive, declared)
        except _Ended as ended:
            await self._refuse(scope, send, ended)
            return
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _refuse(self, scope: dict, send: Any, ended: _Ended) -> None:
        where = f"{scope.get('method')} {scope.get('path')}"
        if ended.status == 0:
            self.stats.client_disconnects += 1
            logger.debug("client disconnected before its request body was complete (%s)", where)
            return
        if ended.status == 408:
            self.stats.body_timeouts += 1
        else:
            self.stats.too_large += 1
        logger.debug("%d for %s: %s", ended.status, where, ended.message)
        await send_error(send, scope, ended.status, ended.message, [(b"connection", b"close")])


MAX_NAME_CHARS = 40
"""A field name longer than this (an unknown key is the client's text) is cut in error messages."""


def _name(part: Any) -> str:
    """A key of the client's body, bounded and printable: never echoed whole (a 20,000-character key)."""
    text = "".join(c if c.isprintable() else "?" for c in str(part)[:MAX_NAME_CHARS])
    return text + ("…" if len(str(part)) > MAX_NAME_CHARS else "")


def _field(loc: Sequence[Any], body: Any) -> str:
    parts = list(loc[1:]) if loc and loc[0] == "body" else list(loc)
    if parts and parts[0] in _UNION_TAGS:
        parts = parts[1:]
    path = ""
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else (f".{_name(part)}" if path else _name(part))
    return path or "body"


def validation_errors(errors: Sequence[dict[str, Any]], body: Any) -> list[dict[str, Any]]:
    """``[{"field", "message"}]`` from pydantic's errors, without echoing the input. For a body that may be one
    item or a list, only the errors of the shape that was sent are kept."""
    sent = "list[DetectItemIn]" if isinstance(body, list) else "DetectItemIn"
    out, seen = [], set()
    for error in errors:
        loc = tuple(error.get("loc", ()))
        if len(loc) > 1 and loc[0] == "body" and loc[1] in _UNION_TAGS and loc[1] != sent:
            continue
        entry = (_field(loc, body), error.get("msg", "invalid"))
        if error.get("type") == "json_invalid":
            entry = ("body", f"invalid JSON: {error.get('ctx', {}).get('error', error.get('msg'))}")
        if entry not in seen:
            seen.add(entry)
            out.append({"field": entry[0], "message": entry[1]})
    return out or [{"field": "body", "message": "invalid request body"}]
