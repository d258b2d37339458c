"""Best-of-N answer selection by detected hallucinations (RAGTruth §6.3, Table 7).

Given several candidate responses to the same input, each with its detected spans (character offsets of
that response, half-open ``[start, end)``), :func:`select_best` picks the one the detector finds least
hallucinated. :func:`evaluate_selection` measures, on gold-labelled records, how much such a selection lowers
the hallucination rate compared with picking a model's answer at random.

Every strategy gives each candidate a score, **lower is better**:

- ``fewest-spans`` — number of non-empty detected spans (the paper's strategy);
- ``no-spans`` — as ``fewest-spans``, but it is meant to accept only a clean candidate (0 spans): when none
  exists it falls back to the fewest-spans choice and sets :attr:`Selection.fallback`;
- ``least-hallucinated-chars`` — merged hallucinated characters / response length (0.0 for an empty response);
- ``max-confidence`` — the candidate's response score (:attr:`Candidate.score`, e.g. the detector's
  ``1 - P(clean)``) when **every** candidate has one; otherwise the score of the candidate's most confident span
  (0.0 when it has no span), so the winner is the candidate whose worst span is least confident, and every span
  must then carry a ``score``.

Candidates with the best score tie; ``tie_break`` picks among them: ``"random"`` (a seeded uniform choice, as
the paper), ``"first"`` (lowest index) or ``"shortest"`` (fewest response characters, then lowest index).
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from .metrics import percentile_interval
from .schema import InputError, Record, Span, is_finite_number, iter_jsonl
from .spans import covered_length, merge_intervals

STRATEGIES: tuple[str, ...] = ("fewest-spans", "no-spans", "least-hallucinated-chars", "max-confidence")
TIE_BREAKS: tuple[str, ...] = ("random", "first", "shortest")
_TIE_TOLERANCE = 1e-12  # scores closer than this are equal (ratios of the hallucinated-characters strategy)


class SpanDetector(Protocol):
    """Anything with the :class:`ragtruth_spans.detector.Detector` ``detect`` method (``detect_batch``, returning
    objects with ``.spans``, is used instead when present)."""

    def detect(self, *, context: str, response: str, task: str, question: str | None = None) -> list[Span]: ...


@dataclass(frozen=True)
class Candidate:
    """One candidate response. ``spans`` are its detected spans (character offsets of ``response``,
    half-open); ``None`` means "not detected yet" (a detector must then be given to :func:`select_best`).
    ``score``: optional response-level hallucination score (higher = more likely hallucinated), used by
    ``max-confidence``; a detector's ``DetectionResult.score`` is stored here."""

    response: str
    spans: tuple[Span, ...] | None = None
    id: str | None = None
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "response": self.response, "score": self.score,
                "spans": None if self.spans is None else [s.to_dict() for s in self.spans]}


@dataclass
class Selection:
    """The outcome of :func:`select_best`: the chosen candidate and why it was chosen."""

    index: int                  # position of the chosen candidate in the input
    candidate: Candidate        # the chosen candidate, with its spans
    strategy: str
    scores: list[float]         # one per candidate, lower is better
    tied: list[int]             # indices that shared the best score (the chosen one among them)
    tie_break: str | None       # how the tie was broken; None when a single candidate had the best score
    fallback: bool              # ``no-spans`` only: no clean candidate, the fewest-spans choice was taken
    candidates: list[Candidate] = field(default_factory=list)  # all candidates, with their spans
    detection_failed: list[int] = field(default_factory=list)  # detector output unparsable: ranked last

    @property
    def tie_broken(self) -> bool:
        return self.tie_break is not None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "id": self.candidate.id, "response": self.candidate.response,
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
        candidate = Candidate(response=item, id=str(index))
    elif isinstance(item, Mapping):
        if not isinstance(item.get("response"), str):
            raise InputError(f"candidate {index}: 'response' must be a string", field="response")
        raw = item.get("spans")
        spans = None
        if raw is not None:
            try:
                spans = tuple(s if isinstance(s, Span) else Span.from_dict(s) for s in raw)
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"candidate {index}: bad span: {exc}", field="spans") from None
        cid, score = item.get("id"), item.get("score")
        if score is not None and not is_finite_number(score):
            raise InputError(f"candidate {index}: 'score' must be a finite number, got {score!r}", field="score")
        candidate = Candidate(response=item["response"], spans=spans, id=str(index) if cid is None else str(cid),
                              score=None if score is None else float(score))
    else:
        raise InputError(f"candidate {index}: expected a Candidate, a string or a mapping, "
                         f"got {type(item).__name__}")
    if candidate.spans is not None:
        candidate = replace(candidate, spans=tuple(sorted(candidate.spans)))
        for span in candidate.spans:
            if span.end > len(candidate.response):
                raise InputError(f"candidate {index} ({candidate.id}): span [{span.start}, {span.end}) is out of "
                                 f"range for a response of {len(candidate.response)} characters", field="spans")
    return candidate


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
    raise InputError(f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})")


