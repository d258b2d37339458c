"""Strict checks of the fields every reader takes from users (files, stdin, HTTP): one rule per kind of field.

- Text (``context``, ``response``, ``question``, ``id``, names) must be a JSON string of valid Unicode: a lone
  surrogate (``"\\ud800"``, legal JSON, not text) is refused here, at the edge, so it can never reach a tokenizer,
  an output stream or a file later.
- A text that must hold something (``context``, ``response``, a candidate, a model name) must not be **blank**
  (:func:`is_blank`: empty, or only whitespace and invisible characters): one rule for every reader.
- Flags are JSON booleans (``"false"`` is not a boolean); ids are strings or integers (never ``true``); scores are
  finite numbers in [0, 1].

Each check raises :class:`~ragtruth_spans.core.errors.InputError` naming ``path``, ``line`` and ``field``.
"""

from __future__ import annotations

import math
import unicodedata
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


INVISIBLE_CATEGORIES = ("Cc", "Cf")
"""Unicode categories of characters that show nothing: controls (``Cc``: NUL, ESC, ...) and format characters
(``Cf``: zero-width space U+200B, zero-width joiner U+200D, word joiner U+2060, byte-order mark U+FEFF, soft
hyphen U+00AD, bidirectional marks, ...)."""

BLANK_MESSAGE = "is empty or blank (only whitespace or invisible characters): there is nothing to read"
"""The one error message of a blank text (:func:`check_text` with ``nonempty``, the HTTP schemas)."""


def is_blank(text: str) -> bool:
    r"""Whether ``text`` holds nothing to read: it is empty, or every character is whitespace (``str.isspace``:
    spaces, tabs, line breaks, no-break space U+00A0, line separator U+2028, ideographic space U+3000, ...) or
    invisible (:data:`INVISIBLE_CATEGORIES`: zero-width space U+200B, byte-order mark U+FEFF, controls, ...).
    Detectors read text in NFC (:mod:`ragtruth_spans.core.text`); normalisation never changes whether a text is
    blank (no code point is blank on one side only), so the rule reads the text as given.

    Args:
        text: any string.

    Returns:
        True for a text with no visible character.

    >>> [is_blank(t) for t in ("", " ", "\n\t", "\u00a0", "\u2028", "\u3000", "\u200b", "\ufeff \u2060")]
    [True, True, True, True, True, True, True, True]
    >>> [is_blank(t) for t in ("a", " 1 ", "\u0301", "\u3164", ".")]
    [False, False, False, False, False]
    """
    return all(char.isspace() or unicodedata.category(char) in INVISIBLE_CATEGORIES for char in text)


def check_text(value: Any, *, field: str, path: str | Path | None = None, line: int | None = None,
               optional: bool = False, nonempty: bool = False) -> Any:
    r"""A string field of valid Unicode (None too when ``optional``); ``nonempty`` refuses a blank text
    (:func:`is_blank`: ``""``, ``" "``, ``"\u200b"``, ...).

    >>> check_text("It opened in 1998.", field="response", nonempty=True)
    'It opened in 1998.'
    >>> check_text("\u00a0", field="response", path="in.jsonl", line=3, nonempty=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: in.jsonl:3, field 'response': is empty or blank ...
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        kind = "a string or null" if optional else "a string"
        raise InputError(f"must be {kind}, got {_json_type(value)}", path=path, line=line, field=field)
    if nonempty and is_blank(value):
        raise InputError(BLANK_MESSAGE, path=path, line=line, field=field)
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
