"""The combiner: a LightGBM classifier of words (hallucinated or not), and how its probabilities become spans.

- :func:`fit` trains ``combiner.seeds`` boosters (seeds ``seed``, ``seed + 1``, ...; their probabilities are
  averaged: :class:`Ensemble`) on the training words with early stopping on the eval words; :func:`out_of_fold`
  refits them with the same numbers of rounds on source-disjoint folds of the training split, so every training
  word gets a probability from a model that never saw its source (the material the decision is tuned on).
- :func:`decide` turns one response's word probabilities into spans: words at or above the threshold are
  flagged; runs of flagged words separated by at most ``max_word_gap`` unflagged words become one span, from the
  first flagged word's first character to the last one's end (half-open ``[start, end)``, characters of the
  response). Span score: the mean probability of its flagged words.
- :func:`tune` picks the gap and the threshold (one per task, or one for all) that maximise span F1 as the
  project's evaluator computes it.

The boosters are saved as LightGBM's text format (``combiner.txt``, ``combiner-1.txt``, ...): plain text, no
pickle, safe to load.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.threads import usable_cores
from ragtruth_spans.core.types import TASK_TYPES, Record, Span
from ragtruth_spans.detectors.stacked.context_index import Interval
from ragtruth_spans.detectors.stacked.recipe import CombinerSection, DecisionSection

MODEL_FILE = "combiner.txt"


def _lightgbm() -> Any:
    try:
        import lightgbm
    except ImportError:
        raise InputError("the stacked detector needs LightGBM, which comes with the [detect] extra: "
                         "pip install 'ragtruth-spans[detect]'") from None
    return lightgbm


def import_lightgbm_alone() -> None:
    """Import LightGBM without its optional scikit-learn and pandas layers, for a process that only predicts with
    boosters (the CLI's ``detect``): they cost ~1.1 s of a cold start on 2 cores (scikit-learn imports SciPy's
    statistics). LightGBM's scikit-learn-style estimators then stay unusable in this process; nothing here uses
    them. A no-op when LightGBM or scikit-learn is imported already, or LightGBM is not installed."""
    if "lightgbm" in sys.modules or "sklearn" in sys.modules:
        return
    hidden = {name: sys.modules.get(name) for name in ("sklearn", "pandas")}
    sys.modules.update(dict.fromkeys(hidden))  # None: an import of either raises ImportError
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        pass  # _lightgbm() says what to install
    finally:
        for name, module in hidden.items():
            if module is None:
                del sys.modules[name]
            else:
                sys.modules[name] = module


def training_threads() -> int:
    """The cores this process may run on: the word model's LightGBM threads. ``deterministic`` with row-wise
    histograms makes the booster the same for any number of threads (tested), so this changes speed only."""
    return usable_cores()


def _params(settings: CombinerSection) -> dict[str, Any]:
    return {"objective": "binary", "learning_rate": settings.learning_rate, "num_leaves": settings.num_leaves,
              "min_data_in_leaf": settings.min_data_in_leaf, "feature_fraction": settings.feature_fraction,
              "bagging_fraction": settings.bagging_fraction, "bagging_freq": 1, "lambda_l2": settings.lambda_l2,
              "verbose": -1, "seed": settings.seed, "deterministic": True, "force_row_wise": True,
              "num_threads": training_threads()}


class Ensemble:
    """The combiner's boosters (``combiner.seeds`` of them, trained with seeds ``seed``, ``seed + 1``, ...): a word's
    probability is the mean of theirs, each booster predicting with its own rounds."""

    def __init__(self, boosters: Sequence[Any]) -> None:
        self.boosters = list(boosters)

    @property
    def rounds(self) -> list[int]:
        return [rounds_of(booster) for booster in self.boosters]

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.mean([b.predict(x, num_iteration=rounds_of(b)) for b in self.boosters], axis=0)

    def num_feature(self) -> int:
        return int(self.boosters[0].num_feature())

    def feature_importance(self, kind: str) -> np.ndarray:
        """The boosters' importances (``"gain"`` or ``"split"``) summed, each over its own rounds."""
        return np.sum([b.feature_importance(kind, iteration=rounds_of(b)) for b in self.boosters], axis=0)


