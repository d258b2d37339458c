"""The passages of a context that evidence can point at, with their exact offsets.

Offsets are **characters of the context** (Python ``str`` indices), half-open ``[start, end)``: for every unit,
``context[unit.start:unit.end]`` is the passage as it stands in the context (``\\r\\n``, non-ASCII letters and JSON
escapes included).

- A text context (QA passages, a Summary article, a Data2txt context that is not JSON) is cut into trimmed
  sentences (:func:`ragtruth_spans.detectors.shared.sentences.split_sentences`).
- A Data2txt context that is a JSON object or list gives one unit per scalar field, ``"key": value`` as written in
  the JSON (from the key's opening quote to the value's end); a long string value (a review) gives one unit per
  sentence of its decoded text, mapped back to the raw JSON characters (escapes such as ``\\n``, ``\\"`` and
  ``\\u00e9`` included). Each unit keeps its key path and value, which the Data2txt field rule reads.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ragtruth_spans.detectors.shared.sentences import LONG_VALUE_CHARS, split_sentences

_WS = re.compile(r"[ \t\n\r]*")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|[_\-]+")
_DECODER = json.JSONDecoder()
_NOT_A_FIELD = object()


@dataclass(frozen=True)
class Unit:
    """One passage ``[start, end)`` of the context; ``text`` is what it is compared with (the raw passage, or for
    a JSON field its key path in words and its value), ``keys`` the field's key path (empty for a sentence),
    ``value`` the field's JSON value (absent for a sentence) and ``value_span`` where the value is written."""

    start: int
    end: int
    text: str
    keys: tuple[str, ...] = ()
    value: Any = _NOT_A_FIELD
    value_span: tuple[int, int] | None = None

    @property
    def is_field(self) -> bool:
        return self.value is not _NOT_A_FIELD


def key_words(key: str) -> str:
    """A JSON key in words: ``RestaurantsReservations`` → ``Restaurants Reservations``."""
    return _CAMEL.sub(" ", key).strip()


def _string_offsets(raw: str) -> list[int]:
    """For the body of a JSON string literal (without its quotes), the raw index where each decoded character
    starts, plus the raw length: ``len(result) == len(decoded) + 1``."""
    out, i = [], 0
    while i < len(raw):
        out.append(i)
        if raw[i] != "\\":
            i += 1
        elif raw[i + 1] != "u":
            i += 2
        else:
            high = int(raw[i + 2:i + 6], 16)
            surrogate_pair = 0xD800 <= high < 0xDC00 and raw[i + 6:i + 8] == "\\u"
            i += 12 if surrogate_pair and 0xDC00 <= int(raw[i + 8:i + 12], 16) < 0xE000 else 6
    out.append(len(raw))
    return out


def _field_units(context: str, keys: tuple[str, ...], key_start: int, start: int, end: int,
                 value: Any) -> list[Unit]:
    words = " ".join(key_words(k) for k in keys)
    if isinstance(value, str) and len(value) > LONG_VALUE_CHARS:
        offsets = _string_offsets(context[start + 1:end - 1])
        if len(offsets) == len(value) + 1:
            units = []
            for a, b in split_sentences(value):
                raw_a, raw_b = start + 1 + offsets[a], start + 1 + offsets[b]
                units.append(Unit(raw_a, raw_b, value[a:b], keys, value[a:b], (raw_a, raw_b)))
            return units
    shown = value if isinstance(value, str) else json.dumps(value)
    return [Unit(key_start, end, f"{words}: {shown}" if words else shown, keys, value, (start, end))]


def _walk(context: str, i: int, keys: tuple[str, ...], key_start: int, out: list[Unit]) -> int:
    """Read the JSON value at ``i`` (after whitespace), append its units, return the index after it."""
    i = _WS.match(context, i).end()
    opener = context[i]
    if opener not in "{[":
        value, end = _DECODER.raw_decode(context, i)
        out.extend(_field_units(context, keys, key_start, i, end, value))
        return end
    closer, i = ("}" if opener == "{" else "]"), _WS.match(context, i + 1).end()
    if context[i] == closer:
        return i + 1
    while True:
        i = _WS.match(context, i).end()
        if opener == "{":
            first = i
            key, i = _DECODER.raw_decode(context, i)
            i = _WS.match(context, i).end() + 1  # the ':'
            i = _walk(context, i, keys + (str(key),), first, out)
        else:
            i = _walk(context, i, keys, _WS.match(context, i).end(), out)
        i = _WS.match(context, i).end()
        if context[i] == closer:
            return i + 1
        i += 1  # the ','


def json_units(context: str) -> list[Unit] | None:
    """The field units of a JSON object or list context, or None when the context is not one."""
    try:
        data = json.loads(context)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, (dict, list)):
        return None
    out: list[Unit] = []
    _walk(context, 0, (), 0, out)
    return out


def context_units(context: str, task: str) -> list[Unit]:
    """The units of a context (see the module docstring), in order."""
    if task == "Data2txt":
        units = json_units(context)
        if units is not None:
            return units
    return [Unit(a, b, context[a:b]) for a, b in split_sentences(context)]
