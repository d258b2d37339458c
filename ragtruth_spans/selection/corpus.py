"""Measure best-of-N selection on a labelled corpus (RAGTruth §6.3, Table 7).

For every source (``source_id``) that has one response from each of the named models and a prediction for each
of them, :func:`~ragtruth_spans.selection.select.select_best` picks one response by the predicted spans. A response
is *hallucinated* when its gold record has at least one span. The report compares the hallucination rate of the
picks with each model alone, with a uniform random pick, and with the oracle (a source counts only if all its
candidates are hallucinated).

A prediction whose detector failed (its line has an ``error``) is never counted as clean: that candidate is ranked
after every judged one, the number of such candidates is reported (``selected.detector_errors``), and a source where
no candidate could be judged is skipped with the reason "no candidate could be judged".
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.evaluation.bootstrap import CI_LEVEL, bootstrap_sums, percentile_interval
from ragtruth_spans.selection.select import DEFAULT_STRATEGY, STRATEGIES, TIE_BREAKS, Candidate, select_best


def source_rng(seed: int, source_id: str) -> random.Random:
    """The random generator of one source: seeded by ``"{seed}:{source_id}"`` (string seeds are hashed with
    SHA-512 by :mod:`random`, so this is stable across runs), which makes a source's pick independent of the
    other sources. The sampled random baseline uses the same generator, so a selection whose candidates all
    tie picks exactly what the random baseline picks."""
    return random.Random(f"{seed}:{source_id}")


def relative_reduction(random_rate: float, selected_rate: float) -> float | None:
    """``(random - selected) / random``; None when the random rate is 0 or undefined."""
    if not random_rate or math.isnan(random_rate):
        return None
    return (random_rate - selected_rate) / random_rate


@dataclass
class SelectionReport:
    """The outcome of :func:`evaluate_selection`; rates are over the sources used.

    ``selected``: the picks' ``hallucination_rate``, ``hallucinated`` count, ``chosen_by_model``, ``ties_broken``
    and ``fallbacks``. ``random``: the expected rate of a uniform pick (exactly: the mean over sources of the
    hallucinated share of candidates) and ``sampled_hallucination_rate`` (one seeded pick). ``by_model``: each
    model alone. ``oracle``: the lowest achievable rate. ``relative_reduction`` = (random - selected) / random.
    ``ci``: percentile 95 % intervals from resampling the sources, or None. ``sources``: ``total``, ``used``,
    ``skipped`` and ``skipped_reasons``.
    """

    strategy: str
    tie_break: str
    seed: int
    models: list[str]
    selected: dict[str, Any]
    random: dict[str, Any]
    by_model: dict[str, dict[str, Any]]
    oracle: dict[str, Any]
    relative_reduction: float | None
    ci: dict[str, Any] | None
    sources: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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


def _check_arguments(models: Sequence[str], strategy: str, tie_break: str, bootstrap: int) -> None:
    check_choice(strategy, STRATEGIES, "strategy")
    check_choice(tie_break, TIE_BREAKS, "tie-break")
    if len(models) < 2:
        raise InputError(f"selection needs at least two models, got {len(models)}")
    duplicates = sorted(m for m, n in Counter(models).items() if n > 1)
    if duplicates:
        raise InputError(f"model(s) named twice: {', '.join(duplicates)}")
    if bootstrap < 0:
        raise InputError(f"bootstrap must be >= 0, got {bootstrap}")


@dataclass
class _Picks:
    gold: list[list[bool]]  # per used source, the gold flag of each model's response (models order)
    picked: list[int]
    sampled: list[int]
    ties: int
    fallbacks: int
    detector_errors: int
    skipped: Counter
    n_skipped: int


def _pick_per_source(groups: Mapping[str, Mapping[str, Record]], predictions: Mapping[str, Sequence[Span]],
                     models: Sequence[str], strategy: str, seed: int, tie_break: str,
                     response_scores: Mapping[str, float], errors: Mapping[str, str]) -> _Picks:
    picks = _Picks(gold=[], picked=[], sampled=[], ties=0, fallbacks=0, detector_errors=0, skipped=Counter(),
                   n_skipped=0)
    for source_id in sorted(groups):
        by_model = groups[source_id]
        reasons = [f"missing response: {m}" for m in models if m not in by_model]
        if not reasons:
            reasons = [f"missing prediction: {m}" for m in models if by_model[m].id not in predictions]
        if reasons:
            picks.n_skipped += 1
            picks.skipped.update(reasons)
            continue
        candidates = [Candidate(response=by_model[m].response, spans=tuple(predictions[by_model[m].id]),
                                id=by_model[m].id, score=response_scores.get(by_model[m].id),
                                error=errors.get(by_model[m].id)) for m in models]
        try:
            selection = select_best(candidates, strategy=strategy, tie_break=tie_break,
                                    rng=source_rng(seed, source_id))
        except InputError as exc:
            raise InputError(f"source {source_id!r}: {exc}") from None
        if selection.no_judgement or selection.index is None:
            picks.n_skipped += 1
            picks.skipped["no candidate could be judged (detector errors)"] += 1
            continue
        picks.detector_errors += len(selection.detection_failed)
        picks.gold.append([bool(by_model[m].spans) for m in models])
        picks.picked.append(selection.index)
        picks.sampled.append(source_rng(seed, source_id).randrange(len(models)))
        picks.ties += selection.tie_broken
        picks.fallbacks += selection.fallback
    if not picks.gold:
        raise InputError(f"no source has a response and a prediction from every model ({', '.join(models)}); "
                         f"skipped {picks.n_skipped}: "
                         + "; ".join(f"{k} ({v})" for k, v in sorted(picks.skipped.items())))
    return picks


def evaluate_selection(
    records: Sequence[Record],
    predictions: Mapping[str, Sequence[Span]],
    models: Sequence[str],
    strategy: str = DEFAULT_STRATEGY,
    seed: int = 0,
    bootstrap: int = 1000,
    *,
    tie_break: str = "random",
    response_scores: Mapping[str, float] | None = None,
    errors: Mapping[str, str] | None = None,
) -> SelectionReport:
    """Select one response per source among ``models`` by predicted spans and report gold hallucination rates
    (see :class:`SelectionReport`). Candidates are in ``models`` order; random tie-breaks use :func:`source_rng`.
    Sources without a response from a named model, or without a prediction, are skipped and counted.
    ``response_scores`` (``{id: score}``) become the candidates' :attr:`Candidate.score`, used by
    ``max-confidence``. ``errors`` (``{id: error}``): predictions the detector could not judge (see the module
    docstring)."""
    models = list(models)
    _check_arguments(models, strategy, tie_break, bootstrap)
    groups = _group_sources(records, models)
    if strategy == "auto":  # one strategy for the whole corpus, named in the report
        ids = [r.id for group in groups.values() for r in group.values()]
        strategy = "max-confidence" if ids and all(i in (response_scores or {}) for i in ids) else "fewest-spans"
    picks = _pick_per_source(groups, predictions, models, strategy, seed, tie_break, response_scores or {},
                             errors or {})

    gold = np.array(picks.gold, dtype=bool)                       # sources x models
    rows = np.arange(len(gold))
    selected_flags = gold[rows, np.array(picks.picked)]
    random_share = gold.mean(axis=1)                              # expected hallucination of a uniform pick
    oracle_flags = gold.all(axis=1)
    selected_rate, random_rate = float(selected_flags.mean()), float(random_share.mean())
    return SelectionReport(
        strategy=strategy, tie_break=tie_break, seed=seed, models=models,
        selected={"hallucination_rate": selected_rate, "hallucinated": int(selected_flags.sum()),
                  "chosen_by_model": {m: int(np.sum(np.array(picks.picked) == i)) for i, m in enumerate(models)},
                  "ties_broken": picks.ties, "fallbacks": picks.fallbacks,
                  "detector_errors": picks.detector_errors},
        random={"hallucination_rate": random_rate,
                "sampled_hallucination_rate": float(gold[rows, np.array(picks.sampled)].mean())},
        by_model={m: {"hallucination_rate": float(gold[:, i].mean()), "hallucinated": int(gold[:, i].sum())}
                  for i, m in enumerate(models)},
        oracle={"hallucination_rate": float(oracle_flags.mean()), "hallucinated": int(oracle_flags.sum())},
        relative_reduction=relative_reduction(random_rate, selected_rate),
        ci=_bootstrap_ci(selected_flags, random_share, oracle_flags, bootstrap, seed) if bootstrap else None,
        sources={"total": len(groups), "used": len(gold), "skipped": picks.n_skipped,
                 "skipped_reasons": dict(sorted(picks.skipped.items()))})


def _bootstrap_ci(selected: np.ndarray, random_share: np.ndarray, oracle: np.ndarray, resamples: int,
                  seed: int) -> dict[str, Any]:
    """Percentile 95 % intervals over ``resamples`` resamples of the sources (with replacement)."""
    values = np.column_stack([selected, random_share, oracle]).astype(float)
    sums, _ = bootstrap_sums(values, resamples, seed)
    sel, rnd, orc = (sums / len(values)).T
    with np.errstate(divide="ignore", invalid="ignore"):
        red = np.where(rnd > 0, (rnd - sel) / rnd, np.nan)
    return {"level": CI_LEVEL, "resamples": resamples, "selected": percentile_interval(sel),
            "random": percentile_interval(rnd), "oracle": percentile_interval(orc),
            "relative_reduction": percentile_interval(red)}