def _check_choice(value: str, allowed: Sequence[str], what: str) -> None:
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r} (expected one of {', '.join(allowed)})")


def _break_tie(tied: list[int], candidates: Sequence[Candidate], tie_break: str, rng: random.Random) -> int:
    if tie_break == "random":
        return tied[rng.randrange(len(tied))]
    if tie_break == "shortest":
        return min(tied, key=lambda i: (len(candidates[i].response), i))
    return tied[0]  # "first"


def _detect(detector: SpanDetector, responses: list[str], context: str, task: str,
            question: str | None) -> list[tuple[list[Span], bool, float | None]]:
    """``(spans, parsed, score)`` of each response: one ``detect_batch`` call when the detector has it
    (``parsed`` is the result's ``parse_ok``, True when absent; ``score`` its response score, None when absent),
    else ``detect`` per response (always parsed, no response score)."""
    if hasattr(detector, "detect_batch"):
        items = [{"context": context, "response": r, "task": task, "question": question} for r in responses]
        return [(list(res.spans), bool(getattr(res, "parse_ok", True)), getattr(res, "score", None))
                for res in detector.detect_batch(items)]
    return [(list(detector.detect(context=context, response=r, task=task, question=question)), True, None)
            for r in responses]


def select_best(
    candidates: Sequence[Candidate | str | Mapping[str, Any]],
    *,
    strategy: str = "fewest-spans",
    seed: int = 0,
    rng: random.Random | None = None,
    tie_break: str = "random",
    detector: SpanDetector | None = None,
    context: str | None = None,
    task: str | None = None,
    question: str | None = None,
) -> Selection:
    """Choose the candidate with the lowest ``strategy`` score.

    ``candidates`` are :class:`Candidate` objects, response strings, or mappings with ``response`` and
    optional ``spans``/``id``. Candidates without spans are run through ``detector.detect(context=...,
    response=..., task=..., question=...)``, or one ``detector.detect_batch(items)`` call when the detector has
    it (``context`` and ``task`` are then required). A candidate whose detector output could not be parsed
    (``parse_ok`` False: no spans, but not "no hallucination") scores ``inf`` — ranked after every checked
    candidate — and is listed in :attr:`Selection.detection_failed`.

    A random tie-break draws from ``rng`` when given, else from ``random.Random(seed)``, so the result is
    deterministic. The random generator is used only when several candidates tie.
    """
    _check_choice(strategy, STRATEGIES, "strategy")
    _check_choice(tie_break, TIE_BREAKS, "tie-break")
    items = [as_candidate(c, i) for i, c in enumerate(candidates)]
    if not items:
        raise InputError("select_best needs at least one candidate")
    failed: list[int] = []
    todo = [i for i, c in enumerate(items) if c.spans is None]
    if todo:
        if detector is None:
            raise InputError("candidates without spans need a detector (pass detector=...)")
        if context is None or task is None:
            raise InputError("detecting spans needs the context and the task type (pass context= and task=)")
        detected = _detect(detector, [items[i].response for i in todo], context, task, question)
        for i, (spans, parsed, score) in zip(todo, detected):
            items[i] = as_candidate(replace(items[i], spans=tuple(spans),
                                            score=items[i].score if score is None else score), i)
            if not parsed:
                failed.append(i)
    by_response_score = strategy == "max-confidence" and all(c.score is not None for c in items)

    def score_of(candidate: Candidate) -> float:
        if by_response_score and candidate.score is not None:
            return float(candidate.score)
        return candidate_score(candidate, strategy)

    scores = [math.inf if i in failed else score_of(c) for i, c in enumerate(items)]
    best = min(scores)
    tied = [i for i, s in enumerate(scores) if s <= best + _TIE_TOLERANCE]
    index = tied[0] if len(tied) == 1 else _break_tie(tied, items, tie_break, rng or random.Random(seed))
    return Selection(index=index, candidate=items[index], strategy=strategy, scores=scores, tied=tied,
                     tie_break=tie_break if len(tied) > 1 else None,
                     fallback=strategy == "no-spans" and best > 0, candidates=items, detection_failed=failed)