def fit(x: np.ndarray, y: np.ndarray, x_eval: np.ndarray, y_eval: np.ndarray, settings: CombinerSection,
        names: Sequence[str], rounds: Sequence[int] | None = None, weight: np.ndarray | None = None) -> Ensemble:
    """``settings.seeds`` boosters trained on ``(x, y)`` (rows weighted by ``weight``, default 1), each
    early-stopped on ``(x_eval, y_eval)``, or trained exactly ``rounds[k]`` rounds."""
    return Ensemble([_fit_one(x, y, x_eval, y_eval, settings.model_copy(update={"seed": settings.seed + k}), names,
                              None if rounds is None else rounds[k], weight) for k in range(settings.seeds)])


def _fit_one(x: np.ndarray, y: np.ndarray, x_eval: np.ndarray, y_eval: np.ndarray, settings: CombinerSection,
             names: Sequence[str], rounds: int | None, weight: np.ndarray | None) -> Any:
    lgb = _lightgbm()
    train_set = lgb.Dataset(x, y, weight=weight, feature_name=list(names), free_raw_data=True)
    if rounds is not None:
        return lgb.train(_params(settings), train_set, rounds)
    eval_set = lgb.Dataset(x_eval, y_eval, reference=train_set)
    return lgb.train(_params(settings), train_set, settings.max_rounds, valid_sets=[eval_set],
                     callbacks=[lgb.early_stopping(settings.early_stopping_rounds, verbose=False)])


def rounds_of(booster: Any) -> int:
    """The rounds a booster predicts with (the early-stopping best, else all)."""
    return int(booster.best_iteration or booster.current_iteration())


def source_folds(groups: Sequence[str] | np.ndarray, folds: int, seed: int) -> np.ndarray:
    """A seeded fold number in ``[0, folds)`` per row (``groups``: one source id per row) such that rows of one source
    share a fold: the sorted distinct sources take ``permutation(sources) % folds`` in order (one mapping for the
    combiner's out-of-fold refits, the response head's cross-validation and the members' folds)."""
    sources = np.unique(np.asarray(groups))
    fold_of = dict(zip(sources, np.random.default_rng(seed).permutation(len(sources)) % folds))
    return np.array([fold_of[g] for g in groups], dtype=np.int64)


def out_of_fold(x: np.ndarray, y: np.ndarray, groups: np.ndarray, settings: CombinerSection, names: Sequence[str],
                rounds: Sequence[int], weight: np.ndarray | None = None) -> np.ndarray:
    """Probabilities of every row from ensembles fitted (``rounds[k]`` rounds for the k-th seed) on the other folds
    of a source-disjoint split (``groups``: one source id per row; folds are seeded)."""
    folds = source_folds(groups, settings.oof_folds, settings.seed)
    out = np.zeros(len(y), dtype=np.float64)
    for k in range(settings.oof_folds):
        held = folds == k
        if not held.any() or held.all():
            continue
        ensemble = fit(x[~held], y[~held], x[held], y[held], settings, names, rounds=rounds,
                       weight=None if weight is None else weight[~held])
        out[held] = ensemble.predict(x[held])
    return out


def model_files(count: int) -> list[str]:
    """The files of an ensemble of ``count`` boosters: ``combiner.txt``, then ``combiner-1.txt``, ...

    >>> model_files(3)
    ['combiner.txt', 'combiner-1.txt', 'combiner-2.txt']
    """
    return [MODEL_FILE, *(f"combiner-{k}.txt" for k in range(1, count))]


def save(ensemble: Ensemble, run_dir: Path) -> None:
    """Write each booster atomically (LightGBM's text format, the rounds it predicts with) to :func:`model_files`;
    the extra boosters of an earlier try in this directory are removed."""
    from ragtruth_spans.core.files import atomic_write_text

    names = model_files(len(ensemble.boosters))
    for booster, name in zip(ensemble.boosters, names):
        atomic_write_text(run_dir / name, booster.model_to_string(num_iteration=rounds_of(booster)))
    for stale in run_dir.glob("combiner-*.txt"):
        if stale.name not in names:
            stale.unlink()


