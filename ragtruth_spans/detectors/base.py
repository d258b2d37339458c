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

**One text model.** Every ``detect_batch`` of a subclass is wrapped (:meth:`Detector.__init_subclass__`) so that the
family reads every text in Unicode NFC (:mod:`ragtruth_spans.core.text`) and its spans (and their evidence passages)
come back as offsets of the caller's own strings: a family decides the same for NFC, NFD and mixed spellings of one
text without doing anything itself. Items already in NFC (the usual case) are passed through untouched.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.evidence import Passage
from ragtruth_spans.core.fields import BLANK_MESSAGE, check_text, is_blank
from ragtruth_spans.core.text import NormalText, normalise
from ragtruth_spans.core.types import TASK_TYPES, Record, Span

if TYPE_CHECKING:
    from ragtruth_spans.detectors.shared.context_cache import ContextCache
    from ragtruth_spans.detectors.stream import StreamEvent


def resolve_task(item: Mapping[str, Any]) -> Any:
    """The task rule of a detection item, the same for stdin, HTTP and the Python API: ``task`` (``task_type``,
    the prepared files' name, is accepted too; given both, they must agree); with neither, ``QA`` when a
    ``question`` is given, else None (missing)."""
    task, task_type = item.get("task"), item.get("task_type")
    if task is not None and task_type is not None and task != task_type:
        raise InputError(f"task {task!r} and task_type {task_type!r} disagree (they are two names of one field: "
                         "give one)", field="task_type")
    task = task if task is not None else task_type
    if task is None and item.get("question") is not None:
        return "QA"
    return task


def quick_task(task: str | None, question: str | None) -> str:
    """The task of one context and answer typed by hand (``ragtruth_spans.detect``, ``detect --context``,
    ``select-best``): :func:`resolve_task`'s rule, and ``Summary`` (an answer about a text, with no question) when
    neither a task nor a question is given. Batches (stdin lines, files, HTTP) name their task.

    >>> quick_task(None, "When?"), quick_task(None, None), quick_task("Data2txt", None)
    ('QA', 'Summary', 'Data2txt')
    """
    return resolve_task({"task": task, "question": question}) or "Summary"


@dataclass(frozen=True)
class DetectItem:
    """One thing to check: ``response`` written from ``context`` for a ``task`` (QA / Summary / Data2txt);
    ``question`` is the QA question (None for the other tasks). A blank ``context`` or ``response`` (empty, or only
    whitespace and invisible characters: :func:`~ragtruth_spans.core.fields.is_blank`) is refused however the item
    is made, so no detector family ever reads one.

    >>> from ragtruth_spans import DetectItem
    >>> DetectItem.of({"context": "It opened in 1999.", "response": "It opened in 1998.", "question": "When?"})
    DetectItem(context='It opened in 1999.', response='It opened in 1998.', task='QA', question='When?')
    >>> DetectItem.of({"context": "It opened in 1999.", "response": "It opened in 1998."})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: field 'task': missing required field (QA, Summary or Data2txt; ...)
    >>> DetectItem(context="It opened in 1999.", response="\u3000", task="Summary")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: field 'response': is empty or blank ...
    """

    context: str
    response: str
    task: str
    question: str | None = None

    def __post_init__(self) -> None:
        for key in ("context", "response"):
            value = getattr(self, key)
            if isinstance(value, str) and is_blank(value):
                raise InputError(BLANK_MESSAGE, field=key)

    @classmethod
    def of(cls, item: DetectItem | Record | Mapping[str, Any]) -> DetectItem:
        """Coerce a :class:`DetectItem`, a :class:`~ragtruth_spans.core.types.Record` or a mapping with
        ``context``, ``response``, ``task`` and optional ``question`` — the one item schema that stdin ``detect``
        and HTTP share (:func:`resolve_task`; ``context`` and ``response`` text that is not blank); a missing or
        bad field (not a string, blank, or text with a lone surrogate: :func:`~ragtruth_spans.core.fields.check_text`)
        raises :class:`InputError` naming it."""
        if isinstance(item, DetectItem):
            return item
        if isinstance(item, Record):
            return cls(context=item.context, response=item.response, task=item.task_type, question=item.question)
        if not isinstance(item, Mapping):
            raise InputError(f"expected an object with context, response and task, got {type(item).__name__}")
        task = resolve_task(item)
        if task is None:
            raise InputError("missing required field (QA, Summary or Data2txt; QA is assumed only when a question "
                             "is given)", field="task")
        check_choice(task, TASK_TYPES, "task", field="task")
        for key in ("context", "response"):
            check_text(item.get(key), field=key, nonempty=True)
        question = check_text(item.get("question"), field="question", optional=True)
        return cls(context=item["context"], response=item["response"], task=task, question=question)


