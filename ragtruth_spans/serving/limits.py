"""The checks made before a request reaches a route — bearer token (401) and body size (413), as ASGI
middlewares — and readable validation errors (422)."""

from __future__ import annotations

import hmac
import json
from collections.abc import Sequence
from typing import Any

_UNION_TAGS = ("DetectItemIn", "list[DetectItemIn]")
"""Branch names pydantic puts in the location of errors in a one-item-or-a-list body."""


async def _send_json(send: Any, status: int, payload: dict[str, Any], headers: Sequence[tuple[bytes, bytes]] = ()
                     ) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), *headers]})
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


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
                await _send_json(send, 400, {"error": f"{len(given)} Authorization headers; send exactly one"})
                return
            value = given[0] if given else b""
            scheme, _, token = value.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self.key):
                await _send_json(send, 401, {"error": "missing or wrong bearer token (send 'Authorization: "
                                                      "Bearer <key>')"}, [(b"www-authenticate", b"Bearer")])
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


class BodySizeLimit:
    """Refuse a request body over ``max_bytes`` with 413 before it is parsed: by its ``Content-Length``, or, for a
    body sent without one (chunked), by counting while reading it."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def _reject(self, send: Any, size: str) -> None:
        await _send_json(send, 413, {"error": f"request body of {size} bytes is over the limit of {self.max_bytes} "
                                              "bytes"}, [(b"connection", b"close")])

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > self.max_bytes:
                await self._reject(send, length.decode())
                return
            await self.app(scope, receive, send)
            return
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                await self._reject(send, f"more than {size}")
                return
            if not message.get("more_body"):
                break
        replayed = False

        async def replay() -> dict:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}

        await self.app(scope, replay, send)


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
