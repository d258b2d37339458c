"""The predictions file: one JSON line per response, what ``predict`` writes and ``evaluate``/``select``/``report``
read::

    {"id": "5001", "spans": [{"start": 47, "end": 57, "type": "Evident Conflict", "score": 0.93}],
     "score": 0.97, "error": "...", ...diagnostics}

- ``spans``: character offsets of the response, half-open ``[start, end)``; ``type`` and ``score`` optional;
  ``verdict``, ``reason`` and ``evidence`` (offsets of the context: :mod:`ragtruth_spans.core.evidence`) optional,
  kept for the report and ignored by the evaluator.
- ``score``: the response score (higher = more likely hallucinated), optional or null.
- ``error``: present when the detector could not judge the response; its ``spans`` are then empty and mean
  "could not tell".
- any other key is a diagnostic of the detector family; readers count them by name (:class:`PredictionFile`)
  without interpreting them.

A line that carries fields of a gold record (``response``, ``context``, ...) is refused: it is a data file given
as predictions by mistake, and scoring it would report a perfect detector.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.evidence import evidence_from_dict
from ragtruth_spans.core.fields import check_id, check_score, check_text, check_unicode
from ragtruth_spans.core.jsonl import iter_jsonl
from ragtruth_spans.core.types import Span

RESERVED_KEYS = ("id", "spans", "score", "error")
GOLD_RECORD_KEYS = ("response", "context", "source_id", "task_type", "question")
"""Keys of a prepared gold record that no prediction line has."""


def prediction_row(record_id: str, detection: Any) -> dict[str, Any]:
    """One predictions-file line: ``id`` then the :class:`~ragtruth_spans.detectors.base.Detection`'s dict."""
    return {"id": record_id} | detection.to_dict()


@dataclass
class PredictionFile:
    """A predictions file read in one pass.

    ``spans``: ``{id: [Span, ...]}``. ``response_scores``: ``{id: score}`` of the lines that carry a response
    score. ``errors``: ``{id: error}`` of the lines where the detector failed. ``diagnostics``: ``lines``,
    ``scored_lines``, ``errors`` and ``counters`` — every other key, counted by name: a ``true`` value counts 1,
    a list counts its items, an integer its value (other values are not counted).
    """

    spans: dict[str, list[Span]]
    response_scores: dict[str, float]
    errors: dict[str, str] = field(default_factory=dict)
    diagnostics: dict[str, Any] = field(default_factory=dict)


def _parse_span(obj: Any, *, path: Path, line: int, pid: str, index: int, length: int | None) -> Span:
    where = {"path": path, "line": line, "field": f"spans[{index}]"}
    if not isinstance(obj, dict):
        raise InputError(f"id {pid!r}: a span must be a JSON object, got {type(obj).__name__}", **where)
    for key in ("start", "end"):
        if key not in obj:
            raise InputError(f"id {pid!r}: missing required field", path=path, line=line,
                             field=f"spans[{index}].{key}")
        if not isinstance(obj[key], int) or isinstance(obj[key], bool):
            raise InputError(f"id {pid!r}: must be an integer, got {obj[key]!r}", path=path, line=line,
                             field=f"spans[{index}].{key}")
    if obj["start"] == obj["end"]:
        raise InputError(f"id {pid!r}: [{obj['start']}, {obj['end']}) is an empty span (start == end): a span marks "
                         "at least one character", **where)
    span_type = obj.get("type")
    if span_type is not None and not isinstance(span_type, str):
        raise InputError(f"id {pid!r}: 'type' must be a string, got {type(span_type).__name__}", **where)
    check_unicode(span_type or "", **where)
    score = check_score(obj.get("score"), path=path, line=line, field=f"spans[{index}].score", what=f"id {pid!r}")
    try:
        span = Span(start=obj["start"], end=obj["end"], type=span_type, score=score, evidence=evidence_from_dict(obj))
    except ValueError as exc:
        raise InputError(f"id {pid!r}: {exc}", **where) from None
    if length is not None and span.end > length:
        raise InputError(f"id {pid!r}: span [{span.start}, {span.end}) is out of range for a response of "
                         f"{length} characters", **where)
    return span


