"""Request bodies, read in a fixed order so that no work scales past the limits: the content type (415), the bytes
(read in full within their size and time limits by :class:`~ragtruth_spans.serving.limits.BodyReader` before this
runs), the JSON (the shared strict parser: huge integers, deep nesting and ``NaN`` are a 422, never a 500) with its
structural bounds (:mod:`~ragtruth_spans.serving.parse`: keys per object, values per body), then the item and
character limits on the raw JSON (413, by the caller), and only then the request models (422, the first
``max_errors`` problems and their count). Parsing and validation run off the event loop (a large body's parse in
another process). Also: what ``/v1/model`` may say about the server (no absolute paths)."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import PurePath
from typing import Annotated, Any

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import Field, TypeAdapter, ValidationError

from ragtruth_spans.serving.limits import validation_errors
from ragtruth_spans.serving.parse import BodyParser, parse_checked
from ragtruth_spans.serving.schemas import DetectItemIn, SelectRequest

logger = logging.getLogger(__name__)


class ServiceError(Exception):
    """An answer other than 200: ``status``, a message, optional headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


DETECT_BODY: TypeAdapter[Any] = TypeAdapter(DetectItemIn | Annotated[list[DetectItemIn], Field(min_length=1)])
SELECT_BODY: TypeAdapter[Any] = TypeAdapter(SelectRequest)


def _is_json(content_type: str) -> bool:
    """Whether a ``Content-Type`` says JSON: ``application/json`` or ``application/*+json``, with no charset or
    UTF-8's. A missing one is not: a browser sends a cross-site request without preflight only with no content
    type or a form's (``text/plain`` included), so none of them ever reaches a route.

    >>> _is_json("application/json; charset=UTF-8"), _is_json(""), _is_json("text/plain")
    (True, False, False)
    """
    media, *params = [part.strip().lower() for part in content_type.split(";")]
    charsets = [p.partition("=")[2].strip().strip('"') for p in params if p.startswith("charset")]
    json_type = media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
    return json_type and all(c in ("utf-8", "utf8") for c in charsets)


class InvalidBody(Exception):
    """A 422 for a body the request models refuse: the first ``detail`` entries (``{"field", "message"}``) and
    ``total``, the number of problems found."""

    def __init__(self, detail: list[dict[str, Any]], total: int) -> None:
        super().__init__(f"{total} problem(s)")
        self.detail, self.total = detail, total


async def body_bytes(request: Request) -> bytes:
    """The request's body: 415 unless the content type is JSON (:func:`_is_json`), 422 when it is empty."""
    content_type = request.headers.get("content-type", "")
    if not _is_json(content_type):
        media = "".join(c if c.isprintable() else "?" for c in content_type.strip()[:60])
        what = f"unsupported content type {media!r}" if media else "no content type"
        raise ServiceError(415, f"{what}: send a JSON body with 'Content-Type: application/json'")
    raw = await request.body()
    if not raw.strip():
        raise ServiceError(422, "invalid request: body: the body is empty (send a JSON object or list)")
    return raw


CHAT_MAX_KEYS = 1024
"""Keys of one object of a chat completion request (the gate's body) at most: more than a detection request's
(``logit_bias``, a tool's parameters), still refused by their count long before any walk over them is slow."""
CHAT_MAX_VALUES = 100_000
"""JSON values of a chat completion request at most (a long history of messages, content parts, tool schemas)."""


async def json_body(request: Request, parser: BodyParser, limit: int = CHAT_MAX_VALUES,
                    max_keys: int = CHAT_MAX_KEYS) -> Any:
    """The request's JSON for a route without request models (the gate's): :func:`body_bytes`, then parsed by
    ``parser`` with the structural bounds of every route (``limit`` values, ``max_keys`` keys per object:
    :func:`~ragtruth_spans.serving.parse.parse_checked`), in a worker thread, or in another process for a large
    body, never on the event loop; a refusal is a :class:`ServiceError` (422) naming the field."""
    outcome = await parser.parse(await body_bytes(request), limit, max_keys)
    if outcome[0] == "json":
        raise ServiceError(422, f"invalid request: body: {outcome[1]}")
    if outcome[0] == "invalid":
        raise ServiceError(422, f"invalid request: {outcome[1]}: {outcome[2]}")
    return outcome[1]


def raw_chars(obj: Any, keys: tuple[str, ...]) -> int:
    """Characters of the string values of ``keys`` in a raw JSON object (0 for anything else): the size check
    runs before the models.

    >>> raw_chars({"context": "abc", "response": 1}, ("context", "response"))
    3
    """
    if not isinstance(obj, dict):
        return 0
    return sum(len(obj[k]) for k in keys if isinstance(obj.get(k), str))