# --- corpus-level evaluation --------------------------------------------------------------------------------


def source_rng(seed: int, source_id: str) -> random.Random:
    """The random generator of one source: seeded by ``"{seed}:{source_id}"`` (string seeds are hashed with
    SHA-512 by :mod:`random`, so this is stable across runs), which makes a source's pick independent of the
    other sources. The sampled random baseline uses the same generator, so a selection whose candidates all
    tie picks exactly what the random baseline picks."""
    return random.Random(f"{seed}:{source_id}")


def _rate(flags: Sequence[bool] | np.ndarray) -> float:
    return float(np.mean(flags)) if len(flags) else float("nan")


def _relative_reduction(random_rate: float, selected_rate: float) -> float | None:
    if not random_rate or math.isnan(random_rate):
        return None
    return (random_rate - selected_rate) / random_rate


def _group_sources(records: Sequence[Record], models: Sequence[str]) -> dict[str, dict[str, Record]]:
    known = sorted({r.model for r in records})
    unknown = [m for m in models if m not in known]
    if unknown:
        raise InputError(f"model(s) not in the data: {', '.join(unknown)}; known models: {', '.join(known)}")
    wanted = set(models)
    groups: dict[str, dict[str, Record]] = defaultdict(dict)
    for record in records:
        if record.model not in wanted:
            continue
        by_model = groups[record.source_id]
        if record.model in by_model:
            raise InputError(f"source {record.source_id!r} has two responses from {record.model!r} "
                             f"(ids {by_model[record.model].id!r} and {record.id!r}); expected one per model")
        by_model[record.model] = record
    return groups


