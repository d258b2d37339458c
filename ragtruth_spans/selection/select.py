"""Best-of-N answer selection by detected hallucinations (RAGTruth §6.3, Table 7).

Given several candidate responses to the same input, each with its detected spans (character offsets of
that response, half-open ``[start, end)``), :func:`select_best` picks the one the detector finds least
hallucinated (:func:`ragtruth_spans.selection.corpus.evaluate_selection` measures, on gold-labelled records, how
much such a selection lowers the hallucination rate compared with picking a model's answer at random).

Every strategy gives each candidate a score, **lower is better**:

- ``fewest-spans`` — number of non-empty detected spans (the paper's strategy);
- ``no-spans`` — as ``fewest-spans``, but it is meant to accept only a clean candidate (0 spans): when none
  exists it falls back to the fewest-spans choice and sets :attr:`Selection.fallback`;
- ``least-hallucinated-chars`` — merged hallucinated characters / response length (0.0 for an empty response);
- ``auto`` (the default) — ``max-confidence`` when every candidate has a response score (a detector's
  ``Detection.score``: the recommended detector's calibrated response head), otherwise ``fewest-spans``;
  :attr:`Selection.strategy` names the one used;
- ``max-confidence`` — the candidate's response score (:attr:`Candidate.score`, e.g. the detector's
  ``1 - P(clean)``) when **every** candidate has one; otherwise the score of the candidate's most confident span
  (0.0 when it has no span), so the winner is the candidate whose worst span is least confident, and every span
  must then carry a ``score``.

Candidates with the best score tie; ``tie_break`` picks among them: ``"random"`` (a seeded uniform choice, as
the paper), ``"first"`` (lowest index) or ``"shortest"`` (fewest response characters, then lowest index).

A candidate the detector could not judge (its detection, or its prediction line, has an ``error``) is ranked after
every judged one. When **no** candidate could be judged there is no choice to make: :attr:`Selection.no_judgement`
is set and :attr:`Selection.index` is None (never an index a gate could mistake for a real pick).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import BLANK_MESSAGE, check_id, check_score, check_text, is_blank
from ragtruth_spans.core.intervals import covered_length, merge_intervals
from ragtruth_spans.core.jsonl import iter_jsonl
from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector

STRATEGIES: tuple[str, ...] = ("auto", "fewest-spans", "no-spans", "least-hallucinated-chars", "max-confidence")
DEFAULT_STRATEGY = "auto"
"""``max-confidence`` when every candidate has a response score, else ``fewest-spans``: chosen by measurement
(best-of-6 on the pool's dev sources with the recommended detector, docs/BENCHMARKS.md)."""
TIE_BREAKS: tuple[str, ...] = ("random", "first", "shortest")
_TIE_TOLERANCE = 1e-12  # scores closer than this are equal (ratios of the hallucinated-characters strategy)


@dataclass(frozen=True)
class Candidate:
    """One candidate response. ``spans`` are its detected spans (character offsets of ``response``,
    half-open); ``None`` means "not detected yet" (a detector must then be given to :func:`select_best`).
    ``score``: optional response-level hallucination score (higher = more likely hallucinated), used by
    ``max-confidence``; a detector's response score (``Detection.score``) is stored here. ``error``: the
    detector could not judge this candidate (its spans then mean "could not tell")."""

    response: str
    spans: tuple[Span, ...] | None = None
    id: str | None = None
    score: float | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "response": self.response, "score": self.score,
                "spans": None if self.spans is None else [s.to_dict() for s in self.spans]} | (
                    {"error": self.error} if self.error is not None else {})


@dataclass
class Selection:
    """The outcome of :func:`select_best`: the chosen candidate and why it was chosen."""

    index: int | None           # position of the chosen candidate in the input; None when no_judgement
    candidate: Candidate | None  # the chosen candidate, with its spans; None when no_judgement
    strategy: str
    scores: list[float]         # one per candidate, lower is better
    tied: list[int]             # indices that shared the best score (the chosen one among them)
    tie_break: str | None       # how the tie was broken; None when a single candidate had the best score
    fallback: bool              # ``no-spans`` only: no clean candidate, the fewest-spans choice was taken
    candidates: list[Candidate] = field(default_factory=list)  # all candidates, with their spans
    detection_failed: list[int] = field(default_factory=list)  # the detector could not judge: ranked last
    no_judgement: bool = False  # no candidate could be judged: nothing was chosen (index and candidate are None)

    @property
    def tie_broken(self) -> bool:
        return self.tie_break is not None

    def to_dict(self) -> dict[str, Any]:
        chosen = self.candidate
        return {"index": self.index, "id": chosen.id if chosen else None,
                "response": chosen.response if chosen else None, "no_judgement": self.no_judgement,
                "strategy": self.strategy, "scores": [None if math.isinf(x) else x for x in self.scores],
                "tied": self.tied, "tie_break": self.tie_break, "fallback": self.fallback,
                "detection_failed": self.detection_failed,
                "candidates": [c.to_dict() for c in self.candidates]}


