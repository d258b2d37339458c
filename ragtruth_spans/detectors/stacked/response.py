"""The response head: a second, small LightGBM that says whether a **response** holds a hallucination.

The word combiner answers "is this word hallucinated?"; a gate, a selector and AUROC need one number per response.
The head reads per-response aggregates (:data:`RESPONSE_FEATURES`): statistics of the response's word
probabilities (max, mean, top-k, share above fixed levels and above the decision threshold), the spans the decision
makes (count, share of characters), support aggregates of the word columns (unsupported content words, numbers and
names the context lacks, copied n-grams, sentence similarity, conflict signals), the task and the lengths. It is
trained on the training responses' **out-of-fold** word probabilities (the probabilities detection would give a
response it never saw), early-stopped by source-disjoint cross-validation, and its probability is calibrated with a
Platt scaling fitted on out-of-fold responses. The calibrated probability is ``Detection.score``.

The model is saved as LightGBM's text format (``response_head.txt``); the calibration lives in ``run_info.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.intervals import covered_length
from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.detectors.stacked.columns import ItemColumns
from ragtruth_spans.detectors.stacked.combiner import Decision, _lightgbm, decide, source_folds
from ragtruth_spans.detectors.stacked.recipe import ResponseSection

HEAD_FILE = "response_head.txt"
LEVELS = (0.1, 0.2, 0.3, 0.5)
CONFLICTS = ("swap", "swap_one_side", "negation_added", "negation_dropped")
LATER_CONFLICTS = ("polarity", "contrast_restated", "role_swap", "number_near")
"""Conflict columns the head counts that were added later (appended after the others, so older heads keep their
column order)."""
SOFT_SUPPORT = ("soft_min", "soft_low_words", "soft_low_share", "sentence_soft_min", "soft_mean")
"""Aggregates of the content words' soft support (their tokens' best cosine with the context's, MiniLM):
the least supported word and sentence, the words and share under 0.5, the mean."""
SOFT_LOW = 0.5
RESPONSE_FEATURES: tuple[str, ...] = (
    "p_max", "p_mean", "p_top3", "p_top10", "p_std", *(f"p_share_{level}" for level in LEVELS),
    "flagged_words", "log_flagged_words", "spans", "span_char_share",
    "unsupported_share", "unsupported_words", "unsupported_numbers", "unsupported_names", "false_keys",
    "ngram_mean", "ngram_4_share", "fuzzy_mean", "fuzzy_low", "cosine_min", "cosine_mean", "sentence_unsupported_max",
    *(f"{name}_count" for name in CONFLICTS),
    "log_response_words", "log_context_words", *(f"task_{task}" for task in TASK_TYPES),
    "contradicted_words", *(f"{name}_count" for name in LATER_CONFLICTS),
    *SOFT_SUPPORT,
)
"""Column names of :func:`response_features`, in order. Columns are only ever appended: a head trained on a
shorter list reads its prefix (:func:`head_columns`)."""


def response_features(columns: ItemColumns, probabilities: np.ndarray, names: Sequence[str], *, threshold: float,
                      spans: int, flagged_chars: int, response_chars: int, task: str) -> np.ndarray:
    """One response's row of :data:`RESPONSE_FEATURES` from its word columns (``names`` name them), its word
    probabilities, the decision's ``threshold`` and what the decision flagged (``spans`` spans covering
    ``flagged_chars`` of ``response_chars`` characters)."""
    out = np.zeros(len(RESPONSE_FEATURES), dtype=np.float64)
    out[RESPONSE_FEATURES.index(f"task_{task}")] = 1.0
    p = np.asarray(probabilities, dtype=np.float64)
    if not len(p):
        return out
    m = columns.matrix
    col = {name: m[:, i].astype(np.float64) for i, name in enumerate(names)}
    content = 1.0 - col["stop_word"]
    unsupported = (1.0 - col["stem_in_context"]) * content
    top = np.sort(p)[::-1]
    flagged = float((p >= threshold).sum())
    values = {
        "p_max": top[0], "p_mean": p.mean(), "p_top3": top[:3].mean(), "p_top10": top[:10].mean(), "p_std": p.std(),
        **{f"p_share_{level}": float((p >= level).mean()) for level in LEVELS},
        "flagged_words": flagged, "log_flagged_words": math.log1p(flagged), "spans": float(spans),
        "span_char_share": flagged_chars / max(response_chars, 1),
        "unsupported_share": unsupported.sum() / max(content.sum(), 1.0), "unsupported_words": unsupported.sum(),
        "unsupported_numbers": (col["is_number"] * (1.0 - col["number_in_context"])).sum(),
        "unsupported_names": (col["capitalised"] * (1.0 - col["in_context"])).sum(),
        "false_keys": col["false_key"].sum(),
        "ngram_mean": col["ngram"].mean(), "ngram_4_share": float((col["ngram"] >= 4).mean()),
        "fuzzy_mean": col["fuzzy"].mean(), "fuzzy_low": float((col["fuzzy"] < 0.7).sum()),
        "cosine_min": col["sentence_cosine"].min(), "cosine_mean": col["sentence_cosine"].mean(),
        "sentence_unsupported_max": col["sentence_unsupported"].max(),
        **{f"{name}_count": col[name].sum() for name in CONFLICTS},
        "log_response_words": col["log_response_words"][0], "log_context_words": col["log_context_words"][0],
        "contradicted_words": float(columns.contradicted().sum()),
        **{f"{name}_count": col[name].sum() for name in LATER_CONFLICTS},
        **_soft_support(col),
    }
    for name, value in values.items():
        out[RESPONSE_FEATURES.index(name)] = value
    return out


def _soft_support(col: Mapping[str, np.ndarray]) -> dict[str, float]:
    """:data:`SOFT_SUPPORT` of one response's word columns (a response of stop words only counts as supported)."""
    content = col["stop_word"] < 0.5
    soft = col["soft_support"][content] if content.any() else np.ones(1)
    return {"soft_min": float(soft.min()), "soft_low_words": float((soft < SOFT_LOW).sum()),
            "soft_low_share": float((soft < SOFT_LOW).mean()),
            "sentence_soft_min": float(col["sentence_soft_support"].min()), "soft_mean": float(soft.mean())}


