"""JSON and JSON-lines files: strict UTF-8 reading with file:line errors, and writing that keeps non-ASCII text.

Every JSON text a user gives (files, stdin, the benchmark's sidecars) is parsed by :func:`loads_json`, which turns
every way Python's parser can refuse late — integers over its digit limit, nesting too deep for its recursion,
``NaN``/``Infinity`` (not JSON) — into one :class:`InputError` naming the file and line. An object that names
a key twice is refused too (Python would keep the last value silently): in files, stdin and request bodies
alike. Files are written atomically (:mod:`ragtruth_spans.core.files`): a crash leaves the old file or the new
one, never a torn one.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import check_unicode, surrogate_at
from ragtruth_spans.core.files import atomic_write_json, atomic_writer
from ragtruth_spans.core.types import Record


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; a missing file, bytes that are not UTF-8, bad JSON
    or a line that is not an object raise :class:`InputError` naming the file and line."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found" if not path.exists() else "not a file", path=path)
    with path.open("rb") as fh:
        for lineno, raw_bytes in enumerate(fh, start=1):
            try:
                raw = raw_bytes.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8 (byte {exc.start + 1} of the line)", path=path,
                                 line=lineno) from None
            if raw.strip():
                yield lineno, parse_json_object(raw, path, lineno)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _surrogate_field(obj: Any, where: str = "") -> tuple[str, str] | None:
    """``(path, text)`` of the first key or string value holding a lone surrogate (path such as
    ``spans[0].text``), None if there is none."""
    if isinstance(obj, str):
        return (where or "value", obj) if surrogate_at(obj) is not None else None
    if isinstance(obj, list):
        return next((f for i, v in enumerate(obj) if (f := _surrogate_field(v, f"{where}[{i}]"))), None)
    if isinstance(obj, dict):
        for key, value in obj.items():
            if surrogate_at(key) is not None:
                return (f"{where}.<key>" if where else "<key>"), key
            found = _surrogate_field(value, f"{where}.{key}" if where else key)
            if found:
                return found
    return None


def loads_json(raw: str | bytes, path: str | Path | None = None, line: int | None = None, *,
               allow_surrogates: bool = False) -> Any:
    """Parse one JSON text; anything Python's parser refuses (bad syntax, an integer over its digit limit,
    nesting too deep, ``NaN``/``Infinity``) raises :class:`InputError` naming ``path`` and ``line``. A string
    escaping a lone surrogate (``"\\ud800"``: legal JSON, never text) is refused too, naming its field, unless
    ``allow_surrogates`` (a caller that checks every field itself)."""
    obj = _parse(raw, path, line)
    if not allow_surrogates:
        data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
        if _SURROGATE_ESCAPE.search(data) and (found := _surrogate_field(obj)):
            check_unicode(found[1], field=found[0], path=path, line=line)
    return obj


class DuplicateKey(ValueError):
    """A JSON object names one key twice (the parser would keep the last value silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        shown = "".join(c if c.isprintable() else "?" for c in twice[:40])
        raise DuplicateKey(f"duplicate key {shown!r} in one object (only one value can count: give it once)")
    return out


def _parse(raw: str | bytes, path: str | Path | None, line: int | None) -> Any:
    try:
        return json.loads(raw, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=line) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", path=path, line=line) from None
    except UnicodeDecodeError:
        raise InputError("not valid UTF-8", path=path, line=line) from None
    except ValueError as exc:  # e.g. "Exceeds the limit (4300 digits) for integer string conversion"
        raise InputError(f"invalid JSON: {str(exc).split(';')[0]}", path=path, line=line) from None


def read_json_file(path: str | Path) -> Any:
    """A whole JSON file (strict UTF-8, :func:`loads_json`); a missing, unreadable or malformed file raises
    :class:`InputError` naming it."""
    return loads_json(read_text(path), path)


def parse_json_object(raw: str, path: str | Path, line: int) -> dict[str, Any]:
    """One JSON line that must hold an object; bad JSON or another value raises :class:`InputError` naming
    ``path`` (a file, or a label such as ``<stdin>``) and the 1-based ``line``."""
    obj = loads_json(raw, path, line)
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, line=line)
    return obj


def read_text(path: str | Path) -> str:
    """A whole UTF-8 text file; a missing file or bytes that are not UTF-8 raise :class:`InputError` naming the
    file and line."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found" if not path.exists() else "not a file", path=path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError("not valid UTF-8", path=path, line=line) from None


def write_jsonl(path: str | Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write dicts as UTF-8 JSON lines (non-ASCII kept as is), atomically; return the number written."""
    n = 0
    with atomic_writer(path) as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def write_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as indented UTF-8 JSON (non-ASCII kept as is), creating parent folders; atomically
    (:func:`~ragtruth_spans.core.files.atomic_write_json`)."""
    atomic_write_json(path, obj)


def read_records(path: str | Path) -> list[Record]:
    """Read a prepared split file (JSONL of :class:`Record` dicts). Ids are the file's key (predictions refer to
    them): a repeated id raises :class:`InputError` naming both lines.

    >>> import pathlib, tempfile
    >>> from ragtruth_spans import load_ragtruth, read_records, sample_data_dir
    >>> from ragtruth_spans.core.jsonl import write_records
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "test.jsonl"
    >>> records = load_ragtruth(sample_data_dir(), split="test")
    >>> write_records(path, records)
    22
    >>> read_records(path) == records
    True
    >>> lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    >>> _ = path.write_text(lines[0] + "".join(lines), encoding="utf-8")  # the first record twice
    >>> read_records(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: ...test.jsonl:2...duplicate id...
    """
    records: list[Record] = []
    first_line: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        record = Record.from_dict(obj, path=path, line=lineno)
        if record.id in first_line:
            raise InputError(f"duplicate id {record.id!r} (first on line {first_line[record.id]})",
                             path=path, line=lineno, field="id")
        first_line[record.id] = lineno
        records.append(record)
    return records


def write_records(path: str | Path, records: Iterable[Record]) -> int:
    return write_jsonl(path, (r.to_dict() for r in records))


def file_sha256(path: str | Path | None) -> str | None:
    """sha256 of a file's bytes, None when there is no such file."""
    if path is None or not Path(path).is_file():
        return None
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