def load(run_dir: Path, count: int = 1) -> Ensemble:
    """The saved ensemble of ``count`` boosters; a missing or damaged file is one :class:`InputError` (never an
    abort), LightGBM stays off stdout."""
    from ragtruth_spans.detectors.lightgbm_text import load_booster

    for name in model_files(count):
        if not (run_dir / name).is_file():
            raise InputError(f"not a finished stacked run (no {name})", path=run_dir)
    _lightgbm()
    return Ensemble([load_booster(run_dir / name) for name in model_files(count)])


@dataclass(frozen=True)
class Decision:
    """How word probabilities become spans: ``thresholds`` per task (key ``"*"``: every task), the gap, the
    response gate (a response whose score — the response head's probability, or without a head its highest word
    probability — is below ``response_threshold`` gets no span) and the fill (a response that passes the gate
    but has no word at its threshold gets the words at or above ``fill`` × its highest word probability)."""

    thresholds: Mapping[str, float]
    max_word_gap: int
    response_threshold: float = 0.0
    fill: float | None = None
    conflict_rule: bool = False

    def threshold(self, task: str) -> float:
        return float(self.thresholds.get(task, self.thresholds["*"]))

    def spans(self, words: Sequence[Interval], probabilities: np.ndarray, task: str,
              score: float | None = None, conflicts: np.ndarray | None = None) -> list[Span]:
        """The spans of one response of ``task`` whose response score is ``score`` (default: its highest word
        probability); none when the gate closes. With ``conflict_rule``, the words ``conflicts`` marks (the
        context contradicts them: :func:`~.features.conflicts`) are flagged whatever the gate and threshold say,
        scored at least the threshold."""
        if not len(probabilities):
            return []
        threshold = self.threshold(task)
        forced = np.asarray(conflicts, dtype=bool) if self.conflict_rule and conflicts is not None else None
        is_open = (probabilities.max() if score is None else score) >= self.response_threshold
        if forced is not None and forced.any():
            base = probabilities if is_open else np.zeros_like(probabilities)
            probabilities = np.where(forced, np.maximum(probabilities, threshold), base)
        elif not is_open:
            return []
        spans = decide(words, probabilities, threshold, self.max_word_gap)
        if not spans and self.fill is not None:
            spans = decide(words, probabilities, self.fill * float(probabilities.max()), self.max_word_gap)
        return spans

    def to_dict(self) -> dict[str, Any]:
        return {"thresholds": dict(self.thresholds), "max_word_gap": self.max_word_gap,
                "response_threshold": self.response_threshold, "fill": self.fill, "conflict_rule": self.conflict_rule}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """The decision saved in ``run_info.json``; thresholds and ``fill`` must be finite numbers in [0, 1] and
        the gap an integer >= 0 (:class:`InputError` otherwise)."""
        from ragtruth_spans.runs.run_info import check_run_values

        if not isinstance(data, Mapping):
            raise InputError("run_info.json: decision must be an object")
        thresholds = data.get("thresholds")
        if not isinstance(thresholds, Mapping) or "*" not in thresholds:
            raise InputError("run_info.json: decision.thresholds must map tasks (and '*') to thresholds")
        fill = data.get("fill")
        check_run_values({"thresholds": thresholds, "max_word_gap": data.get("max_word_gap", 0),
                          "response_threshold": data.get("response_threshold", 0.0), "fill": fill},
                         Path("run_info.json"), "decision.")
        rule = data.get("conflict_rule", False)
        if not isinstance(rule, bool):
            raise InputError("run_info.json: decision.conflict_rule must be true or false")
        return cls({str(k): float(v) for k, v in thresholds.items()}, int(data.get("max_word_gap", 0)),
                   float(data.get("response_threshold", 0.0)), None if fill is None else float(fill), rule)


