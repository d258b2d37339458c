"""Request bodies parsed with structural bounds, and parsed away from the service's own interpreter when large.

:func:`parse_checked` parses a body with the project's strict JSON parser and refuses, by counting alone, an object
with more keys than any request object has (:data:`MAX_OBJECT_KEYS`) or a body holding more JSON values than a
request within the item limit can hold; it returns a small tagged tuple, never an exception, so that it can run in
another process. :class:`BodyParser` runs it in a worker thread for a small body and in a worker process
(:class:`~ragtruth_spans.serving.worker.WorkerProcess`) for a body over ``process_bytes``: Python's JSON parser
holds the interpreter lock for a whole parse (about 0.1–0.2 s per MB of a body of many keys on 2 shared cores),
which in a thread would still hold up the event loop, ``/health`` included; in another process it holds up nothing.
This module imports only the parser, so the process starts fast.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import loads_json
from ragtruth_spans.serving.worker import WorkerProcess

logger = logging.getLogger(__name__)

MAX_OBJECT_KEYS = 32
"""Keys of one JSON object of a request at most: no request object has more than a handful of fields, so an object
with more is refused by its key count before the models run (never one error per unknown key)."""


def max_values(max_items: int) -> int:
    """JSON values a request of at most ``max_items`` items (candidates) can hold: each item an object of at most
    :data:`MAX_OBJECT_KEYS` keys with scalar values, plus the body's own object.

    >>> max_values(64)
    2211
    """
    return (max_items + 1) * (MAX_OBJECT_KEYS + 1) + 66


def _problem(raw: Any, limit: int, max_keys: int = MAX_OBJECT_KEYS) -> tuple[str, str] | None:
    """``(field, message)`` of the first structural bound ``raw`` breaks (``limit`` values, ``max_keys`` keys per
    object), or None (a walk that stops early)."""
    stack: list[tuple[str, Any]] = [("body", raw)]
    seen = 0
    while stack:
        where, node = stack.pop()
        seen += 1
        if seen > limit:
            return "body", f"holds more than {limit} JSON values; a request within the item limit holds fewer"
        if isinstance(node, dict):
            if len(node) > max_keys:
                return where, (f"has {len(node)} keys; a request object has at most {max_keys} (only the "
                               "fields of the schema are accepted)")
            stack.extend((f"{where}.{k}"[:80] if where != "body" else str(k)[:40], v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((f"{where}[{i}]" if where != "body" else f"[{i}]", v)
                         for i, v in enumerate(node[:limit + 1]))
    return None


def parse_checked(data: bytes, limit: int, max_keys: int = MAX_OBJECT_KEYS) -> tuple[Any, ...]:
    """``("ok", value)``, ``("json", message)`` (the parser refused it) or ``("invalid", field, message)`` (a
    structural bound, :func:`_problem`: at most ``limit`` values, ``max_keys`` keys per object).

    >>> parse_checked(b'{"a": 1}', 10)
    ('ok', {'a': 1})
    >>> parse_checked(b'[1, 2, 3]', 2)[0]
    'invalid'
    """
    try:
        value = loads_json(data, allow_surrogates=True)  # the request models name the field (422)
    except InputError as exc:
        return "json", exc.message
    problem = _problem(value, limit, max_keys)
    return ("ok", value) if problem is None else ("invalid", *problem)


def is_whole_json(data: bytes) -> bool:
    """Whether ``data`` is one whole JSON text (the project's parser; no structural bounds).

    >>> is_whole_json(b'{"a": [1, 2]}'), is_whole_json(b'{"a": [1, 2')
    (True, False)
    """
    try:
        loads_json(data, allow_surrogates=True)
    except InputError:
        return False
    return True


class BodyParser:
    """:func:`parse_checked` off the event loop: in a worker thread for a body of at most ``process_bytes``, in a
    :class:`~ragtruth_spans.serving.worker.WorkerProcess` (started on first use) for a larger one."""

    def __init__(self, process_bytes: int = 512 * 1024) -> None:
        self.process_bytes = process_bytes
        self._worker = WorkerProcess("body parser")

    async def parse(self, data: bytes, limit: int, max_keys: int = MAX_OBJECT_KEYS) -> tuple[Any, ...]:
        """:func:`parse_checked` of ``data`` (see the class)."""
        if len(data) <= self.process_bytes:
            return await asyncio.to_thread(parse_checked, data, limit, max_keys)
        return await self._worker.run(parse_checked, data, limit, max_keys)

    async def is_whole_json(self, data: bytes) -> bool:
        """:func:`is_whole_json` of ``data``, off the event loop as :meth:`parse` (a large one in the process)."""
        if len(data) <= self.process_bytes:
            return await asyncio.to_thread(is_whole_json, data)
        return await self._worker.run(is_whole_json, data)

    def close(self) -> None:
        """Stop the worker process (the service's shutdown)."""
        self._worker.close()