def head_matrix(columns: Sequence[ItemColumns], probabilities: Sequence[np.ndarray], names: Sequence[str],
                decision: Decision, tasks: Sequence[str], responses: Sequence[str]) -> np.ndarray:
    """``(responses, len(RESPONSE_FEATURES))``: :func:`response_features` of every response, with what the
    ungated, unfilled ``decision`` flags in it."""
    rows = []
    for cols, p, task, response in zip(columns, probabilities, tasks, responses):
        spans = decide(cols.words, p, decision.threshold(task), decision.max_word_gap) if len(p) else []
        rows.append(response_features(cols, p, names, threshold=decision.threshold(task), spans=len(spans),
                                      flagged_chars=covered_length([(s.start, s.end) for s in spans]),
                                      response_chars=len(response), task=task))
    return np.stack(rows) if rows else np.zeros((0, len(RESPONSE_FEATURES)))


def _params(settings: ResponseSection) -> dict[str, Any]:
    return {"objective": "binary", "learning_rate": settings.learning_rate, "num_leaves": settings.num_leaves,
            "min_data_in_leaf": settings.min_data_in_leaf, "feature_fraction": settings.feature_fraction,
            "bagging_fraction": 0.8, "bagging_freq": 1, "lambda_l2": settings.lambda_l2, "verbose": -1,
            "seed": settings.seed, "deterministic": True, "force_row_wise": True, "num_threads": 1}


def fit_head(x: np.ndarray, y: np.ndarray, groups: Sequence[str], settings: ResponseSection
             ) -> tuple[Any, np.ndarray, int]:
    """``(booster, out_of_fold, rounds)``: the number of rounds is the one of best mean log-loss over
    source-disjoint cross-validation (``settings.folds`` folds); ``out_of_fold`` holds each row's probability
    from the fold model that did not see its source; the booster is refitted on every row with that many rounds."""
    lgb = _lightgbm()
    problem = cross_validation_problem(y, groups)
    if problem is not None:
        raise HeadNotFitted(problem)
    data = lgb.Dataset(x, y.astype(np.float64), feature_name=list(RESPONSE_FEATURES), free_raw_data=False)
    fold = source_folds(groups, settings.folds, settings.seed)
    splits = [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(settings.folds)
              if (fold == k).any() and (fold != k).any()]
    try:
        result = lgb.cv(_params(settings), data, num_boost_round=settings.max_rounds, folds=splits,
                        callbacks=[lgb.early_stopping(settings.early_stopping_rounds, verbose=False)],
                        return_cvbooster=True, stratified=False)
        rounds = len(next(iter(v for k, v in result.items() if k.endswith("-mean"))))
        out_of_fold = np.zeros(len(y), dtype=np.float64)
        for (_, held), booster in zip(splits, result["cvbooster"].boosters):
            out_of_fold[held] = booster.predict(x[held], num_iteration=rounds)
        booster = lgb.train(_params(settings), lgb.Dataset(x, y.astype(np.float64),
                                                           feature_name=list(RESPONSE_FEATURES)), rounds)
    except (ValueError, lgb.basic.LightGBMError) as exc:  # e.g. a fold left with no row after bagging
        raise HeadNotFitted(f"LightGBM could not cross-validate it on {len(y)} responses of {len(set(groups))} "
                            f"sources ({str(exc).strip().splitlines()[0][:120]})") from None
    return booster, out_of_fold, rounds


