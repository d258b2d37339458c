"""``ragtruth-spans train`` for the stacked family: members, columns, combiner, decision — one run directory.

1. **Members** (:func:`.members.member_scores`) trained here (``members[].recipe``) are trained ``folds`` times on
   source-disjoint parts of the training split, each scoring the part it did not see (out-of-fold scores for the
   combiner's training rows), then once on the whole split (``members/<name>/full``, the one detection uses; it
   scores the eval split). Members used as they are (``members[].detector``) score both splits directly.
2. **Columns** (:func:`build_columns`, :mod:`.columns`) of every training and eval response; word labels
   (:func:`word_matrix`): a word is hallucinated when it shares a character with a gold span.
3. **Combiner** (:mod:`.combiner`): LightGBM, early-stopped on the eval split (stage ``boosting``); out-of-fold
   probabilities of the training words from ``combiner.oof_folds`` source-disjoint refits (``out_of_fold``).
4. **Decision** (:func:`tuning_set`, :func:`.combiner.tune`): gap and thresholds tuned on the out-of-fold training
   probabilities plus the eval split.
5. **Response head and gate** (:func:`fit_response_head`, :func:`.combiner.tune_gate`): the head, kept only when it
   ranks responses better than their top word probability, and the gate on its scores.

Writes ``combiner.txt``, ``members/``, ``recipe.yaml`` and ``run_info.json`` (columns, rounds, decision, tuning
table, feature importances, counts, seconds and peak RSS per stage: :class:`StageCosts`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.logs import in_chunks
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import DetectItem, Detector
from ragtruth_spans.detectors.shared.encoder_runtime import runtime_for_build
from ragtruth_spans.detectors.stacked import combiner, response
from ragtruth_spans.detectors.stacked.columns import (
    ColumnBuilder,
    build_encoder,
)
from ragtruth_spans.detectors.stacked.features import BASE_FEATURES
from ragtruth_spans.detectors.stacked.members import Scores, member_scores
from ragtruth_spans.detectors.stacked.recipe import StackedRecipe
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.data import RecordStats, record_origin, record_weight, unlocated_words
from ragtruth_spans.training.run import TrainResult
from ragtruth_spans.training.skeleton import data_record, select_data, trained_on

logger = logging.getLogger(__name__)

def word_labels(record: Record, words: Sequence[tuple[int, int]], matrix: np.ndarray | None = None,
                unlocated: str = "left_out") -> np.ndarray:
    """1 for each word sharing a character with a gold span of ``record``, else 0. A record labelled hallucinated
    without spans (``record.unlocated``) read with ``unlocated="absent"`` marks instead its content words whose
    stem its context lacks (``matrix``: the words' feature rows); ``left_out`` gives 0s (its words then get weight
    0: :func:`word_matrix`)."""
    if record.unlocated and unlocated == "absent" and matrix is not None:
        absent = (matrix[:, BASE_FEATURES.index("stem_in_context")] == 0) & \
            (matrix[:, BASE_FEATURES.index("stop_word")] == 0)
        return absent.astype(np.int8)
    return np.array([any(s.start < b and a < s.end for s in record.spans) for a, b in words], dtype=np.int8)


def _columns(builder: ColumnBuilder, records: Sequence[Record], member_scores: dict[str, Scores], stage: str,
             chunk: int = 64) -> list[Any]:
    """:meth:`ColumnBuilder.build` of ``records`` in chunks, with progress
    (:func:`~ragtruth_spans.core.logs.in_chunks`)."""
    def build(at: int, part: Sequence[Record]) -> list[Any]:
        return builder.build([DetectItem.of(r) for r in part],
                             {k: v[at:at + len(part)] for k, v in member_scores.items()})

    return in_chunks(records, build, desc=f"stacked: {stage}", log=logger, chunk=chunk)


def origins(records: Sequence[Record]) -> str:
    """``"1031 real + 533 augmented + 1175 extra"``: training records by where they came from."""
    counts = Counter(record_origin(r) for r in records)
    return " + ".join(f"{counts[o]} {o}" for o in ("real", "augmented", "extra") if counts[o] or o == "real")


@dataclass(frozen=True)
class WordMatrix:
    """The combiner's rows: one per word, training (``x``, ``y``, source ``groups``, ``weight`` or None when every
    weight is 1) and eval (``x_eval``, ``y_eval``)."""

    x: np.ndarray
    y: np.ndarray
    x_eval: np.ndarray
    y_eval: np.ndarray
    groups: np.ndarray
    weight: np.ndarray | None


@dataclass(frozen=True)
class TuningSet:
    """Every response (training first, then eval) with its columns and word probabilities (out of fold for
    training), and ``real``: the indices decisions are tuned on (real training responses and the whole eval
    split, which holds ``data.synth``'s generated held-out records, if any)."""

    records: list[Record]
    columns: list[Any]
    probabilities: list[np.ndarray]
    n_train: int
    real: list[int]

    @property
    def tuned_records(self) -> list[Record]:
        return [self.records[i] for i in self.real]

    @property
    def tuned_words(self) -> list[Any]:
        return [self.columns[i].words for i in self.real]

    @property
    def tuned_probabilities(self) -> list[np.ndarray]:
        return [self.probabilities[i] for i in self.real]


@dataclass
class HeadOutcome:
    """The response head kept (None: no head), why it was dropped (None: kept or not asked for), and the response
    scores the gate is tuned on (the head's, else each response's highest word probability)."""

    head: Any
    dropped: dict[str, Any] | None
    scores: list[float]


@dataclass
class StageCosts:
    """Seconds per stage, and the process's peak RSS in MB at the end of each stage (a high-water mark: the stage
    where it rises is the one that needed the memory)."""

    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_mb: dict[str, int] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Add the seconds the block takes to ``seconds[name]``; the peak RSS after it to ``peak_rss_mb[name]``."""
        import resource

        tick = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - tick
            self.peak_rss_mb[name] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)

    def record(self) -> dict[str, Any]:
        return {"seconds": {k: round(v, 1) for k, v in self.seconds.items()}, "peak_rss_mb": dict(self.peak_rss_mb)}


def build_columns(recipe: StackedRecipe, detectors: dict[str, Detector], train_records: Sequence[Record],
                  eval_records: Sequence[Record], on_train: dict[str, Scores], on_eval: dict[str, Scores]
                  ) -> tuple[ColumnBuilder, list[Any], list[Any]]:
    """The column builder of ``recipe.features`` and the columns of every training and eval response."""
    runtime = runtime_for_build(recipe.features.precision, None)
    builder = ColumnBuilder(build_encoder(recipe.features.encoder, runtime=runtime,
                                          layers=recipe.features.encoder_layers), detectors,
                            drop=recipe.features.drop,
                            token_support=recipe.features.token_support)
    train_cols = _columns(builder, train_records, on_train, "columns (training)")
    eval_cols = _columns(builder, eval_records, on_eval, "columns (eval)")
    return builder, train_cols, eval_cols


def word_matrix(recipe: StackedRecipe, train_records: Sequence[Record], train_cols: Sequence[Any],
                eval_records: Sequence[Record], eval_cols: Sequence[Any]) -> WordMatrix:
    """The words of every response as combiner rows, labelled by :func:`word_labels`."""
    weight = np.concatenate([[record_weight(r, recipe.data) if not r.unlocated
                              or unlocated_words(r, recipe.data) != "left_out" else 0.0] * len(c.words)
                             for r, c in zip(train_records, train_cols)])
    y = np.concatenate([word_labels(r, c.words, c.matrix, unlocated_words(r, recipe.data))
                        for r, c in zip(train_records, train_cols)])
    return WordMatrix(
        x=np.concatenate([c.matrix for c in train_cols]),
        y=y,
        x_eval=np.concatenate([c.matrix for c in eval_cols]),
        y_eval=np.concatenate([word_labels(r, c.words) for r, c in zip(eval_records, eval_cols)]),
        groups=np.concatenate([[r.source_id] * len(c.words) for r, c in zip(train_records, train_cols)]),
        weight=None if np.all(weight == 1.0) else weight)  # data.extra with weights


def tuning_set(train_records: list[Record], eval_records: list[Record], train_cols: list[Any], eval_cols: list[Any],
               oof: np.ndarray, eval_probs: np.ndarray) -> TuningSet:
    """Every response with its word probabilities (out of fold for training, the booster's for eval)."""
    every_record = train_records + eval_records
    every_cols = train_cols + eval_cols
    flat = np.concatenate([oof, eval_probs])
    bounds = np.cumsum([0, *(len(c.words) for c in every_cols)])
    # tune on real data and the whole eval split (which holds data.synth's generated held-out records, if any)
    real = [i for i, r in enumerate(every_record) if record_origin(r) == "real" or i >= len(train_records)]
    return TuningSet(every_record, every_cols, [flat[bounds[i]:bounds[i + 1]] for i in range(len(every_record))],
                     len(train_records), real)


def fit_response_head(recipe: StackedRecipe, decision: combiner.Decision, names: Sequence[str],
                      tuning: TuningSet) -> HeadOutcome:
    """The response head of ``recipe.response`` (none asked for: none), kept only when it ranks the tuned
    responses better than their highest word probability (:func:`response.keep_head`)."""
    word_max = [float(p.max()) if len(p) else 0.0 for p in tuning.tuned_probabilities]
    if recipe.response is None:
        return HeadOutcome(None, None, word_max)
    logger.info("stacked: response head (cross-validated by source, calibrated on out-of-fold responses)")
    try:
        head = response.train_head(recipe.response, decision, names, tuning.records, tuning.columns,
                                   tuning.probabilities, tuning.n_train)
    except response.HeadNotFitted as exc:  # one source, one class, too few responses to cross-validate
        logger.info("stacked: response head dropped (%s)", exc)
        return HeadOutcome(None, {"reason": str(exc)}, word_max)
    head_scores = [float(head.scores[i]) for i in tuning.real]
    kept, dropped = response.keep_head(head_scores, word_max, [r.hallucinated for r in tuning.tuned_records])
    if kept:
        return HeadOutcome(head, None, head_scores)
    # too little data for the head to rank better than the top word probability
    logger.info("stacked: response head dropped (%s)", dropped["reason"])
    return HeadOutcome(None, dropped | head.info(tuning.real, tuning.records), word_max)


def save_models(run_dir: Path, booster: Any, head: Any) -> None:
    """``combiner.txt`` and the response head's file (or no head file: one of an earlier try here is removed)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    combiner.save(booster, run_dir)
    if head is not None:
        response.save(head.booster, run_dir, head.rounds)
    else:
        response.discard(run_dir)  # a head of an earlier try in this directory (--resume) is not this run's


def chosen_row(table: Sequence[dict[str, Any]], decision: combiner.Decision) -> dict[str, Any]:
    """The gate-tuning row of ``table`` that holds ``decision`` (its span and response F1)."""
    return next(row for row in table if "response_f1" in row
                and all(row[k] == v for k, v in decision.to_dict().items()))


def run_info(recipe: StackedRecipe, selected: Any, names: list[str], booster: Any, rounds: list[int],
             decision: combiner.Decision, table: list[dict[str, Any]], outcome: HeadOutcome, tuning: TuningSet,
             words: WordMatrix, costs: StageCosts) -> dict[str, Any]:
    """What ``run_info.json`` records of a stacked run (besides what every run records)."""
    importance = booster.feature_importance("gain")
    top = sorted(zip(names, importance.tolist()), key=lambda kv: -kv[1])
    chosen = chosen_row(table, decision)
    n_eval = len(tuning.records) - tuning.n_train
    return {"columns": names, "rounds": rounds[0] if len(rounds) == 1 else rounds, "decision": decision.to_dict(),
            "response": None if outcome.head is None else outcome.head.info(tuning.real, tuning.records),
            **({"response_head_dropped": outcome.dropped} if outcome.dropped else {}),
            "members": {m.name: {"recipe": m.recipe, "detector": m.detector,
                                 "path": m.run_paths()[0] if m.recipe and m.refit else None,
                                 **({"fold_paths": m.run_paths()} if m.recipe and not m.refit else {})}
                        for m in recipe.members},
            "tuning": {"responses": len(tuning.real), "training_out_of_fold": len(tuning.real) - n_eval,
                       "eval": n_eval, "span_f1": chosen["span_f1"], "table": table},
            "words": {"train": len(words.y), "train_hallucinated": int(words.y.sum()), "eval": len(words.y_eval),
                      "eval_hallucinated": int(words.y_eval.sum())},
            "feature_gain": {name: round(value, 1) for name, value in top},
            "data": data_record(selected, eval_split=recipe.data.eval_split), **costs.record()}


def train(recipe: StackedRecipe, *, resume: bool = False,
          fingerprint: dict[str, Any] | None = None) -> TrainResult:
    """Train per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.training.run.train`):
    members, columns, combiner, decision, response head and gate, then the run files."""
    run_dir = Path(recipe.output_dir)
    costs = StageCosts()
    with costs.stage("members"):
        selected = select_data(recipe.data, RecordStats(), unlocated=True)
        train_records, eval_records = selected.train, selected.eval
        assert eval_records is not None  # the recipe requires data.eval_split
        logger.info("stacked: %s training responses (%s), %d eval responses (%s), %d member(s)",
                    origins(train_records), selected.source, len(eval_records), selected.eval_source,
                    len(recipe.members))
        detectors, on_train, on_eval = member_scores(recipe, train_records, eval_records, run_dir)
    with costs.stage("columns"):
        builder, train_cols, eval_cols = build_columns(recipe, detectors, train_records, eval_records, on_train,
                                                       on_eval)
    logger.info("stacked: %d columns for %s training and %s eval words (%.0f s); boosting", len(builder.names),
                f"{sum(len(c.words) for c in train_cols):,}", f"{sum(len(c.words) for c in eval_cols):,}",
                costs.seconds["columns"])
    with costs.stage("boosting"):
        words = word_matrix(recipe, train_records, train_cols, eval_records, eval_cols)
        booster = combiner.fit(words.x, words.y, words.x_eval, words.y_eval, recipe.combiner, builder.names,
                               weight=words.weight)
        rounds = booster.rounds
    with costs.stage("out_of_fold"):
        oof = combiner.out_of_fold(words.x, words.y, words.groups, recipe.combiner, builder.names, rounds,
                                   weight=words.weight)
    with costs.stage("decision"):
        logger.info("stacked: tuning thresholds and span merging on out-of-fold training + eval probabilities")
        tuning = tuning_set(train_records, eval_records, train_cols, eval_cols, oof,
                            booster.predict(words.x_eval))
        decision, table = combiner.tune(tuning.tuned_records, tuning.tuned_words, tuning.tuned_probabilities,
                                        recipe.decision)
    with costs.stage("response"):
        outcome = fit_response_head(recipe, decision, builder.names, tuning)
        decision = combiner.tune_gate(tuning.tuned_records, tuning.tuned_words, tuning.tuned_probabilities,
                                      outcome.scores, decision, recipe.decision, table,
                                      [tuning.columns[i].contradicted() for i in tuning.real])
    save_models(run_dir, booster, outcome.head)
    info = run_info(recipe, selected, builder.names, booster, rounds, decision, table, outcome, tuning, words, costs)
    write_run_files(run_dir, recipe, info, fingerprint=fingerprint, trained_on=trained_on(selected))
    head_words = "" if outcome.head is None else f"; response head AUROC {info['response']['auroc']} (out of fold)"
    chosen = chosen_row(table, decision)
    summary = (f"{'/'.join(map(str, rounds))} boosting rounds{head_words}; {combiner.describe(decision)}; span F1 "
               f"{chosen['span_f1']:.3f} / response F1 {chosen['response_f1']:.3f} on {len(tuning.real)} responses "
               f"(out-of-fold training + eval) → {run_dir}")
    return TrainResult(output_dir=run_dir, stats={"responses": len(train_records)}, metrics=info["tuning"],
                       resumed_from=None, summary=summary)