@dataclass
class Detection:
    """What a detector found in one response (see the module docstring for the meaning of each field).

    >>> from ragtruth_spans import Detection, Span
    >>> found = Detection(spans=[Span(21, 25, score=0.9)], score=0.8)
    >>> found.ok, found.to_dict()
    (True, {'spans': [{'start': 21, 'end': 25, 'score': 0.9}], 'score': 0.8})
    >>> Detection(spans=[], error="the judge did not answer").ok  # no span, but not "no hallucination"
    False
    """

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


@dataclass(frozen=True)
class NormalItem:
    """An item as a detector reads it (every text NFC) and the maps back to the caller's response and context."""

    item: DetectItem
    response: NormalText
    context: NormalText
    changed: bool

    @classmethod
    def of(cls, item: DetectItem | Record | Mapping[str, Any]) -> NormalItem:
        checked = DetectItem.of(item)
        response, context = NormalText.of(checked.response), NormalText.of(checked.context)
        question = None if checked.question is None else normalise(checked.question)
        changed = response.changed or context.changed or question != checked.question
        normal = replace(checked, response=response.text, context=context.text, question=question) if changed \
            else checked
        return cls(normal, response, context, changed)

    def map_back(self, detection: Detection) -> Detection:
        """``detection`` (offsets of the NFC texts) with every span and evidence passage in the caller's strings."""
        return replace(detection, spans=[self._span_back(span) for span in detection.spans])

    def _span_back(self, span: Span) -> Span:
        start, end = self.response.span_to_original(span.start, span.end)
        text = None if span.text is None else self.response.original[start:end]
        return self.evidence_back(replace(span, start=start, end=end, text=text), span)

    def span_forward(self, span: Span) -> Span:
        """A span of the caller's response as a span of :attr:`item`'s (NFC) response."""
        if not self.response.changed:
            return span
        start, end = self.response.span_from_original(span.start, span.end)
        return replace(span, start=start, end=end,
                       text=None if span.text is None else self.item.response[start:end])

    def evidence_back(self, span: Span, explained: Span) -> Span:
        """``span`` (the caller's) with the evidence found for its NFC form ``explained``, in the caller's context."""
        evidence = explained.evidence
        if evidence is not None and self.context.changed:
            evidence = replace(evidence, passages=tuple(self._passage_back(p) for p in evidence.passages))
        return replace(span, evidence=evidence)

    def _passage_back(self, passage: Passage) -> Passage:
        start, end = self.context.span_to_original(passage.start, passage.end)
        conflicts = tuple(self.context.span_to_original(a, b) for a, b in passage.conflicts)
        return replace(passage, start=start, end=end, conflicts=conflicts)


DetectBatch = Callable[[Any, Sequence[Any]], list["Detection"]]


def on_normal_text(method: DetectBatch) -> DetectBatch:
    """``method`` (a ``detect_batch``) reading every item in NFC, with the spans of its detections mapped back to
    the caller's strings (:class:`NormalItem`); items already in NFC go through as given."""
    if getattr(method, "__normal_text__", False):
        return method

    @functools.wraps(method)
    def detect_batch(self: Detector, items: Sequence[Any]) -> list[Detection]:
        items = list(items)
        normal = [NormalItem.of(item) for item in items]
        if not any(n.changed for n in normal):
            return method(self, items)
        detections = method(self, [n.item if n.changed else item for n, item in zip(normal, items)])
        return [n.map_back(d) if n.changed else d for n, d in zip(normal, detections)]

    detect_batch.__normal_text__ = True  # type: ignore[attr-defined]
    return detect_batch


