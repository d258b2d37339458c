"""The one interface every detector implements.

A detector reads a context (the passages, the article or the business JSON), an optional question and a
response, and returns a :class:`Detection`: the hallucinated spans of the response as **character offsets of the
response, half-open** ``[start, end)``, a response-level score and free-form diagnostics.

Scores have one meaning everywhere in ragtruth-spans:

- ``Detection.score`` — the **response score**: a probability-like number in [0, 1], higher = more likely that
  the response holds a hallucination; ``None`` when the detector has none. Thresholds, AUROC and the
  ``max-confidence`` selection strategy use it.
- ``Span.score`` — the **span score**: the detector's confidence in [0, 1] that this span is hallucinated.

``Detection.error`` is set when the detector could not judge the item (an unreadable generation, a response too
long for the model, an endpoint that failed): its ``spans`` are then empty and mean "could not tell", not
"clean". ``diagnostics`` is the family's own record of how the result came about; shared code passes it through
(into prediction files, reports, HTTP answers) without interpreting it.

Implementing a detector means subclassing :class:`Detector` and writing :meth:`Detector.detect_batch`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import check_text
from ragtruth_spans.core.types import TASK_TYPES, Record, Span


@dataclass(frozen=True)
class DetectItem:
    """One thing to check: ``response`` written from ``context`` for a ``task`` (QA / Summary / Data2txt);
    ``question`` is the QA question (None for the other tasks)."""

    context: str
    response: str
    task: str
    question: str | None = None

    @classmethod
    def of(cls, item: DetectItem | Record | Mapping[str, Any]) -> DetectItem:
        """Coerce a :class:`DetectItem`, a :class:`~ragtruth_spans.core.types.Record` or a mapping with
        ``context``, ``response``, ``task`` (or ``task_type``) and optional ``question``; a missing or bad field
        (not a string, or text with a lone surrogate: :func:`~ragtruth_spans.core.fields.check_text`) raises
        :class:`InputError` naming it."""
        if isinstance(item, DetectItem):
            return item
        if isinstance(item, Record):
            return cls(context=item.context, response=item.response, task=item.task_type, question=item.question)
        if not isinstance(item, Mapping):
            raise InputError(f"expected an object with context, response and task, got {type(item).__name__}")
        task = item.get("task", item.get("task_type"))
        if "task" in item and "task_type" in item and item["task"] != item["task_type"]:
            raise InputError(f"task {item['task']!r} and task_type {item['task_type']!r} disagree (they are two "
                             "names of one field: give one)", field="task_type")
        if task is None:
            raise InputError("missing required field (QA, Summary or Data2txt)", field="task")
        check_choice(task, TASK_TYPES, "task", field="task")
        for key in ("context", "response"):
            check_text(item.get(key), field=key)
        question = check_text(item.get("question"), field="question", optional=True)
        return cls(context=item["context"], response=item["response"], task=task, question=question)


@dataclass
class Detection:
    """What a detector found in one response (see the module docstring for the meaning of each field)."""

    spans: list[Span]
    score: float | None = None
    diagnostics: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the detector could judge the item (``error`` is None)."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``spans``, ``score``, ``error`` (only when set), then the diagnostics' keys."""
        out: dict[str, Any] = {"spans": [s.to_dict() for s in self.spans], "score": self.score}
        if self.error is not None:
            out["error"] = self.error
        return out | self.diagnostics


class Detector(ABC):
    """Base class of every detector. Subclasses set :attr:`kind` and implement :meth:`detect_batch`."""

    kind: ClassVar[str] = "detector"
    preferred_chunk_size: ClassVar[int] = 64
    """Items per ``detect_batch`` call that keep this detector efficient; ``predict`` writes and flushes after each
    call, so it is also how much an interruption can lose (engines that schedule batches themselves, like vLLM,
    want large calls)."""

    @abstractmethod
    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        """One :class:`Detection` per item, in input order. Items are :class:`DetectItem` objects, records, or
        mappings (see :meth:`DetectItem.of`). A malformed item raises :class:`InputError`; an item the detector
        cannot judge gets a Detection with ``error`` set, without failing the others."""

    def detect(self, *, context: str, response: str, task: str, question: str | None = None) -> Detection:
        """The :class:`Detection` of one response (:meth:`detect_batch` of one item)."""
        return self.detect_batch([DetectItem(context=context, response=response, task=task, question=question)])[0]

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of this detector, recorded with its predictions: ``kind`` plus what the family
        adds (the run directory and its fingerprint, settings that change outputs)."""
        return {"kind": self.kind}