def _line_id(obj: dict[str, Any], path: Path, line: int) -> str:
    if "id" not in obj:
        raise InputError("missing required field", path=path, line=line, field="id")
    check_id(obj["id"], path=path, line=line)
    gold_keys = [key for key in GOLD_RECORD_KEYS if key in obj]
    if gold_keys:
        raise InputError(f"this line has the field(s) {', '.join(gold_keys)} of a gold record: the file looks like "
                         "a data file, not predictions", path=path, line=line, field=gold_keys[0])
    return str(obj["id"])


def count_diagnostics(obj: Mapping[str, Any], counters: dict[str, int]) -> None:
    """Add one line's diagnostics to ``counters`` by name: ``true`` counts 1, a list its items, an integer its
    value; the reserved keys and other values are not counted."""
    for key, value in obj.items():
        if key in RESERVED_KEYS:
            continue
        if isinstance(value, bool):
            counters[key] = counters.get(key, 0) + value
        elif isinstance(value, list):
            counters[key] = counters.get(key, 0) + len(value)
        elif isinstance(value, int):
            counters[key] = counters.get(key, 0) + value


def read_prediction_file(path: str | Path, gold_ids: Collection[str] | None = None, *,
                         response_lengths: Mapping[str, int] | None = None) -> PredictionFile:
    """Read and validate a predictions JSONL file (see :class:`PredictionFile`).

    With ``gold_ids`` (or ``response_lengths``, whose keys are the gold ids) an id that is not in the gold data is
    an error; with ``response_lengths`` a span ending past its response (``end > len(response)``) is an error.
    Bad JSON, a missing ``id``/``spans``/``start``/``end``, a non-integer offset, ``end < start``, a bad
    ``type``/``score``/``error``, fields of a gold record and a duplicate id all raise :class:`InputError`
    naming the file, line and id.
    """
    path = Path(path)
    known = set(response_lengths) if response_lengths is not None else (
        set(gold_ids) if gold_ids is not None else None)
    result = PredictionFile(spans={}, response_scores={})
    first_line: dict[str, int] = {}
    counters: dict[str, int] = {}
    for line, obj in iter_jsonl(path):
        pid = _line_id(obj, path, line)
        if pid in result.spans:
            raise InputError(f"duplicate prediction for id {pid!r} (first on line {first_line[pid]})",
                             path=path, line=line, field="id")
        if known is not None and pid not in known:
            raise InputError(f"unknown id {pid!r}: no gold response has this id", path=path, line=line, field="id")
        if "spans" not in obj:
            raise InputError(f"id {pid!r}: missing required field", path=path, line=line, field="spans")
        if not isinstance(obj["spans"], list):
            raise InputError(f"id {pid!r}: must be a list of spans, got {type(obj['spans']).__name__}",
                             path=path, line=line, field="spans")
        length = response_lengths.get(pid) if response_lengths is not None else None
        result.spans[pid] = [_parse_span(s, path=path, line=line, pid=pid, index=i, length=length)
                             for i, s in enumerate(obj["spans"])]
        first_line[pid] = line
        score, error = obj.get("score"), obj.get("error")
        if score is not None:
            result.response_scores[pid] = check_score(score, path=path, line=line, what=f"id {pid!r}: the response "
                                                      "score")  # type: ignore[assignment]
        if error is not None:
            result.errors[pid] = check_text(error, path=path, line=line, field="error")
        count_diagnostics(obj, counters)
    result.diagnostics = {"lines": len(result.spans), "scored_lines": len(result.response_scores),
                          "errors": len(result.errors), "counters": dict(sorted(counters.items()))}
    return result
