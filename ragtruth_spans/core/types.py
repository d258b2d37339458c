"""The data types shared by every part of ragtruth-spans: spans, records and the RAGTruth vocabularies.

Units: all offsets are **characters** of the response string (Python ``str`` indices), and every span is
**half-open** ``[start, end)``, so ``response[span.start:span.end]`` is its text.

A prepared record (one line of ``OUT/{train,dev,test}.jsonl``) looks like::

    {"id": "...", "source_id": "...", "task_type": "QA" | "Summary" | "Data2txt", "model": "...",
     "split": "train" | "dev" | "test", "quality": "good", "response": "...",
     "question": "..." | null,          # QA only
     "context": "...",                   # QA: the passages; Summary: the article; Data2txt: the business JSON
     "spans": [{"start": 0, "end": 5, "type": "Evident Conflict", "text": "...",
                "implicit_true": false, "due_to_null": false}],
     "unlocated": true}                  # optional: hallucinated, no words marked (response-level label only)

A prediction (one line of ``PRED.jsonl``) is ``{"id": "...", "spans": [{"start", "end", "type"?, "score"?}]}``
plus optional diagnostics that the evaluator ignores; a span may carry its evidence in the context (``verdict``,
``reason``, ``evidence``: :mod:`ragtruth_spans.core.evidence`), which the evaluator ignores too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.evidence import EVIDENCE_KEYS, SpanEvidence, evidence_from_dict
from ragtruth_spans.core.fields import check_bool, check_id, check_score, check_text, is_finite_number

HALLUCINATION_TYPES: tuple[str, ...] = (
    "Evident Conflict",
    "Subtle Conflict",
    "Evident Baseless Info",
    "Subtle Baseless Info",
)
TASK_TYPES: tuple[str, ...] = ("QA", "Summary", "Data2txt")
SPLITS: tuple[str, ...] = ("train", "dev", "test")
RECORD_TEXT_FIELDS: tuple[str, ...] = ("id", "source_id", "task_type", "model", "split", "quality", "response",
                                       "context")
"""The required fields of a prepared record (every one a string; ``id`` may be an integer)."""

__all__ = ["HALLUCINATION_TYPES", "SPLITS", "TASK_TYPES", "Record", "Span", "canonical_spans", "is_finite_number"]


@dataclass(frozen=True)
class Span:
    """A character span ``[start, end)`` of a response, optionally typed and scored.

    Gold spans carry ``type``, ``text``, ``implicit_true`` and ``due_to_null``; predicted spans may carry
    ``type`` and a confidence ``score`` in [0, 1], and ``evidence`` (:class:`SpanEvidence`: where the context
    contradicts the span's claim or that nothing supports it; not compared, not hashed).

    >>> from ragtruth_spans import Span
    >>> response = "The museum opened in 1998."
    >>> span = Span(21, 25, type="Evident Conflict")
    >>> response[span.start:span.end], len(span)
    ('1998', 4)
    >>> Span(25, 21)
    Traceback (most recent call last):
    ValueError: span [25, 21) is not a valid half-open interval
    """

    start: int
    end: int
    type: str | None = None
    text: str | None = None
    score: float | None = None
    implicit_true: bool = False
    due_to_null: bool = False
    evidence: SpanEvidence | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not (isinstance(self.start, int) and isinstance(self.end, int)) or isinstance(self.start, bool):
            raise ValueError(f"span offsets must be integers, got start={self.start!r} end={self.end!r}")
        if self.start < 0 or self.end < self.start:
            raise ValueError(f"span [{self.start}, {self.end}) is not a valid half-open interval")

    def __len__(self) -> int:
        return self.end - self.start

    def sort_key(self) -> tuple[int, int, str, str, float, bool, bool]:
        """A total order (offsets first; an unset type, text or score sorts before a set one), so spans of one
        range, typed and untyped, sort without comparing None with a string."""
        return (self.start, self.end, self.type or "", self.text or "", -1.0 if self.score is None else self.score,
                self.implicit_true, self.due_to_null)

    def __lt__(self, other: Span) -> bool:
        return self.sort_key() < other.sort_key()

    def __le__(self, other: Span) -> bool:
        return self.sort_key() <= other.sort_key()

    def __gt__(self, other: Span) -> bool:
        return self.sort_key() > other.sort_key()

    def __ge__(self, other: Span) -> bool:
        return self.sort_key() >= other.sort_key()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict without the fields that are unset (None) or False by default."""
        d: dict[str, Any] = {"start": self.start, "end": self.end}
        for key in ("type", "text", "score"):
            value = getattr(self, key)
            if value is not None:
                d[key] = value
        if self.implicit_true:
            d["implicit_true"] = True
        if self.due_to_null:
            d["due_to_null"] = True
        if self.evidence is not None:
            d |= self.evidence.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Any, *, path: str | Path | None = None, line: int | None = None,
                  field: str = "span") -> Span:
        """A span from its JSON object, with strict types: integer offsets, ``type``/``text`` strings or null,
        ``score`` null or in [0, 1], ``implicit_true``/``due_to_null`` booleans. Anything else raises
        :class:`InputError` naming ``path``, ``line`` and ``field.key``."""
        if not isinstance(d, dict):
            raise InputError(f"a span must be a JSON object, got {type(d).__name__}", path=path, line=line,
                             field=field)
        where = {"path": path, "line": line}
        for key in ("start", "end"):
            if key not in d:
                raise InputError("missing required field", **where, field=f"{field}.{key}")
            if not isinstance(d[key], int) or isinstance(d[key], bool):
                raise InputError("must be an integer", **where, field=f"{field}.{key}")
        if d["start"] == d["end"]:
            raise InputError(f"[{d['start']}, {d['end']}) is an empty span (start == end): a span marks at least "
                             "one character", **where, field=field)
        unknown = sorted(set(d) - {"start", "end", "type", "text", "score", "implicit_true", "due_to_null",
                                    *EVIDENCE_KEYS})
        if unknown:
            raise InputError(f"unknown field {unknown[0][:60]!r}", **where, field=field)
        try:
            return cls(start=d["start"], end=d["end"],
                       type=check_text(d.get("type"), field=f"{field}.type", optional=True, **where),
                       text=check_text(d.get("text"), field=f"{field}.text", optional=True, **where),
                       score=check_score(d.get("score"), field=f"{field}.score", **where),
                       implicit_true=check_bool(d.get("implicit_true"), field=f"{field}.implicit_true", **where),
                       due_to_null=check_bool(d.get("due_to_null"), field=f"{field}.due_to_null", **where),
                       evidence=evidence_from_dict(d))
        except ValueError as exc:
            if isinstance(exc, InputError):
                raise
            raise InputError(str(exc), **where, field=field) from None


