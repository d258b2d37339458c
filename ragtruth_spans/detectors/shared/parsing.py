"""Parse the detector's generated text into span items.

The target format (see ``prompts.format_target``) is a JSON array, in order of appearance in the response, of
``{"text": <verbatim substring of the response>, "type": <one of HALLUCINATION_TYPES>}``; ``[]`` means "no
hallucination". :func:`parse_generation` accepts that format and tolerates what models actually emit:

- a Markdown code fence around the JSON (```` ```json ... ``` ````), prose before or after it;
- single-quoted, Python-literal style objects (``{'text': 'x', 'type': 'Evident Conflict'}``);
- a single object instead of a list, or a bare string item (kept as an untyped span);
- truncated output (generation hit ``max_new_tokens``): the complete items before the cut are kept and the
  result is flagged ``truncated``;
- a type spelled differently (case, spacing, ``_``/``-``) is mapped to the canonical name; an unknown or
  missing type keeps the span with ``type=None`` and is counted in ``unknown_types``.

An output with no recoverable JSON value is a parse **failure** (``ok=False``, ``error`` says why, ``raw`` keeps
the text): it is never turned silently into "no spans". ``[]`` is a successful parse with no items.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ragtruth_spans.core.types import HALLUCINATION_TYPES

_FENCE_OPEN = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?")
_DECODER = json.JSONDecoder()
_TYPE_KEY = {re.sub(r"[\s_-]+", " ", t).strip().lower(): t for t in HALLUCINATION_TYPES}


@dataclass(frozen=True)
class ParsedItem:
    """One generated span: its ``text`` (as generated, to be aligned) and canonical ``type`` (or None)."""

    text: str
    type: str | None = None
    raw_type: Any = None  # the type value as generated, kept when it was unknown or remapped


@dataclass
class ParseResult:
    """Outcome of parsing one generation.

    ``ok`` is False only when nothing could be recovered; ``items`` is then empty and ``error`` says why.
    ``truncated``: the JSON was cut off by the end of the output (also set on a failure caused by the cut).
    ``repairs`` lists the tolerances that were needed (e.g. ``"code fence"``, ``"truncated"``).
    ``dropped_items`` counts list entries that were not a span (no usable ``text``).
    """

    raw: str
    items: list[ParsedItem] = field(default_factory=list)
    ok: bool = True
    error: str | None = None
    truncated: bool = False
    repairs: list[str] = field(default_factory=list)
    unknown_types: int = 0
    dropped_items: int = 0


def canonical_type(value: Any) -> str | None:
    """The canonical hallucination type for ``value`` (case/space/underscore-insensitive), else None."""
    if not isinstance(value, str):
        return None
    return _TYPE_KEY.get(re.sub(r"[\s_-]+", " ", value).strip().lower())


def parse_generation(raw: str) -> ParseResult:
    """Parse one generated text into span items; see the module docstring for what is tolerated."""
    result = ParseResult(raw=raw)
    text = _strip_fence(raw, result.repairs)
    if not text.strip():
        return _failure(result, "empty output")
    first_error: str | None = None
    # Prose may contain brackets ("see [1]"): try each '[' / '{' until one holds span items or is `[]`.
    for start in _json_starts(text):
        values, end, truncated, error = _decode_value(text, start)
        candidate = ParseResult(raw=raw, repairs=list(result.repairs), truncated=truncated)
        for value in values:
            item = _to_item(value, candidate)
            if item is not None:
                candidate.items.append(item)
        if error is not None or (not candidate.items and (truncated or values)):
            if error is None:
                error = ("output truncated before the first complete item" if not values else
                         f"no span item ({candidate.dropped_items} entries without a 'text' string)")
            if first_error is None:
                first_error, result.truncated = error, truncated
            continue
        if text[:start].strip():
            candidate.repairs.append("leading text")
        if truncated:
            candidate.repairs.append("truncated")
        elif text[end:].strip():
            candidate.repairs.append("trailing text")
        return candidate
    return _failure(result, first_error or "no JSON array or object found")


def _failure(result: ParseResult, error: str) -> ParseResult:
    result.ok = False
    result.error = error
    result.items = []
    return result


def _strip_fence(raw: str, repairs: list[str]) -> str:
    """Contents of the first Markdown code fence (to its closing fence, or to the end if it was cut)."""
    match = _FENCE_OPEN.search(raw)
    if match is None:
        return raw
    repairs.append("code fence")
    body = raw[match.end():]
    close = body.find("```")
    return body if close < 0 else body[:close]


def _json_starts(text: str, limit: int = 20) -> list[int]:
    """Positions of the first ``limit`` opening brackets, in order."""
    return [m.start() for _, m in zip(range(limit), re.finditer(r"[\[{]", text))]


def _decode_value(text: str, start: int) -> tuple[list[Any], int, bool, str | None]:
    """Decode the array (or single object) at ``start``.

    Returns ``(values, end, truncated, error)``: the list entries, the index after the value, whether the text
    ended before the value was closed, and an error message when nothing usable was found.
    """
    try:  # fast path: well-formed JSON
        value, end = _DECODER.raw_decode(text, start)
        return (value if isinstance(value, list) else [value]), end, False, None
    except json.JSONDecodeError:
        pass
    if text[start] == "{":
        obj, end = _decode_object(text, start)
        if obj is None:
            if end is None:
                return [], len(text), True, None
            return [], start, False, "malformed object"
        return [obj], end, False, None

    # An array, decoded entry by entry so a bad or cut entry keeps the entries before it.
    values: list[Any] = []
    pos = start + 1
    while True:
        pos = _skip(text, pos, " \t\r\n,")
        if pos >= len(text):
            return values, len(text), True, None
        char = text[pos]
        if char == "]":
            return values, pos + 1, False, None
        if char == "{":
            obj, end = _decode_object(text, pos)
        elif char in "\"'":
            obj, end = _decode_literal(text, pos, _string_end(text, pos))
        else:
            return values, pos, False, (None if values else f"unexpected character {char!r} in the array")
        if end is None:  # the entry was cut by the end of the output
            return values, len(text), True, None
        if obj is None:
            return values, pos, False, (None if values else "malformed entry in the array")
        values.append(obj)
        pos = end


def _decode_object(text: str, pos: int) -> tuple[Any, int | None]:
    """Decode the ``{...}`` at ``pos`` as JSON, else as a Python literal (single quotes).

    Returns ``(value, end)``; ``end`` is None when the object is not closed before the end of the text, and
    ``value`` is None when it is closed but unreadable.
    """
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError:
        pass
    return _decode_literal(text, pos, _matching_close(text, pos))


def _decode_literal(text: str, pos: int, end: int | None) -> tuple[Any, int | None]:
    if end is None:
        return None, None
    snippet = text[pos:end]
    for candidate in (snippet, _json_words_to_python(snippet)):
        try:
            return ast.literal_eval(candidate), end
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return None, end


def _json_words_to_python(snippet: str) -> str:
    return re.sub(r"\b(true|false|null)\b", lambda m: {"true": "True", "false": "False", "null": "None"}[m[1]],
                  snippet)


def _skip(text: str, pos: int, chars: str) -> int:
    while pos < len(text) and text[pos] in chars:
        pos += 1
    return pos


def _string_end(text: str, pos: int) -> int | None:
    """Index after the quoted string starting at ``pos`` (backslash escapes honoured), None if unterminated."""
    quote = text[pos]
    i = pos + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return None


def _matching_close(text: str, pos: int) -> int | None:
    """Index after the bracket closing the one at ``pos``, skipping quoted strings; None if never closed."""
    depth = 0
    i = pos
    while i < len(text):
        char = text[i]
        if char in "\"'":
            end = _string_end(text, i)
            if end is None:
                return None
            i = end
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _to_item(value: Any, result: ParseResult) -> ParsedItem | None:
    """One list entry → a span item; non-span entries are counted in ``dropped_items``."""
    if isinstance(value, str):
        value = {"text": value}
        if "bare string item" not in result.repairs:
            result.repairs.append("bare string item")
    if not isinstance(value, dict) or not isinstance(value.get("text"), str) or not value["text"].strip():
        result.dropped_items += 1
        return None
    raw_type = value.get("type")
    span_type = canonical_type(raw_type)
    if span_type is None:
        result.unknown_types += 1
        return ParsedItem(text=value["text"], type=None, raw_type=raw_type)
    return ParsedItem(text=value["text"], type=span_type, raw_type=None if raw_type == span_type else raw_type)