class Detector(ABC):
    """Base class of every detector. Subclasses set :attr:`kind` and implement :meth:`detect_batch` (which reads
    NFC text only: see the module docstring).

    >>> import re
    >>> from ragtruth_spans import Detection, Detector, DetectItem, Span
    >>> class NewNumbers(Detector):  # flags the numbers of the response that the context does not hold
    ...     kind = "new-numbers"
    ...     def detect_batch(self, items):
    ...         items = [DetectItem.of(item) for item in items]
    ...         return [Detection(spans=[Span(m.start(), m.end()) for m in re.finditer("[0-9]+", item.response)
    ...                                  if m.group() not in item.context]) for item in items]
    >>> NewNumbers().detect(context="It opened in 1999.", response="It opened in 1998.", task="Summary").spans
    [Span(start=13, end=17, type=None, text=None, score=None, implicit_true=False, due_to_null=False, evidence=None)]
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "detect_batch" in cls.__dict__ and not getattr(cls.detect_batch, "__isabstractmethod__", False):
            cls.detect_batch = on_normal_text(cls.__dict__["detect_batch"])  # type: ignore[method-assign]

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

    def detect(self, *, context: str, response: str, task: str | None = None,
               question: str | None = None) -> Detection:
        """The :class:`Detection` of one response: :meth:`detect_batch` of one item, read by the one item schema
        (:meth:`DetectItem.of`), so ``task`` follows the same rule (:func:`resolve_task`): left out, QA when a
        ``question`` is given, else an :class:`InputError`."""
        item = {"context": context, "response": response, "task": task, "question": question}
        return self.detect_batch([DetectItem.of(item)])[0]

    def detect_stream(self, context: str, chunks: Iterable[str], question: str | None = None, *,
                      task: str | None = None) -> Iterator[StreamEvent]:
        """Check an answer while it arrives in ``chunks``: a :class:`~ragtruth_spans.detectors.stream.StreamEvent`
        with the spans of each run of newly completed sentences, then a final one whose ``detection`` equals
        :meth:`detect` on the joined text (:mod:`ragtruth_spans.detectors.stream`; ``task`` by
        :func:`quick_task`).

        >>> import re
        >>> from ragtruth_spans import Detection, Detector, DetectItem, Span
        >>> class NewNumbers(Detector):
        ...     kind = "new-numbers"
        ...     def detect_batch(self, items):
        ...         items = [DetectItem.of(item) for item in items]
        ...         return [Detection(spans=[Span(m.start(), m.end()) for m in re.finditer("[0-9]+", i.response)
        ...                                  if m.group() not in i.context]) for i in items]
        >>> events = list(NewNumbers().detect_stream("It opened in 1999.", ["It opened in 19", "98. It is ", "big."]))
        >>> [(e.sentences, [(s.start, s.end) for s in e.spans], e.final) for e in events]
        [([(0, 18)], [(13, 17)], False), ([(19, 29)], [(13, 17)], True)]
        """
        from ragtruth_spans.detectors.stream import detect_stream

        task = quick_task(task, question)
        return detect_stream(lambda text: self.detect(context=context, response=text, task=task, question=question),
                             chunks, prepare=lambda: self.prepare_context(context, question, task=task))

    def prepare_context(self, context: str, question: str | None = None, *, task: str | None = None) -> None:
        """Do ahead, into the detector's caches, the work on ``context`` that every answer to it shares (the
        sentence encoder's pass over it), so that a check that follows pays only for its answer: call it from a
        worker thread as soon as the context is known (a gate forwarding the request, ``detect_stream``,
        ``select_best``). Results are the same with or without it (tested); a check that starts while it runs
        waits for its pass instead of encoding the context again. Nothing here (a detector without such work)."""
        return None

    def context_cache(self) -> ContextCache | None:
        """The cache of context encodings this detector reads through (bounded in bytes; resize it with
        :meth:`~ragtruth_spans.detectors.shared.context_cache.ContextCache.resize`), None when it keeps none."""
        return None

    load_options: Mapping[str, Any] = MappingProxyType({})
    """The options :func:`~ragtruth_spans.detectors.loader.load_detector` loaded it with (set by the loader)."""

    def describe(self) -> dict[str, Any]:
        """JSON-ready description of this detector, recorded with its predictions: ``kind`` plus what the family
        adds (the run directory and its fingerprint, settings that change outputs)."""
        return {"kind": self.kind}


OPERATING_KEYS = ("threshold", "thresholds", "response_threshold", "fill", "max_word_gap", "aggregation", "span_edges",
                  "backend", "max_new_tokens", "mode")
"""The keys of ``describe()`` that make a detector's operating point (where a family has them)."""


def operating_point(detector: Detector) -> dict[str, Any]:
    """What a detector decides with, recorded with its predictions (``OUT.meta.json``) and shown by ``/v1/model``:
    the decision settings of its ``describe()`` (:data:`OPERATING_KEYS`) and the load options given to it."""
    return operating_point_of(detector.describe(), detector.load_options)


def operating_point_of(described: Mapping[str, Any], load_options: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`operating_point` from a ``describe()`` and the load options (None values are left out, as the
    loader leaves them out): for code that holds those rather than the detector (Ray actors)."""
    return {**{key: described[key] for key in OPERATING_KEYS if key in described},
            "load_options": {k: v for k, v in load_options.items() if v is not None}}
