"""The one error type of ragtruth-spans for bad input, and the checks that raise it.

Every user-facing failure is an :class:`InputError` whose message names the file, the 1-based line and the field
when they are known; the command line prints it on one line and exits with status 2.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class InputError(ValueError):
    """Bad input. The message names the file, the 1-based line and the field when they are known.

    >>> from ragtruth_spans import InputError
    >>> error = InputError("must be an integer", path="gold.jsonl", line=3, field="spans[0].start")
    >>> str(error)
    "gold.jsonl:3, field 'spans[0].start': must be an integer"
    >>> isinstance(error, ValueError), error.line
    (True, 3)
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None,
                 field: str | None = None) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.field = field
        where = []
        if self.path is not None:
            where.append(self.path if line is None else f"{self.path}:{line}")
        elif line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


def check_choice(value: object, allowed: Iterable[str], what: str, *, field: str | None = None,
                 path: str | Path | None = None, line: int | None = None) -> None:
    """Raise ``unknown WHAT 'value' (expected one of A, B, C)`` unless ``value`` is one of ``allowed``."""
    allowed = tuple(allowed)
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r} (expected one of {', '.join(allowed)})",
                         field=field, path=path, line=line)