class HeadNotFitted(Exception):
    """The response head cannot be cross-validated on these training responses; the message is the reason the
    run records (``response_head_dropped``) when it goes on without a head."""


def cross_validation_problem(y: np.ndarray, groups: Sequence[str]) -> str | None:
    """Why the head cannot be cross-validated by source on training responses with labels ``y`` from sources
    ``groups`` (None when it can): no response, a single source (one document with many answers: no fold could
    hold out a source), or a single class."""
    if len(y) == 0:
        return "no training response to fit it on"
    if len(set(groups)) < 2:
        return (f"all {len(y)} training responses share one source: no source-disjoint cross-validation (give "
                "the records several sources, or set response: null)")
    if len(set(np.asarray(y).tolist())) < 2:
        return "one class only among the training responses"
    return None


@dataclass(frozen=True)
class Calibration:
    """Platt scaling of the head's probability: ``sigmoid(a * logit(p) + b)`` (monotone: ranks are kept)."""

    a: float = 1.0
    b: float = 0.0

    def __call__(self, p: np.ndarray) -> np.ndarray:
        q = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
        return 1.0 / (1.0 + np.exp(-(self.a * np.log(q / (1 - q)) + self.b)))

    @classmethod
    def fit(cls, p: np.ndarray, y: np.ndarray) -> Calibration:
        """The Platt scaling of highest likelihood of labels ``y`` given probabilities ``p``; the identity when
        that scaling would not keep the order (one class only, or a slope that is not positive — tiny data)."""
        from sklearn.linear_model import LogisticRegression

        q = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
        if len(set(np.asarray(y).tolist())) < 2:
            return cls()
        model = LogisticRegression(C=1e6, max_iter=1000).fit(np.log(q / (1 - q))[:, None], np.asarray(y, dtype=int))
        a, b = float(model.coef_[0, 0]), float(model.intercept_[0])
        return cls(a, b) if math.isfinite(a) and math.isfinite(b) and a > 0 else cls()

    def to_dict(self) -> dict[str, float]:
        return {"a": self.a, "b": self.b}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Calibration:
        try:
            a, b = float(data["a"]), float(data["b"])
        except (KeyError, TypeError, ValueError):
            raise InputError("run_info.json: response.calibration needs numbers a and b") from None
        if not (math.isfinite(a) and math.isfinite(b)) or a <= 0:
            raise InputError("run_info.json: response.calibration needs finite a > 0 and b")
        return cls(a, b)


