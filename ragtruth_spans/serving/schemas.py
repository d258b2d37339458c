"""Request and response bodies of the HTTP service (pydantic). Offsets in every answer are characters of the
response (Unicode code points, as Python ``str`` indices), half-open ``[start, end)``.

Wrong types, missing or unknown fields, blank texts (a context, response or candidate that is empty or only
whitespace and invisible characters: :func:`~ragtruth_spans.core.fields.is_blank`, the rule of every reader) and
text holding a lone surrogate (``"\\ud800"``: legal JSON, not text) are refused by these models (422), in strict
mode: no coercion, so ``"id": true`` is refused rather than echoed as ``1``. Sizes beyond the server's limits
(characters per item, items per request, request bytes) are checked by the app (413) before these models run.
"""

from __future__ import annotations

import itertools
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
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


NOT_BLANK_PATTERN = ("[^\\u0000-\\u0020\\u007f-\\u00a0\\u00ad\\u0600-\\u0605\\u061c\\u06dd\\u070f\\u0890-\\u0891\\u08e2"
                     "\\u1680\\u180e\\u2000-\\u200f\\u2028-\\u202f\\u205f-\\u2064\\u2066-\\u206f\\u3000\\ufeff"
                     "\\ufff9-\\ufffb\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
                     "\U000e0001\U000e0020-\U000e007f]")
"""The JSON Schema ``pattern`` of a text that is not blank: one character that
:func:`~ragtruth_spans.core.fields.is_blank` does not count as blank (control and format characters, whitespace;
``\\u`` escapes for the basic plane, the characters themselves beyond). :func:`not_blank_pattern` computes it
from the rule (over a second or two: a test checks that the two agree), so the schema and the service agree on
every character."""


def not_blank_pattern() -> str:
    r""":data:`NOT_BLANK_PATTERN` computed from :func:`is_blank`, over the planes that hold characters (planes 4
    to 13 are unassigned, 15 and 16 private use: none of their code points is blank).

    >>> import re
    >>> [bool(re.search(NOT_BLANK_PATTERN, t)) for t in (" ", "\n\t", "\u00a0", "\u200b\ufeff", " a ")]
    [False, False, False, False, True]
    """
    ranges: list[tuple[int, int]] = []
    for code in itertools.chain(range(0xD800), range(0xE000, 0x40000), range(0xE0000, 0xF0000)):
        if not is_blank(chr(code)):
            continue
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))

    def char(code: int) -> str:
        return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)

    return "[^" + "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges) + "]"


class _NotBlankSchema:
    """Puts :data:`NOT_BLANK_PATTERN` into a text field's JSON Schema (the validator is :func:`_filled`)."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        return handler(core_schema) | {"pattern": NOT_BLANK_PATTERN}


FilledText = Annotated[str, AfterValidator(_unicode), AfterValidator(_filled), _NotBlankSchema()]
"""A :data:`Text` that is not blank (:func:`~ragtruth_spans.core.fields.is_blank`): contexts and responses; its
JSON Schema says so (``pattern``: at least one character that is not blank)."""


def _integral(value: Any) -> Any:
    """A JSON number with no fraction (``10.0``) is the integer it equals, as JSON Schema's ``integer`` says."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _id(value: Any) -> Any:
    value = _integral(value)
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


class _CandidatesSchema:
    """The JSON Schema of ``candidates``: each one a response string or a :class:`CandidateIn` object (both are
    accepted)."""

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> dict[str, Any]:
        schema = handler(core_schema)
        text = {"type": "string", "minLength": 1, "pattern": NOT_BLANK_PATTERN}
        return schema | {"items": {"anyOf": [text, schema["items"]]}}


class SelectRequest(_Strict):
    """Best-of-N selection: N candidate responses to one input (the task rule of :class:`DetectItemIn`)."""

    @model_validator(mode="before")
    @classmethod
    def _one_task_rule(cls, data: Any) -> Any:
        return _task_rule(data)

    context: FilledText = Field(min_length=1)
    task: Task
    question: Text | None = None
    candidates: Annotated[list[CandidateIn], _CandidatesSchema()] = Field(
        min_length=1, description="Responses: strings, or {response, id?} objects.")
    strategy: Strategy = DEFAULT_STRATEGY
    tie_break: TieBreak = "random"
    seed: Annotated[int, BeforeValidator(_integral)] = 0

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


class CandidateSpanOut(BaseModel):
    """A span of a candidate in ``/v1/select``'s answer (characters of its response, half-open; a detector's
    other span keys kept)."""

    model_config = ConfigDict(extra="allow")
    start: int
    end: int
    type: str | None = None
    score: float | None = None


class CandidateOut(BaseModel):
    """A candidate in ``/v1/select``'s answer: its score (lower is better) and spans (None: not judged)."""

    id: str | int | None = None
    response: str
    score: float | None = None
    spans: list[CandidateSpanOut] | None = None
    error: str | None = None


class SelectOut(BaseModel):
    """``/v1/select``'s answer: the chosen candidate (``index``, ``id``, ``response``; None with ``no_judgement``)
    and every candidate's score and spans."""

    index: int | None
    id: str | int | None = None
    response: str | None = None
    no_judgement: bool
    strategy: str
    scores: list[float | None]
    tied: list[int]
    tie_break: str | None = None
    fallback: bool
    detection_failed: list[int]
    candidates: list[CandidateOut]
    detector: DetectorRef


class HealthOut(BaseModel):
    """``/health``: liveness and load (queue, batching totals, requests ended before a route saw them)."""

    status: Literal["ok", "shutting down"]
    detector: DetectorRef
    pending_items: int
    stats: dict[str, Any]
    connections: dict[str, int]
    context_cache: dict[str, Any] | None = None


class ErrorOut(BaseModel):
    error: str
    detail: list[dict[str, Any]] | None = Field(default=None, description="422: the first problems found (at most "
                                                "--max-errors), each {field, message}.")
    error_count: int | None = Field(default=None, description="422: how many problems were found in all.")
    error_id: str | None = None