def validated(adapter: TypeAdapter[Any], raw: Any, max_errors: int = 10) -> Any:
    """``raw`` through the request models; their errors become :class:`InvalidBody` (a 422 naming the fields,
    never echoing the text): the first ``max_errors`` of them and their count.

    >>> validated(TypeAdapter(int), 3)
    3
    """
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        errors = [error | {"loc": ("body", *error.get("loc", ()))} for error in exc.errors(include_input=False,
                                                                                           include_url=False)]
        detail = validation_errors(errors, raw)
        raise InvalidBody(detail[:max_errors], len(detail)) from None


def _outcome(outcome: tuple[Any, ...]) -> Any:
    """The value of :func:`~ragtruth_spans.serving.parse.parse_checked`'s outcome, or its refusal (422)."""
    if outcome[0] == "json":
        raise RequestValidationError([{"loc": ("body",), "msg": outcome[1], "type": "json_invalid",
                                       "ctx": {"error": outcome[1].removeprefix("invalid JSON: ")}}], body=None)
    if outcome[0] == "invalid":
        raise InvalidBody([{"field": outcome[1], "message": outcome[2]}], 1)
    return outcome[1]


async def model_body(request: Request, adapter: TypeAdapter[Any], check: Callable[[Any], None], max_errors: int,
                     parser: BodyParser, limit: int) -> tuple[Any, Any]:
    """``(raw JSON, validated body)`` of a request: the bytes read on the event loop; then, in one worker thread,
    the JSON parsed with its structural bounds (``limit`` values, see
    :func:`~ragtruth_spans.serving.parse.parse_checked`; a large body's parse by ``parser`` in another process),
    ``check(raw)`` (the cost budget, 413) and the models: a heavy body never holds up other requests."""
    data = await body_bytes(request)
    parsed = await parser.parse(data, limit) if len(data) > parser.process_bytes else None

    def parse_check_validate() -> tuple[Any, Any]:
        raw = _outcome(parsed if parsed is not None else parse_checked(data, limit))
        check(raw)
        return raw, validated(adapter, raw, max_errors)

    return await run_in_threadpool(parse_check_validate)


TEXT_FIELDS = ("context", "response", "question", "candidates")
"""The fields whose characters count in the cost budget (a candidate given as a string is its response)."""


def request_schema(adapter: TypeAdapter[Any], max_items: int | None = None, max_chars: int | None = None,
                   budget: str = "") -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of a route that reads its body itself (``$defs`` inlined), with the limits
    JSON Schema can state: ``maxItems`` on every list, ``maxLength`` on every text of :data:`TEXT_FIELDS`; the
    limits on sums (characters per item and per request) are in ``budget``, the schema's description.

    Args:
        adapter: the body's models.
        max_items: items (candidates) per request at most.
        max_chars: characters per item at most.
        budget: a sentence on the limits no schema keyword states.

    Returns:
        ``{"requestBody": ...}`` for ``openapi_extra``.

    >>> body = request_schema(TypeAdapter(list[int]), max_items=3)["requestBody"]
    >>> body["content"]["application/json"]["schema"]["maxItems"]
    3
    """
    schema = adapter.json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any, field: str | None = None) -> Any:
        if isinstance(node, list):
            return [inline(v, field) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref", "")
        if ref.startswith("#/$defs/"):
            return inline(defs[ref.removeprefix("#/$defs/")], field)
        out = {k: ({name: inline(v, name) for name, v in node[k].items()} if k == "properties" else inline(v, field))
               for k, v in node.items()}
        if node.get("type") == "array" and max_items is not None:
            out["maxItems"] = max_items
        if node.get("type") == "string" and field in TEXT_FIELDS and max_chars is not None:
            out["maxLength"] = max_chars
        return out

    body = inline(schema) | ({"description": budget} if budget else {})
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": body}}}}


_PATH = re.compile(r"file://[^\s'\"<>|,;()\[\]{}]*|(?<![\w.~:/\\-])(?:~(?=/)|[A-Za-z]:(?=\\))?[/\\][^\s'\"<>|,;()\[\]{}]*")
"""An absolute path inside any text: ``/srv/x``, ``file:///srv/x``, ``~/x``, ``C:\\x`` (not ``http://host/x``, not
``a/b``)."""


def _last_component(match: re.Match[str]) -> str:
    path = match.group().removeprefix("file://")
    name = PurePath(path.replace("\\", "/")).name
    return name or "<path>"


def _scrub(text: str) -> str:
    return _PATH.sub(_last_component, text) if ("/" in text or "\\" in text) else text


def without_server_paths(obj: Any) -> Any:
    """``obj`` with every absolute path cut to its last component — in values, inside longer strings, in
    ``file://`` URIs and in dict **keys** (``run_info.data_sha256`` is keyed by training files): ``/v1/model``
    never tells a client where the server keeps its data, environment or checkpoints. Keys that become equal are
    told apart by a ``#2``, ``#3`` suffix."""
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            name = _scrub(key) if isinstance(key, str) else key
            unique, n = name, 2
            while unique in out:
                unique, n = f"{name}#{n}", n + 1
            out[unique] = without_server_paths(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [without_server_paths(v) for v in obj]
    if isinstance(obj, str):
        return _scrub(obj)
    return obj
