"""The data types shared by every part of ragtruth-spans: spans, records and the RAGTruth vocabularies.

Units: all offsets are **characters** of the response string (Python ``str`` indices), and every span is
**half-open** ``[start, end)``, so ``response[span.start:span.end]`` is its text.

A prepared record (one line of ``OUT/{train,dev,test}.jsonl``) looks like::

    {"id": "...", "source_id": "...", "task_type": "QA" | "Summary" | "Data2txt", "model": "...",
     "split": "train" | "dev" | "test", "quality": "good", "response": "...",
     "question": "..." | null,          # QA only
     "context": "...",                   # QA: the passages; Summary: the article; Data2txt: the business JSON
     "spans": [{"start": 0, "end": 5, "type": "Evident Conflict", "text": "...",
                "implicit_true": false, "due_to_null": false}]}

A prediction (one line of ``PRED.jsonl``) is ``{"id": "...", "spans": [{"start", "end", "type"?, "score"?}]}``
plus optional diagnostics that the evaluator ignores; a span may carry its evidence in the context (``verdict``,
``reason``, ``evidence``: :mod:`ragtruth_spans.core.evidence`), which the evaluator ignores too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.evidence import SpanEvidence, evidence_from_dict

HALLUCINATION_TYPES: tuple[str, ...] = (
    "Evident Conflict",
    "Subtle Conflict",
    "Evident Baseless Info",
    "Subtle Baseless Info",
)
TASK_TYPES: tuple[str, ...] = ("QA", "Summary", "Data2txt")
SPLITS: tuple[str, ...] = ("train", "dev", "test")


@dataclass(frozen=True, order=True)
class Span:
    """A character span ``[start, end)`` of a response, optionally typed and scored.

    Gold spans carry ``type``, ``text``, ``implicit_true`` and ``due_to_null``; predicted spans may carry
    ``type`` and a confidence ``score`` in [0, 1], and ``evidence`` (:class:`SpanEvidence`: where the context
    contradicts the span's claim or that nothing supports it; not compared, not hashed).
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
    def from_dict(cls, d: dict[str, Any]) -> Span:
        return cls(
            start=d["start"],
            end=d["end"],
            type=d.get("type"),
            text=d.get("text"),
            score=d.get("score"),
            implicit_true=bool(d.get("implicit_true", False)),
            due_to_null=bool(d.get("due_to_null", False)),
            evidence=evidence_from_dict(d),
        )


@dataclass
class Record:
    """One response with its context and gold spans (a line of a prepared split file)."""

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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["spans"] = [s.to_dict() | {"implicit_true": s.implicit_true, "due_to_null": s.due_to_null}
                      for s in self.spans]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, path: str | Path | None = None, line: int | None = None) -> Record:
        """Build a record from a prepared-file dict; a missing or bad field raises :class:`InputError`."""
        required = ("id", "source_id", "task_type", "model", "split", "quality", "response", "context")
        for key in required:
            if key not in d:
                raise InputError("missing required field", path=path, line=line, field=key)
        check_choice(d["task_type"], TASK_TYPES, "task type", path=path, line=line, field="task_type")
        if not isinstance(d["response"], str):
            raise InputError("must be a string", path=path, line=line, field="response")
        spans = []
        for i, s in enumerate(d.get("spans") or []):
            try:
                span = Span.from_dict(s)
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"bad span: {exc}", path=path, line=line, field=f"spans[{i}]") from None
            if span.end > len(d["response"]):
                raise InputError(f"span [{span.start}, {span.end}) is out of range for a response of "
                                 f"{len(d['response'])} characters", path=path, line=line, field=f"spans[{i}]")
            spans.append(span)
        return cls(
            id=str(d["id"]), source_id=str(d["source_id"]), task_type=d["task_type"], model=str(d["model"]),
            split=str(d["split"]), quality=str(d["quality"]), response=d["response"], context=str(d["context"]),
            question=d.get("question"), spans=sorted(spans),
        )


def is_finite_number(value: Any) -> bool:
    """Whether a JSON value is a finite number (an int or float, not a bool, not NaN or infinite)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
