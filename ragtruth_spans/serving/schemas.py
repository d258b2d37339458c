"""Request and response bodies of the HTTP service (pydantic). Offsets in every answer are characters of the
response (Unicode code points, as Python ``str`` indices), half-open ``[start, end)``.

Wrong types, missing or unknown fields, blank texts (a context, response or candidate that is empty or only
whitespace and invisible characters: :func:`~ragtruth_spans.core.fields.is_blank`, the rule of every reader) and
text holding a lone surrogate (``"\\ud800"``: legal JSON, not text) are refused by these models (422), in strict
mode: no coercion, so ``"id": true`` is refused rather than echoed as ``1``. Sizes beyond the server's limits
(characters per item, items per request, request bytes) are checked by the app (413) before these models run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    WithJsonSchema,
    field_validator,
    model_serializer,
    model_validator,
)

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import BLANK_MESSAGE, is_blank, surrogate_at
from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.detectors.base import resolve_task
from ragtruth_spans.selection.select import DEFAULT_STRATEGY, STRATEGIES, TIE_BREAKS

Task = Literal[TASK_TYPES]  # type: ignore[valid-type]
Strategy = Literal[STRATEGIES]  # type: ignore[valid-type]
TieBreak = Literal[TIE_BREAKS]  # type: ignore[valid-type]


def _unicode(value: str) -> str:
    at = surrogate_at(value)
    if at is not None:
        raise ValueError(f"not valid Unicode text: a lone surrogate at character {at}")
    return value


Text = Annotated[str, AfterValidator(_unicode)]
"""A string of valid Unicode (:func:`~ragtruth_spans.core.fields.surrogate_at`): the rule of every text field."""


def _filled(value: str) -> str:
    if is_blank(value):
        raise ValueError(BLANK_MESSAGE)
    return value


FilledText = Annotated[str, AfterValidator(_unicode), AfterValidator(_filled)]
"""A :data:`Text` that is not blank (:func:`~ragtruth_spans.core.fields.is_blank`): contexts and responses."""


def _id(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError("must be a string or an integer")  # never coerced: true is not 1
    return _unicode(value) if isinstance(value, str) else value


Id = Annotated[str | int, PlainValidator(_id), WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "integer"}]})]
"""An id: a string of valid Unicode or an integer, echoed as given."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _task_rule(data: Any) -> Any:
    """The one task rule of a detection item (:func:`~ragtruth_spans.detectors.base.resolve_task`): ``task_type``
    is accepted for ``task``; QA when only a question is given."""
    if not isinstance(data, dict) or ("task" in data and "task_type" not in data):
        return data
    try:
        task = resolve_task(data)
    except InputError as exc:
        raise ValueError(exc.message) from None
    data = {k: v for k, v in data.items() if k != "task_type"}
    return data if task is None else data | {"task": task}


class DetectItemIn(_Strict):
    """One response to check, with the context it was written from (the item schema of stdin ``detect`` and of
    :meth:`DetectItem.of <ragtruth_spans.detectors.base.DetectItem.of>`: ``task_type`` is accepted for ``task``,
    ``task`` defaults to QA when a question is given, context and response must not be blank)."""

    @model_validator(mode="before")
    @classmethod
    def _one_task_rule(cls, data: Any) -> Any:
        return _task_rule(data)

    context: FilledText = Field(min_length=1, description="The passages (QA), the article (Summary) or the "
                                "data (Data2txt).")
    response: FilledText = Field(min_length=1, description="The response to check.")
    task: Task = Field(description="QA, Summary or Data2txt.")
    question: Text | None = Field(default=None, description="The question (QA).")
    id: Id | None = Field(default=None, description="Your id (a string or an integer), echoed in the answer.")
    evidence: bool = Field(default=False, description="Add each span's evidence: context passages (characters of "
                           "the context, half-open) and a verdict (contradicted, unsupported, uncertain).")

    def chars(self) -> int:
        return len(self.context) + len(self.response) + len(self.question or "")


class PassageOut(BaseModel):
    """A context passage ``[start, end)`` (characters of the context) about a span's claim; ``conflicts``: the
    characters of the context that state something else than the span."""

    start: int
    end: int
    score: float
    conflicts: list[list[int]] | None = None


class SpanOut(BaseModel):
    start: int
    end: int
    text: str
    type: str | None = None
    score: float | None = None
    verdict: Literal["contradicted", "unsupported", "uncertain"] | None = Field(
        default=None, description="With evidence: what the context says of the span's claim.")
    reason: str | None = None
    evidence: list[PassageOut] | None = None

    @model_serializer(mode="wrap")
    def _evidence_only_when_asked(self, handler: Any) -> dict[str, Any]:
        """An answer without evidence has no ``verdict``/``reason``/``evidence`` keys (as before the feature)."""
        out = handler(self)
        if self.verdict is None:
            for key in ("verdict", "reason", "evidence"):
                out.pop(key, None)
        return out


class DetectorRef(BaseModel):
    """Which detector answered: its kind, its name (named detectors) and the run fingerprint (trained runs)."""

    kind: str
    name: str | None = None
    fingerprint: str | None = None


class DetectionOut(BaseModel):
    id: str | int | None = None
    spans: list[SpanOut]
    score: float | None = Field(description="Response score in [0, 1], higher = more likely hallucinated.")
    error: str | None = Field(default=None, description="Set when the detector could not judge the response.")
    diagnostics: dict[str, Any] = Field(default_factory=dict)


class DetectOne(DetectionOut):
    """The answer to one item."""

    detector: DetectorRef


class DetectMany(BaseModel):
    """The answer to a list of items, in their order."""

    results: list[DetectionOut]
    detector: DetectorRef


class CandidateIn(_Strict):
    response: FilledText = Field(min_length=1)
    id: Id | None = None


class SelectRequest(_Strict):
    """Best-of-N selection: N candidate responses to one input (the task rule of :class:`DetectItemIn`)."""

    @model_validator(mode="before")
    @classmethod
    def _one_task_rule(cls, data: Any) -> Any:
        return _task_rule(data)

    context: FilledText = Field(min_length=1)
    task: Task
    question: Text | None = None
    candidates: list[CandidateIn] = Field(min_length=1, description="Responses: strings, or {response, id?} "
                                          "objects.")
    strategy: Strategy = DEFAULT_STRATEGY
    tie_break: TieBreak = "random"
    seed: int = 0

    @field_validator("candidates", mode="before")
    @classmethod
    def _strings_are_responses(cls, value: Any) -> Any:
        if not isinstance(value, list):
            return value
        for i, candidate in enumerate(value):
            if not isinstance(candidate, (str, dict)):
                raise ValueError(f"candidate {i} must be a response string or an object {{response, id?}}")
        return [{"response": c} if isinstance(c, str) else c for c in value]

    def chars(self) -> int:
        return len(self.context) + len(self.question or "") + sum(len(c.response) for c in self.candidates)


class ErrorOut(BaseModel):
    error: str
    detail: list[dict[str, Any]] | None = None
    error_id: str | None = None