def as_candidate(item: Candidate | str | Mapping[str, Any], index: int = 0) -> Candidate:
    """Coerce a :class:`Candidate`, a bare response string, or a mapping with ``response`` (and optional
    ``spans`` as :class:`Span` or span dicts, ``id``) into a validated :class:`Candidate`."""
    if isinstance(item, Candidate):
        candidate = item
    elif isinstance(item, str):
        candidate = Candidate(response=check_text(item, field=f"candidates[{index}]"), id=str(index))
    elif isinstance(item, Mapping):
        where = f"candidates[{index}]"
        response = check_text(item.get("response"), field=f"{where}.response")
        raw = item.get("spans")
        spans = None
        if raw is not None:
            if not isinstance(raw, (list, tuple)):
                raise InputError("must be a list of spans", field=f"{where}.spans")
            spans = tuple(s if isinstance(s, Span) else Span.from_dict(s, field=f"{where}.spans[{i}]")
                          for i, s in enumerate(raw))
        cid = check_id(item.get("id"), field=f"{where}.id", optional=True)
        score = check_score(item.get("score"), field=f"{where}.score")
        error = check_text(item.get("error"), field=f"{where}.error", optional=True)
        candidate = Candidate(response=response, spans=spans, id=str(index) if cid is None else str(cid),
                              score=score, error=error)
    else:
        raise InputError(f"candidate {index}: expected a Candidate, a string or a mapping, "
                         f"got {type(item).__name__}")
    if is_blank(candidate.response):
        raise InputError(BLANK_MESSAGE, field=f"candidates[{index}].response")
    if candidate.spans is not None:
        candidate = replace(candidate, spans=tuple(sorted(candidate.spans)))
        for span in candidate.spans:
            if span.end > len(candidate.response) or span.start == span.end:
                what = "an empty span (start == end)" if span.start == span.end else (
                    f"out of range for a response of {len(candidate.response)} characters")
                raise InputError(f"candidate {index} ({candidate.id}): span [{span.start}, {span.end}) is {what}",
                                 field=f"candidates[{index}].spans")
    return candidate


def check_unique_ids(candidates: Sequence[Candidate]) -> None:
    """Refuse two candidates of one id (given, or the index a mapping or string without an id gets): the choice
    would be ambiguous."""
    first: dict[str, int] = {}
    for index, candidate in enumerate(candidates):
        if candidate.id is None:
            continue
        if candidate.id in first:
            raise InputError(f"duplicate candidate id {candidate.id!r} (candidates {first[candidate.id]} and {index}); "
                             "a candidate without an id is known by its index", field=f"candidates[{index}].id")
        first[candidate.id] = index


def candidate_score(candidate: Candidate, strategy: str) -> float:
    """The strategy's score of one candidate (lower is better); see the module docstring."""
    spans = [s for s in (candidate.spans or ()) if s.end > s.start]
    if strategy in ("fewest-spans", "no-spans"):
        return float(len(spans))
    if strategy == "least-hallucinated-chars":
        if not candidate.response:
            return 0.0
        return covered_length(merge_intervals(spans)) / len(candidate.response)
    if strategy == "max-confidence":
        for span in spans:
            if span.score is None:
                raise InputError(f"strategy 'max-confidence' needs span scores, but candidate {candidate.id!r} "
                                 f"has span [{span.start}, {span.end}) without a 'score'")
        return max((float(s.score) for s in spans), default=0.0)  # type: ignore[arg-type]
    check_choice(strategy, STRATEGIES, "strategy")
    raise AssertionError(strategy)  # unreachable: every strategy is handled above


def _break_tie(tied: list[int], candidates: Sequence[Candidate], tie_break: str, rng: random.Random) -> int:
    if tie_break == "random":
        return tied[rng.randrange(len(tied))]
    if tie_break == "shortest":
        return min(tied, key=lambda i: (len(candidates[i].response), i))
    return tied[0]  # "first"


def _detect(detector: Detector, responses: list[str], context: str, task: str,
            question: str | None) -> list[Detection]:
    """The detector's :class:`~ragtruth_spans.detectors.base.Detection` of each response, in one
    ``detect_batch`` call."""
    from ragtruth_spans.detectors.stream import start_preparing

    items = [DetectItem(context=context, response=r, task=task, question=question) for r in responses]
    ahead = start_preparing(lambda: detector.prepare_context(context, question, task=task))  # the context once,
    try:  # encoded beside the candidates' own sentences
        return detector.detect_batch(items)
    finally:
        ahead.join()