@dataclass
class Record:
    """One response with its context and gold spans (a line of a prepared split file).

    >>> from ragtruth_spans import Record, Span
    >>> record = Record(id="r1", source_id="museum", task_type="Summary", model="m", split="test", quality="good",
    ...                 response="The museum opened in 1998.", context="The museum opened in 1999.",
    ...                 spans=[Span(21, 25, type="Evident Conflict")])
    >>> [record.response[s.start:s.end] for s in record.spans]
    ['1998']
    >>> Record.from_dict(record.to_dict()) == record
    True
    """

    id: str
    source_id: str
    task_type: str
    model: str
    split: str
    quality: str
    response: str
    context: str
    question: str | None = None
    spans: list[Span] = field(default_factory=list)
    unlocated: bool = False
    """A response-level label without offsets: annotators judged the response not (fully) supported by its
    context but marked no words (``spans`` is then empty). Written to a prepared line only when true."""

    @property
    def hallucinated(self) -> bool:
        """The response-level label: it has a gold span, or an :attr:`unlocated` one.

        >>> Record("r", "s", "QA", "m", "train", "good", "It rained.", "Sunny.", unlocated=True).hallucinated
        True
        """
        return bool(self.spans) or self.unlocated

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["spans"] = [s.to_dict() | {"implicit_true": s.implicit_true, "due_to_null": s.due_to_null}
                      for s in self.spans]
        if not self.unlocated:
            del d["unlocated"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, path: str | Path | None = None, line: int | None = None) -> Record:
        """Build a record from a prepared-file dict with strict types (strings of valid Unicode, ``question`` a
        string or null, ``spans`` a list — ``[]`` for a faithful response — of :meth:`Span.from_dict`); a missing or
        bad field raises :class:`InputError` naming ``path``, ``line`` and the field: a missing or null ``spans``
        (never read as "no hallucination") and a blank ``response`` or ``context``
        (:func:`~ragtruth_spans.core.fields.is_blank`) too. Every reader of prepared and gold files
        (``evaluate``, ``report``, ``select``, ``predict``, ``train``, ``benchmark``) reads records here.

        >>> line = {"id": "r1", "source_id": "s", "task_type": "QA", "model": "m", "split": "test",
        ...         "quality": "good", "response": "It opened in 1998.", "context": "It opened in 1999."}
        >>> Record.from_dict(line | {"spans": []}).spans
        []
        >>> Record.from_dict(line, path="gold.jsonl", line=4)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ragtruth_spans.core.errors.InputError: gold.jsonl:4, field 'spans': missing required field ...
        """
        where = {"path": path, "line": line}
        for key in RECORD_TEXT_FIELDS:
            if key not in d:
                raise InputError("missing required field", **where, field=key)
        check_choice(d["task_type"], TASK_TYPES, "task type", **where, field="task_type")
        text = {key: check_text(d[key], field=key, nonempty=key in ("response", "context"), **where)
                for key in RECORD_TEXT_FIELDS if key != "id"}
        record_id = check_id(d["id"], **where)
        question = check_text(d.get("question"), field="question", optional=True, **where)
        if "spans" not in d:
            raise InputError("missing required field ([] for a response without hallucination)", **where,
                             field="spans")
        raw_spans = d["spans"]
        if not isinstance(raw_spans, list):
            raise InputError(f"must be a list of spans ([] for a response without hallucination), got "
                             f"{'null' if raw_spans is None else type(raw_spans).__name__}", **where, field="spans")
        spans = []
        for i, s in enumerate(raw_spans):
            span = Span.from_dict(s, **where, field=f"spans[{i}]")
            if span.end > len(text["response"]):
                raise InputError(f"span [{span.start}, {span.end}) is out of range for a response of "
                                 f"{len(text['response'])} characters", **where, field=f"spans[{i}]")
            spans.append(span)
        unlocated = check_bool(d.get("unlocated", False), field="unlocated", **where)
        if unlocated and spans:
            raise InputError("a record with spans is located: unlocated must be false or absent", **where,
                             field="unlocated")
        return cls(id=str(record_id), question=question, spans=canonical_spans(spans), unlocated=unlocated, **text)


def canonical_spans(spans: Iterable[Span]) -> list[Span]:
    """The one reading of a response's gold spans, shared by import, gold files, evaluate and select: sorted by
    :meth:`Span.sort_key`; spans on an equal range ``[start, end)`` merge into one per type (an untyped span beside
    a typed one on the same range adds nothing and is dropped; two types on one range are both kept); exact
    duplicates merge. Empty spans must be refused before (the readers name file, line and field)."""
    by_range: dict[tuple[int, int], dict[str | None, Span]] = {}
    for span in spans:
        kinds = by_range.setdefault((span.start, span.end), {})
        kinds.setdefault(span.type, span)
    merged: list[Span] = []
    for kinds in by_range.values():
        typed = [span for kind, span in kinds.items() if kind is not None]
        merged.extend(typed or kinds.values())
    return sorted(merged)


