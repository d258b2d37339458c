"""Strict checks of the fields every reader takes from users (files, stdin, HTTP): one rule per kind of field.

- Text (``context``, ``response``, ``question``, ``id``, names) must be a JSON string of valid Unicode: a lone
  surrogate (``"\\ud800"``, legal JSON, not text) is refused here, at the edge, so it can never reach a tokenizer,
  an output stream or a file later.
- Flags are JSON booleans (``"false"`` is not a boolean); ids are strings or integers (never ``true``); scores are
  finite numbers in [0, 1].

Each check raises :class:`~ragtruth_spans.core.errors.InputError` naming ``path``, ``line`` and ``field``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError


def surrogate_at(text: str) -> int | None:
    """The index of the first lone surrogate in ``text`` (a code point U+D800..U+DFFF), None when there is none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def check_unicode(text: str, *, field: str | None = None, path: str | Path | None = None,
                  line: int | None = None) -> str:
    """``text`` if it holds no lone surrogate, else :class:`InputError`."""
    at = surrogate_at(text)
    if at is not None:
        raise InputError(f"not valid Unicode text: a lone surrogate U+{ord(text[at]):04X} at character {at}",
                         path=path, line=line, field=field)
    return text


def check_text(value: Any, *, field: str, path: str | Path | None = None, line: int | None = None,
               optional: bool = False, nonempty: bool = False) -> Any:
    """A string field of valid Unicode (None too when ``optional``); ``nonempty`` refuses ``""``."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        kind = "a string or null" if optional else "a string"
        raise InputError(f"must be {kind}, got {_json_type(value)}", path=path, line=line, field=field)
    if nonempty and not value:
        raise InputError("must not be empty", path=path, line=line, field=field)
    return check_unicode(value, field=field, path=path, line=line)


def check_id(value: Any, *, field: str = "id", path: str | Path | None = None, line: int | None = None,
             optional: bool = False) -> Any:
    """An id: a string of valid Unicode or an integer (never a boolean); None too when ``optional``. Returned
    unchanged (callers that key by id use ``str()``)."""
    if value is None and optional:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        return check_unicode(value, field=field, path=path, line=line)
    raise InputError(f"must be a string or an integer, got {_json_type(value)}", path=path, line=line, field=field)


def check_bool(value: Any, *, field: str, path: str | Path | None = None, line: int | None = None,
               default: bool = False) -> bool:
    """A JSON boolean (missing / None: ``default``); ``"false"``, ``0`` and other values are refused."""
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(f"must be true or false, got {_json_type(value)} {_short(value)}", path=path, line=line,
                         field=field)
    return value


def check_score(value: Any, *, field: str = "score", path: str | Path | None = None, line: int | None = None,
                what: str = "") -> float | None:
    """A score: None, or a finite number in [0, 1] (the documented contract), returned as a float."""
    if value is None:
        return None
    prefix = f"{what}: " if what else ""
    if not is_finite_number(value):
        raise InputError(f"{prefix}must be a finite number in [0, 1], got {_short(value)}", path=path, line=line,
                         field=field)
    if not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{prefix}must be in [0, 1], got {_short(value)}", path=path, line=line, field=field)
    return float(value)


def is_finite_number(value: Any) -> bool:
    """Whether a JSON value is a finite number (an int or float, not a bool, not NaN or infinite; an integer too
    large for a float is not finite)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _short(value: Any, limit: int = 40) -> str:
    """A bounded, printable rendering of a bad value for an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 128:
        return f"an integer of {len(str(abs(value)))} digits" if value.bit_length() < 14000 else "a huge integer"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"