def select_best(
    candidates: Sequence[Candidate | str | Mapping[str, Any]],
    *,
    strategy: str = DEFAULT_STRATEGY,
    seed: int = 0,
    rng: random.Random | None = None,
    tie_break: str = "random",
    detector: Detector | None = None,
    context: str | None = None,
    task: str | None = None,
    question: str | None = None,
) -> Selection:
    """Choose the candidate with the lowest ``strategy`` score.

    ``candidates`` are :class:`Candidate` objects, response strings, or mappings with ``response`` and
    optional ``spans``/``id``. Candidates without spans are run through one ``detector.detect_batch(items)``
    call (``context`` and ``task`` are then required). A candidate the detector could not judge
    (``Detection.error`` set: no spans, but not "no hallucination") scores ``inf`` — ranked after every checked
    candidate — and is listed in :attr:`Selection.detection_failed`.

    A random tie-break draws from ``rng`` when given, else from ``random.Random(seed)``, so the result is
    deterministic. The random generator is used only when several candidates tie.

    >>> from ragtruth_spans import load_detector, select_best
    >>> answers = ["The hotel opened in 1998.", "The hotel opened in 1999."]
    >>> chosen = select_best(answers, detector=load_detector("numbers"), context="The hotel opened in 1999.",
    ...                      task="Summary")
    >>> chosen.index, chosen.candidate.response, chosen.scores
    (1, 'The hotel opened in 1999.', [1.0, 0.0])
    """
    check_choice(strategy, STRATEGIES, "strategy")
    check_choice(tie_break, TIE_BREAKS, "tie-break")
    items = [as_candidate(c, i) for i, c in enumerate(candidates)]
    if not items:
        raise InputError("select_best needs at least one candidate")
    check_unique_ids(items)
    failed = _detect_missing(items, detector, context, task, question)
    if strategy == "auto":
        strategy = "max-confidence" if all(c.score is not None for c in items) else "fewest-spans"
    by_response_score = strategy == "max-confidence" and all(c.score is not None for c in items)

    def score_of(candidate: Candidate) -> float:
        if by_response_score and candidate.score is not None:
            return float(candidate.score)
        return candidate_score(candidate, strategy)

    scores = [math.inf if i in failed else score_of(c) for i, c in enumerate(items)]
    if len(failed) == len(items):
        return Selection(index=None, candidate=None, strategy=strategy, scores=scores, tied=[], tie_break=None,
                         fallback=False, candidates=items, detection_failed=failed, no_judgement=True)
    best = min(scores)
    tied = [i for i, s in enumerate(scores) if s <= best + _TIE_TOLERANCE]
    index = tied[0] if len(tied) == 1 else _break_tie(tied, items, tie_break, rng or random.Random(seed))
    return Selection(index=index, candidate=items[index], strategy=strategy, scores=scores, tied=tied,
                     tie_break=tie_break if len(tied) > 1 else None,
                     fallback=strategy == "no-spans" and best > 0, candidates=items, detection_failed=failed)


def _detect_missing(items: list[Candidate], detector: Detector | None, context: str | None, task: str | None,
                    question: str | None) -> list[int]:
    """Give the candidates without spans the detector's spans and score, in place (one ``detect_batch`` call);
    returns the sorted indices of the candidates that carry an error or that the detector could not judge."""
    failed = [i for i, c in enumerate(items) if c.error is not None]
    todo = [i for i, c in enumerate(items) if c.spans is None]
    if todo:
        if detector is None:
            raise InputError("candidates without spans need a detector (pass detector=...)")
        if context is None or task is None:
            raise InputError("detecting spans needs the context and the task type (pass context= and task=)")
        detected = _detect(detector, [items[i].response for i in todo], context, task, question)
        for i, detection in zip(todo, detected):
            score = items[i].score if detection.score is None else detection.score
            items[i] = as_candidate(replace(items[i], spans=tuple(detection.spans), score=score,
                                            error=detection.error), i)
            if not detection.ok:
                failed.append(i)
    return sorted(set(failed))


def read_candidates(path: str | Path) -> list[Candidate]:
    """Read a candidates JSONL file: one ``{"response": str, "id"?: str}`` per line (``id`` defaults to the
    1-based line number). Bad lines raise :class:`InputError` naming file, line and field."""
    candidates = []
    first_line: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        if "response" not in obj:
            raise InputError("missing required field", path=path, line=lineno, field="response")
        if not isinstance(obj["response"], str):
            raise InputError(f"must be a string, got {type(obj['response']).__name__}", path=path, line=lineno,
                             field="response")
        unknown = sorted(set(obj) - {"response", "id"})
        if unknown:
            raise InputError("unknown field (expected response, id)", path=path, line=lineno, field=unknown[0][:60])
        check_text(obj["response"], path=path, line=lineno, field="response", nonempty=True)
        cid = str(check_id(obj.get("id", lineno), path=path, line=lineno))
        if cid in first_line:
            raise InputError(f"duplicate id {cid!r} (first on line {first_line[cid]}; an id defaults to the line "
                             "number)", path=path, line=lineno, field="id")
        first_line[cid] = lineno
        candidates.append(Candidate(response=obj["response"], id=cid))
    if not candidates:
        raise InputError("no candidates (the file is empty)", path=path)
    return candidates