def reliability(scores: np.ndarray, labels: np.ndarray, bins: int = 10) -> tuple[list[dict[str, Any]], float]:
    """``(table, ECE)``: per equal-width score bin, the responses, their mean score and the observed share of
    hallucinated ones; ECE = Σ (responses in bin / all) · |mean score − observed share|."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    table, ece = [], 0.0
    which = np.minimum((scores * bins).astype(int), bins - 1)
    for k in range(bins):
        inside = which == k
        if not inside.any():
            continue
        mean, observed = float(scores[inside].mean()), float(labels[inside].mean())
        ece += inside.sum() / max(len(scores), 1) * abs(mean - observed)
        table.append({"bin": f"[{k / bins:.1f}, {(k + 1) / bins:.1f})", "responses": int(inside.sum()),
                      "mean_score": round(mean, 4), "hallucinated_share": round(observed, 4)})
    return table, round(ece, 4)


def save(booster: Any, run_dir: Path, rounds: int) -> None:
    """Write ``response_head.txt`` atomically (LightGBM's text format)."""
    from ragtruth_spans.core.files import atomic_write_text

    atomic_write_text(run_dir / HEAD_FILE, booster.model_to_string(num_iteration=rounds))


def discard(run_dir: Path) -> None:
    """Remove ``response_head.txt`` from a run trained without a head (dropped, or ``response: null``), so a
    head left by an earlier try in the directory is neither in the manifest nor mistaken for this run's."""
    (run_dir / HEAD_FILE).unlink(missing_ok=True)


def load(run_dir: Path) -> Any:
    """The head of a finished run (a one-line error when the file is missing or unreadable)."""
    from ragtruth_spans.detectors.lightgbm_text import load_booster

    path = run_dir / HEAD_FILE
    if not path.is_file():
        raise InputError(f"not a finished stacked run (no {HEAD_FILE})", path=run_dir)
    booster = load_booster(path)
    if list(booster.feature_name()) != list(RESPONSE_FEATURES[:booster.num_feature()]):
        raise InputError(f"the response head reads columns {booster.feature_name()[:3]}... that this version does "
                         "not compute in that order: re-train the run", path=path)
    return booster


def head_columns(booster: Any, x: np.ndarray) -> np.ndarray:
    """The columns of ``x`` (:data:`RESPONSE_FEATURES`) that ``booster`` reads: all of them, or the prefix an older
    head was trained on."""
    return x[:, :booster.num_feature()]


@dataclass
class TrainedHead:
    """A fitted head: its booster and rounds, the calibration, and the calibrated score of every response it was
    built from (out-of-fold for training responses, from the full head for eval responses)."""

    booster: Any
    rounds: int
    calibration: Calibration
    scores: np.ndarray
    labels: np.ndarray
    importance: dict[str, float]
    fitted_on: dict[str, int]
    """Responses the head learned from, by origin (``real``, ``augmented``, ``extra``)."""

    def info(self, tuned: Sequence[int], records: Sequence[Any]) -> dict[str, Any]:
        """What ``run_info.json`` records: rounds, calibration, AUROC, reliability table and ECE over the
        ``tuned`` responses (real out-of-fold training + eval), feature gains."""
        from sklearn.metrics import roc_auc_score

        y, s = self.labels[list(tuned)], self.scores[list(tuned)]
        table, ece = reliability(s, y)
        auroc = float(roc_auc_score(y, s)) if len(set(y.tolist())) == 2 else None
        return {"features": list(RESPONSE_FEATURES), "rounds": self.rounds,
                "calibration": self.calibration.to_dict(), "responses": len(tuned), "fitted_on": self.fitted_on,
                "auroc": None if auroc is None else round(auroc, 4), "ece": ece, "reliability": table,
                "feature_gain": self.importance}


def train_head(settings: ResponseSection, decision: Decision, names: Sequence[str], records: Sequence[Any],
               columns: Sequence[ItemColumns], probabilities: Sequence[np.ndarray], n_train: int) -> TrainedHead:
    """Fit the head on the first ``n_train`` responses (training; their word probabilities out of fold; augmented
    ones only with ``settings.augmented``, extra training-only ones only with ``settings.extra``), score the rest
    (eval) with it, and calibrate on the real out-of-fold training responses plus the eval ones."""
    from ragtruth_spans.training.data import record_origin

    x = head_matrix(columns, probabilities, names, decision, [r.task_type for r in records],
                    [r.response for r in records])
    y = np.array([r.hallucinated for r in records], dtype=np.int8)
    origin = [record_origin(r) for r in records]
    kinds = {"real", *(["augmented"] if settings.augmented else []), *(["extra"] if settings.extra else [])}
    fit_rows = [i for i in range(n_train) if origin[i] in kinds]
    booster, out_of_fold, rounds = fit_head(x[fit_rows], y[fit_rows], [records[i].source_id for i in fit_rows],
                                            settings)
    raw = np.zeros(len(records), dtype=np.float64)
    raw[fit_rows] = out_of_fold
    fitted = set(fit_rows)
    rest = [i for i in range(len(records)) if i not in fitted]
    if rest:
        raw[rest] = booster.predict(x[rest], num_iteration=rounds)
    real = [i for i in range(len(records)) if origin[i] == "real"]
    calibration = Calibration.fit(raw[real], y[real])
    gain = booster.feature_importance("gain", iteration=rounds)
    importance = {name: round(float(v), 1) for name, v in sorted(zip(RESPONSE_FEATURES, gain), key=lambda kv: -kv[1])}
    fitted_on = {kind: sum(origin[i] == kind for i in fit_rows) for kind in sorted(kinds)}
    return TrainedHead(booster, rounds, calibration, calibration(raw), y, importance, fitted_on)


def keep_head(head_scores: Sequence[float], word_max: Sequence[float], labels: Sequence[bool]
              ) -> tuple[bool, dict[str, Any] | None]:
    """Whether the head ranks the tuning responses (out-of-fold training + eval) better than their highest word
    probability does — the score a run without a head gives — by AUROC; with the two AUROCs when it does not
    (a head fitted on a few dozen responses is a constant)."""
    from sklearn.metrics import roc_auc_score

    if len(set(labels)) < 2:
        return False, {"reason": "one class only among the tuning responses"}
    head_auroc, word_auroc = roc_auc_score(labels, head_scores), roc_auc_score(labels, word_max)
    if head_auroc > word_auroc:
        return True, None
    return False, {"reason": f"out-of-fold AUROC {head_auroc:.3f} is not above the top word probability's "
                             f"{word_auroc:.3f}", "auroc_head": round(float(head_auroc), 4),
                   "auroc_word_max": round(float(word_auroc), 4)}