def evaluate_selection(
    records: Sequence[Record],
    predictions: Mapping[str, Sequence[Span]],
    models: Sequence[str],
    strategy: str = "fewest-spans",
    seed: int = 0,
    bootstrap: int = 1000,
    *,
    tie_break: str = "random",
    response_scores: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Select one response per source among ``models`` by predicted spans and report gold hallucination rates.

    A response is *hallucinated* when its gold record has at least one span. For every source (``source_id``)
    that has a response from each model and a prediction for each of those responses, :func:`select_best`
    picks one (candidates in ``models`` order; random tie-breaks use :func:`source_rng`). Rates are over the
    sources used: ``selected`` (the picks), ``random`` (expected rate of a uniform pick, exactly: the mean over
    sources of the hallucinated share of candidates; ``sampled_hallucination_rate`` is one seeded pick),
    ``by_model`` (each model alone), ``oracle`` (a source counts only if all its candidates are hallucinated).
    ``relative_reduction`` = (random - selected) / random. ``ci`` holds percentile 95% intervals from
    ``bootstrap`` resamples of the sources (``None`` when ``bootstrap`` is 0). Sources without a response from
    a named model, or without a prediction, are skipped and counted in ``sources``. ``response_scores``
    (``{id: score}``, e.g. :func:`ragtruth_spans.evaluation.read_response_scores`) become the candidates'
    :attr:`Candidate.score`, used by ``max-confidence``.
    """
    _check_choice(strategy, STRATEGIES, "strategy")
    _check_choice(tie_break, TIE_BREAKS, "tie-break")
    models = list(models)
    if len(models) < 2:
        raise InputError(f"selection needs at least two models, got {len(models)}")
    duplicates = sorted(m for m, n in Counter(models).items() if n > 1)
    if duplicates:
        raise InputError(f"model(s) named twice: {', '.join(duplicates)}")
    if bootstrap < 0:
        raise InputError(f"bootstrap must be >= 0, got {bootstrap}")
    groups = _group_sources(records, models)

    skipped: Counter[str] = Counter()
    n_skipped = 0
    gold_rows: list[list[bool]] = []  # per used source, gold flag of each model's response (models order)
    picked: list[int] = []
    sampled: list[int] = []
    ties = fallbacks = 0
    for source_id in sorted(groups):
        by_model = groups[source_id]
        reasons = [f"missing response: {m}" for m in models if m not in by_model]
        if not reasons:
            reasons = [f"missing prediction: {m}" for m in models if by_model[m].id not in predictions]
        if reasons:
            n_skipped += 1
            skipped.update(reasons)
            continue
        candidates = [Candidate(response=by_model[m].response, spans=tuple(predictions[by_model[m].id]),
                                id=by_model[m].id, score=(response_scores or {}).get(by_model[m].id))
                      for m in models]
        try:
            selection = select_best(candidates, strategy=strategy, tie_break=tie_break,
                                    rng=source_rng(seed, source_id))
        except InputError as exc:
            raise InputError(f"source {source_id!r}: {exc}") from None
        gold_rows.append([bool(by_model[m].spans) for m in models])
        picked.append(selection.index)
        sampled.append(source_rng(seed, source_id).randrange(len(models)))
        ties += selection.tie_broken
        fallbacks += selection.fallback

    if not gold_rows:
        raise InputError(f"no source has a response and a prediction from every model ({', '.join(models)}); "
                         f"skipped {n_skipped}: " + "; ".join(f"{k} ({v})" for k, v in sorted(skipped.items())))

    gold = np.array(gold_rows, dtype=bool)                       # sources x models
    rows = np.arange(len(gold))
    selected_flags = gold[rows, np.array(picked)]
    sampled_flags = gold[rows, np.array(sampled)]
    random_share = gold.mean(axis=1)                              # expected hallucination of a uniform pick
    oracle_flags = gold.all(axis=1)

    selected_rate = _rate(selected_flags)
    random_rate = float(random_share.mean())
    report: dict[str, Any] = {
        "strategy": strategy,
        "tie_break": tie_break,
        "seed": seed,
        "models": models,
        "selected": {
            "hallucination_rate": selected_rate,
            "hallucinated": int(selected_flags.sum()),
            "chosen_by_model": {m: int(np.sum(np.array(picked) == i)) for i, m in enumerate(models)},
            "ties_broken": ties,
            "fallbacks": fallbacks,
        },
        "random": {
            "hallucination_rate": random_rate,
            "sampled_hallucination_rate": _rate(sampled_flags),
        },
        "by_model": {m: {"hallucination_rate": _rate(gold[:, i]), "hallucinated": int(gold[:, i].sum())}
                     for i, m in enumerate(models)},
        "oracle": {"hallucination_rate": _rate(oracle_flags), "hallucinated": int(oracle_flags.sum())},
        "relative_reduction": _relative_reduction(random_rate, selected_rate),
        "ci": None,
        "sources": {"total": len(groups), "used": len(gold), "skipped": n_skipped,
                    "skipped_reasons": dict(sorted(skipped.items()))},
    }
    if bootstrap:
        report["ci"] = _bootstrap_ci(selected_flags, random_share, oracle_flags, bootstrap, seed)
    return report


def _bootstrap_ci(selected: np.ndarray, random_share: np.ndarray, oracle: np.ndarray, resamples: int,
                  seed: int) -> dict[str, Any]:
    """Percentile 95% intervals over ``resamples`` resamples of the sources (with replacement)."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(selected), size=(resamples, len(selected)))
    sel = selected[idx].mean(axis=1)
    rnd = random_share[idx].mean(axis=1)
    orc = oracle[idx].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        red = np.where(rnd > 0, (rnd - sel) / rnd, np.nan)
    return {"level": 0.95, "resamples": resamples, "selected": percentile_interval(sel),
            "random": percentile_interval(rnd), "oracle": percentile_interval(orc),
            "relative_reduction": percentile_interval(red)}


def render_selection_report(report: Mapping[str, Any]):  # -> rich.table.Table
    """A rich table laid out like RAGTruth Table 7: each model alone, random, selected, oracle."""
    from rich.table import Table

    def pct(x: float | None) -> str:
        if x is None or math.isnan(x):
            return "-"
        return f"{round(100 * x, 1) + 0.0:.1f}"  # + 0.0 turns -0.0 into 0.0

    def interval(key: str) -> str:
        ci = report.get("ci") or {}
        bounds = ci.get(key)
        return "" if not bounds else f"[{pct(bounds[0])}, {pct(bounds[1])}]"

    sources = report["sources"]
    table = Table(title=f"Best-of-{len(report['models'])} selection: {report['strategy']} "
                        f"(tie-break {report['tie_break']}, seed {report['seed']}) on {sources['used']} sources "
                        f"({sources['skipped']} skipped)")
    table.add_column("Answer from")
    table.add_column("Halluc. rate %", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("Reduction vs random %", justify="right")
    random_rate = report["random"]["hallucination_rate"]
    for model in report["models"]:
        rate = report["by_model"][model]["hallucination_rate"]
        table.add_row(model, pct(rate), "", pct(_relative_reduction(random_rate, rate)),
                      end_section=model == report["models"][-1])
    table.add_row("random selection (expected)", pct(random_rate), interval("random"), "")
    table.add_row(f"random selection (seed {report['seed']})", pct(report["random"]["sampled_hallucination_rate"]),
                  "", pct(_relative_reduction(random_rate, report["random"]["sampled_hallucination_rate"])))
    table.add_row(f"selected by detector: {report['strategy']}", pct(report["selected"]["hallucination_rate"]),
                  interval("selected"),
                  pct(report["relative_reduction"]) + (f" {interval('relative_reduction')}"
                                                       if interval("relative_reduction") else ""),
                  style="bold")
    oracle = report["oracle"]["hallucination_rate"]
    table.add_row("oracle (lowest achievable)", pct(oracle), interval("oracle"),
                  pct(_relative_reduction(random_rate, oracle)), style="dim")
    return table


def read_candidates(path: str | Path) -> list[Candidate]:
    """Read a candidates JSONL file: one ``{"response": str, "id"?: str}`` per line (``id`` defaults to the
    1-based line number). Bad lines raise :class:`InputError` naming file, line and field."""
    candidates = []
    for lineno, obj in iter_jsonl(path):
        if "response" not in obj:
            raise InputError("missing required field", path=path, line=lineno, field="response")
        if not isinstance(obj["response"], str):
            raise InputError(f"must be a string, got {type(obj['response']).__name__}", path=path, line=lineno,
                             field="response")
        cid = obj.get("id", lineno)
        if not isinstance(cid, (str, int)) or isinstance(cid, bool):
            raise InputError("must be a string or an integer", path=path, line=lineno, field="id")
        candidates.append(Candidate(response=obj["response"], id=str(cid)))
    if not candidates:
        raise InputError("no candidates (the file is empty)", path=path)
    return candidates