def describe(decision: Decision) -> str:
    """The decision in words: thresholds, merging, gate and fill."""
    others = {t: v for t, v in decision.thresholds.items() if t != "*"}
    text = f"flag words with probability ≥ {decision.threshold('*'):g}" + (
        " (" + ", ".join(f"{t} ≥ {v:g}" for t, v in others.items()) + ")" if others else " (every task)")
    text += f", merged across ≤ {decision.max_word_gap} unflagged word(s)"
    if decision.response_threshold > 0:
        text += f"; no span below response score {decision.response_threshold:g}"
    if decision.fill is not None:
        text += f"; a response over it with no flagged word gets its words ≥ {decision.fill:g} × its top word"
    if decision.conflict_rule:
        text += "; words the context contradicts are always flagged"
    return text


def decide(words: Sequence[Interval], probabilities: np.ndarray, threshold: float, max_word_gap: int) -> list[Span]:
    """Spans of the flagged words (see the module docstring)."""
    flagged = [i for i, p in enumerate(probabilities) if p >= threshold]
    runs: list[list[int]] = []
    for i in flagged:
        if runs and i - runs[-1][-1] - 1 <= max_word_gap:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [Span(words[run[0]][0], words[run[-1]][1], score=round(float(np.mean(probabilities[run])), 6))
            for run in runs]


@dataclass(frozen=True)
class TuningInputs:
    """What decisions are tuned on: labelled responses, each with its words, word probabilities, and (for the gate)
    its response score and contradicted words."""

    records: Sequence[Record]
    words: Sequence[Sequence[Interval]]
    probabilities: Sequence[np.ndarray]
    scores: Sequence[float] | None = None
    conflicts: Sequence[np.ndarray] | None = None
    def spans(self, subset: Sequence[int], decision: Decision) -> list[list[Span]]:
        """The spans ``decision`` gives each response of ``subset``."""
        return [decision.spans(self.words[i], self.probabilities[i], self.records[i].task_type,
                               None if self.scores is None else self.scores[i],
                               None if self.conflicts is None else self.conflicts[i]) for i in subset]

    def gate_rows(self, subset: Sequence[int], decision: Decision) -> tuple[np.ndarray, np.ndarray]:
        """The character counts (:func:`~ragtruth_spans.evaluation.counts.char_rows`) of ``decision``'s spans for
        each response of ``subset`` with the gate open and with it closed (then only contradicted words are
        flagged): any gate gives a response its open row when its score reaches the gate, else its closed row."""
        from ragtruth_spans.evaluation.counts import char_rows

        records = [self.records[i] for i in subset]
        return tuple(char_rows(records, self.spans(subset, replace(decision, response_threshold=gate)))
                     for gate in (-math.inf, math.inf))  # type: ignore[return-value]

    def figures(self, subset: Sequence[int], decision: Decision) -> dict[str, dict[str, float]]:
        """:func:`~ragtruth_spans.evaluation.counts.pooled_figures` of ``decision`` over ``subset`` (what
        ``evaluate`` prints for these responses)."""
        from ragtruth_spans.evaluation.counts import pooled_figures

        return pooled_figures([self.records[i] for i in subset], self.spans(subset, decision))



def _best_threshold(rows: Mapping[float, np.ndarray], subset: list[int]) -> float:
    """The threshold of highest span F1 on ``subset`` given every threshold's character rows over all responses
    (the one tuner's tie rule: the lowest)."""
    from ragtruth_spans.training.tuning import pick_best, tuning_figures_of_rows

    grid = sorted(rows)
    figures = [tuning_figures_of_rows(rows[t][subset]) for t in grid]
    return pick_best(grid, figures, criterion="span_f1").best


