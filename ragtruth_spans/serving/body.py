"""Request bodies, read in a fixed order so that no work scales past the limits: the content type (415), the bytes
(bounded by :class:`~ragtruth_spans.serving.limits.BodySizeLimit` before this runs), the JSON (the shared strict
parser: huge integers, deep nesting and ``NaN`` are a 422, never a 500), then the item and character limits on the
raw JSON (413, by the caller), and only then the request models (422). Also: what ``/v1/model`` may say about the
server (no absolute paths)."""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import TypeAdapter, ValidationError

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import loads_json
from ragtruth_spans.serving.schemas import DetectItemIn, SelectRequest


class ServiceError(Exception):
    """An answer other than 200: ``status``, a message, optional headers."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


DETECT_BODY: TypeAdapter[Any] = TypeAdapter(DetectItemIn | list[DetectItemIn])
SELECT_BODY: TypeAdapter[Any] = TypeAdapter(SelectRequest)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return not media or media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def json_body(request: Request) -> Any:
    """The request's JSON: 415 unless the content type is JSON (or absent), 422 for JSON the parser refuses."""
    content_type = request.headers.get("content-type", "")
    if not _is_json(content_type):
        media = content_type.split(";")[0].strip()[:60]
        raise ServiceError(415, f"unsupported content type {media!r}: send a JSON body (application/json)")
    raw = await request.body()
    if not raw.strip():
        raise ServiceError(422, "invalid request: body: the body is empty (send a JSON object or list)")
    try:
        return loads_json(raw, allow_surrogates=True)  # the request models name the field (422)
    except InputError as exc:
        raise RequestValidationError([{"loc": ("body",), "msg": exc.message, "type": "json_invalid",
                                       "ctx": {"error": exc.message.removeprefix("invalid JSON: ")}}],
                                     body=None) from None


def raw_chars(obj: Any, keys: tuple[str, ...]) -> int:
    """Characters of the string values of ``keys`` in a raw JSON object (0 for anything else): the size check
    runs before the models."""
    if not isinstance(obj, dict):
        return 0
    return sum(len(obj[k]) for k in keys if isinstance(obj.get(k), str))


def validated(adapter: TypeAdapter[Any], raw: Any) -> Any:
    """``raw`` through the request models; their errors become the usual 422 (fields named, text not echoed)."""
    try:
        return adapter.validate_python(raw)
    except ValidationError as exc:
        errors = [error | {"loc": ("body", *error.get("loc", ()))} for error in exc.errors(include_input=False,
                                                                                           include_url=False)]
        raise RequestValidationError(errors, body=raw) from None


def request_schema(adapter: TypeAdapter[Any]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` of a route that reads its body itself (``$defs`` inlined)."""
    schema = adapter.json_schema()
    defs = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return inline(defs[ref.removeprefix("#/$defs/")])
            return {k: inline(v) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return {"requestBody": {"required": True, "content": {"application/json": {"schema": inline(schema)}}}}


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