def tune(records: Sequence[Record], words: Sequence[Sequence[Interval]], probabilities: Sequence[np.ndarray],
         settings: DecisionSection) -> tuple[Decision, list[dict[str, Any]]]:
    """The ungated decision of highest pooled span F1 over ``records`` (each with its words and probabilities).
    For each gap: the best single threshold, and with ``per_task`` also the best threshold of each task's
    responses alone; the candidate (gap, single or per-task) with the best pooled span F1 wins (ties: the earlier,
    so the smaller gap and the single threshold). Every figure is the one tuner's rule
    (:func:`~ragtruth_spans.training.tuning.pick_best`) over the responses' character rows, counted once per gap
    and threshold (a response's spans at a threshold do not depend on which others are scored with it). Returns
    the decision and one row per candidate."""
    from ragtruth_spans.evaluation.counts import char_rows
    from ragtruth_spans.training.tuning import check_candidates, pick_best, tuning_figures_of_rows

    check_candidates(records, settings.grid)
    inputs = TuningInputs(records, words, probabilities)
    everyone = list(range(len(records)))
    tasks = np.array([r.task_type for r in records])
    by_task = {task: np.flatnonzero(tasks == task).tolist() for task in TASK_TYPES if (tasks == task).any()} \
        if settings.per_task else {}
    candidates: list[Decision] = []
    figures: list[dict[str, float]] = []
    for gap in settings.max_word_gap:
        rows = {t: char_rows(records, inputs.spans(everyone, Decision({"*": t}, gap))) for t in settings.grid}
        thresholds = {"*": _best_threshold(rows, everyone)}
        for task, subset in by_task.items():
            thresholds[task] = _best_threshold(rows, subset)
        variants = [{"*": thresholds["*"]}, thresholds] if settings.per_task else [thresholds]
        for chosen in variants:
            own = [chosen.get(task, chosen["*"]) for task in tasks]
            candidates.append(Decision(chosen, gap))
            figures.append(tuning_figures_of_rows(np.stack([rows[t][i] for i, t in enumerate(own)])))
    choice = pick_best(candidates, figures, criterion="span_f1")
    table = [{**c.to_dict(), "span_f1": round(row["span_f1"], 6)} for c, row in zip(candidates, choice.figures)]
    return choice.best, table


def tune_gate(records: Sequence[Record], words: Sequence[Sequence[Interval]], probabilities: Sequence[np.ndarray],
              scores: Sequence[float], decision: Decision, settings: DecisionSection, table: list[dict[str, Any]],
              conflicts: Sequence[np.ndarray] | None = None) -> Decision:
    """``decision`` with the response gate (on the response ``scores``), the fill, and its thresholds scaled by one
    of ``settings.gate_threshold_scales``, of highest response F1 among those that keep span F1 within
    ``settings.gate_span_f1_tolerance`` of the ungated, unfilled decision's (ties: the earlier candidate: the
    first scale, the first fill, the lowest gate). The one tuner's rule scores them (each (scale, fill) is counted
    once with the gate open and once closed; a gate picks per response: :meth:`TuningInputs.gate_rows`); every
    candidate is appended to ``table``."""
    from ragtruth_spans.training.tuning import pick_best, tuning_figures, tuning_figures_of_rows

    inputs = TuningInputs(records, words, probabilities, scores, conflicts)
    everyone = list(range(len(records)))
    floor = tuning_figures(records, inputs.spans(everyone, decision))["span_f1"] \
        - settings.gate_span_f1_tolerance
    score_of = np.asarray(scores, dtype=float)
    candidates: list[Decision] = []
    figures: list[dict[str, float]] = []
    for scale in settings.gate_threshold_scales:
        for fill in settings.fill:
            scaled = Decision({task: round(value * scale, 6) for task, value in decision.thresholds.items()},
                              decision.max_word_gap, 0.0, fill, settings.conflict_rule)
            open_rows, closed_rows = inputs.gate_rows(everyone, scaled)
            for gate in [0.0, *settings.grid]:
                rows = np.where((score_of >= gate)[:, None], open_rows, closed_rows)
                candidates.append(replace(scaled, response_threshold=gate))
                figures.append(tuning_figures_of_rows(rows))
    choice = pick_best(candidates, figures, criterion="response_f1", admissible=lambda row: row["span_f1"] >= floor)
    table.extend({**c.to_dict(), "span_f1": round(row["span_f1"], 6), "response_f1": round(row["response_f1"], 6)}
                 for c, row in zip(candidates, choice.figures))
    if not any(row["span_f1"] >= floor for row in choice.figures):
        return decision
    return choice.best
