"""``ragtruth-spans train`` for the stacked family: members, columns, combiner, decision — one run directory.

1. **Members** trained here (``members[].recipe``) are trained ``folds`` times on source-disjoint parts of the
   training split, each scoring the part it did not see (out-of-fold scores for the combiner's training rows),
   then once on the whole split (``members/<name>/full``, the one detection uses; it scores the eval split).
   Members used as they are (``members[].detector``) score both splits directly.
2. **Columns** of every training and eval response (:mod:`.columns`); word labels: a word is hallucinated when
   it shares a character with a gold span.
3. **Combiner** (:mod:`.combiner`): LightGBM, early-stopped on the eval split; out-of-fold probabilities of the
   training words from ``combiner.oof_folds`` source-disjoint refits.
4. **Decision**: gap and thresholds tuned on the out-of-fold training probabilities plus the eval split.

Writes ``combiner.txt``, ``members/``, ``recipe.yaml`` and ``run_info.json`` (columns, rounds, decision, tuning
table, feature importances, counts, seconds per stage).
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import DetectItem, Detector
from ragtruth_spans.detectors.stacked import combiner, response
from ragtruth_spans.detectors.stacked.columns import (
    ColumnBuilder,
    FoldMean,
    build_encoder,
    build_lm,
    character_scores,
)
from ragtruth_spans.detectors.stacked.recipe import MEMBERS_DIR, MemberSection, StackedRecipe
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.data import RecordStats, record_origin, record_weight
from ragtruth_spans.training.run import TrainResult
from ragtruth_spans.training.skeleton import data_record, select_data, trained_on

logger = logging.getLogger(__name__)

Scores = list[tuple[np.ndarray, bool]]


def word_labels(record: Record, words: Sequence[tuple[int, int]]) -> np.ndarray:
    """1 for each word sharing a character with a gold span of ``record``, else 0."""
    return np.array([any(s.start < b and a < s.end for s in record.spans) for a, b in words], dtype=np.int8)


def _train_member(member: MemberSection, recipe: StackedRecipe, data_dir: Path, output: Path) -> Detector:
    """The member trained on ``data_dir/train.jsonl`` (eval: ``data_dir/dev.jsonl``) into ``output``; a finished
    run there with the same fingerprint is reused, an unfinished one resumes (a killed ``train`` goes on)."""
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train
    from ragtruth_spans.runs.run_dir import FINGERPRINT_FILE, RUN_INFO_FILE, run_fingerprint

    assert member.recipe is not None
    settings = [*member.overrides, f"data.prepared_dir={data_dir}", "data.eval_split=dev",
                f"data.tasks={json.dumps(recipe.data.tasks)}", f"output_dir={output}"]
    if load_recipe(member.recipe, settings).reads_key("data.split"):  # a similarity member reads no training split
        settings.append("data.split=train")
    sub = load_recipe(member.recipe, settings)
    fingerprint = run_fingerprint(sub, [data_dir / "train.jsonl", data_dir / "dev.jsonl"])["fingerprint"]
    stored = output / FINGERPRINT_FILE
    if (output / RUN_INFO_FILE).is_file() and stored.is_file() and \
            json.loads(stored.read_text(encoding="utf-8")).get("fingerprint") == fingerprint:
        logger.info("member %s: reusing the finished run %s", member.name, output)
    else:
        logger.info("member %s: %s", member.name, train(sub).summary)
    return load_detector(output)


def _member_data(directory: Path, train_records: Sequence[Record], eval_records: Sequence[Record]) -> Path:
    write_records(directory / "train.jsonl", train_records)
    write_records(directory / "dev.jsonl", eval_records)
    return directory


def member_scores(recipe: StackedRecipe, train_records: list[Record], eval_records: list[Record], run_dir: Path
                  ) -> tuple[dict[str, Detector], dict[str, Scores], dict[str, Scores]]:
    """Every member's detector (as detection will use it) and its scores of the training (out-of-fold for
    trained members) and eval records. Members trained here live in ``members/<name>/{fold-k,full}`` and their
    data in ``members/<name>/data/``."""
    from ragtruth_spans.detectors.loader import load_detector

    detectors: dict[str, Detector] = {}
    on_train: dict[str, Scores] = {}
    on_eval: dict[str, Scores] = {}
    train_items = [DetectItem.of(r) for r in train_records]
    eval_items = [DetectItem.of(r) for r in eval_records]
    for member in recipe.members:
        if member.detector is not None:
            detectors[member.name] = load_detector(member.detector)
            on_train[member.name] = character_scores(detectors[member.name], train_items)
        else:
            home = run_dir / MEMBERS_DIR / member.name
            folds = response.source_folds([r.source_id for r in train_records], member.folds, recipe.data.seed)
            scores: list[Any] = [None] * len(train_records)
            fold_detectors = []
            for k in range(member.folds):
                logger.info("member %s: fold %d/%d", member.name, k + 1, member.folds)
                data = _member_data(home / "data" / f"fold-{k}",
                                    [r for r, f in zip(train_records, folds) if f != k], eval_records)
                detector = _train_member(member, recipe, data, home / f"fold-{k}")
                fold_detectors.append(detector)
                held = [i for i, f in enumerate(folds) if f == k]
                for i, result in zip(held, character_scores(detector, [train_items[i] for i in held])):
                    scores[i] = result
            if member.refit:
                logger.info("member %s: all training responses", member.name)
                data = _member_data(home / "data" / "full", train_records, eval_records)
                detectors[member.name] = _train_member(member, recipe, data, home / "full")
            else:
                detectors[member.name] = FoldMean(fold_detectors)
            on_train[member.name] = scores
        on_eval[member.name] = character_scores(detectors[member.name], eval_items)
    return detectors, on_train, on_eval


def _columns(builder: ColumnBuilder, records: Sequence[Record], member_scores: dict[str, Scores], stage: str,
             chunk: int = 64, lm_augmented: bool = True) -> list[Any]:
    """:meth:`ColumnBuilder.build` of ``records`` in chunks, with one progress bar on a terminal; without
    ``lm_augmented``, augmented records get missing LM columns."""
    from tqdm.auto import tqdm

    from ragtruth_spans.core.logs import progress_enabled

    out: list[Any] = []
    with tqdm(total=len(records), unit="response", desc=stage, disable=not progress_enabled(), leave=False) as bar:
        for at in range(0, len(records), chunk):
            part = [DetectItem.of(r) for r in records[at:at + chunk]]
            skip = [not lm_augmented and record_origin(r) == "augmented" for r in records[at:at + chunk]]
            out.extend(builder.build(part, {k: v[at:at + chunk] for k, v in member_scores.items()}, skip))
            bar.update(len(part))
    return out


def origins(records: Sequence[Record]) -> str:
    """``"1031 real + 533 augmented + 1175 extra"``: training records by where they came from."""
    counts = Counter(record_origin(r) for r in records)
    return " + ".join(f"{counts[o]} {o}" for o in ("real", "augmented", "extra") if counts[o] or o == "real")


def train(recipe: StackedRecipe, *, resume: bool = False,
          fingerprint: dict[str, Any] | None = None) -> TrainResult:
    """Train per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.training.run.train`)."""
    run_dir = Path(recipe.output_dir)
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    selected = select_data(recipe.data, RecordStats())
    train_records, source, eval_records = selected.train, selected.source, selected.eval
    assert eval_records is not None  # the recipe requires data.eval_split
    logger.info("stacked: %s training responses (%s), %d eval responses (%s), %d member(s)", origins(train_records),
                source, len(eval_records), selected.eval_source, len(recipe.members))
    detectors, on_train, on_eval = member_scores(recipe, train_records, eval_records, run_dir)
    seconds["members"] = time.perf_counter() - started

    tick = time.perf_counter()
    builder = ColumnBuilder(build_encoder(recipe.features.encoder), detectors, build_lm(recipe.features.lm),
                            drop=recipe.features.drop, token_support=recipe.features.token_support)
    train_cols = _columns(builder, train_records, on_train, "columns (training)",
                          lm_augmented=recipe.features.lm is None or recipe.features.lm.augmented)
    eval_cols = _columns(builder, eval_records, on_eval, "columns (eval)")
    seconds["columns"] = time.perf_counter() - tick
    logger.info("stacked: %d columns for %s training and %s eval words (%.0f s); boosting", len(builder.names),
                f"{sum(len(c.words) for c in train_cols):,}", f"{sum(len(c.words) for c in eval_cols):,}",
                seconds["columns"])

    tick = time.perf_counter()
    x = np.concatenate([c.matrix for c in train_cols])
    y = np.concatenate([word_labels(r, c.words) for r, c in zip(train_records, train_cols)])
    x_eval = np.concatenate([c.matrix for c in eval_cols])
    y_eval = np.concatenate([word_labels(r, c.words) for r, c in zip(eval_records, eval_cols)])
    groups = np.concatenate([[r.source_id] * len(c.words) for r, c in zip(train_records, train_cols)])
    weight = np.concatenate([[record_weight(r, recipe.data)] * len(c.words) for r, c in zip(train_records, train_cols)])
    weight = None if np.all(weight == 1.0) else weight  # data.extra with weights
    booster = combiner.fit(x, y, x_eval, y_eval, recipe.combiner, builder.names, weight=weight)
    rounds = combiner.rounds_of(booster)
    oof = combiner.out_of_fold(x, y, groups, recipe.combiner, builder.names, rounds, weight=weight)
    seconds["combiner"] = time.perf_counter() - tick

    tick = time.perf_counter()
    logger.info("stacked: tuning thresholds and span merging on out-of-fold training + eval probabilities")
    eval_probs = booster.predict(x_eval, num_iteration=rounds)
    flat = np.concatenate([oof, eval_probs])
    every_record = train_records + eval_records
    every_cols = train_cols + eval_cols
    bounds = np.cumsum([0, *(len(c.words) for c in every_cols)])
    every_probs = [flat[bounds[i]:bounds[i + 1]] for i in range(len(every_record))]
    # tune on real data and the whole eval split (which holds data.synth's generated held-out records, if any)
    real = [i for i, r in enumerate(every_record) if record_origin(r) == "real" or i >= len(train_records)]
    tuned_records = [every_record[i] for i in real]
    tuned_words = [every_cols[i].words for i in real]
    probabilities = [every_probs[i] for i in real]
    decision, table = combiner.tune(tuned_records, tuned_words, probabilities, recipe.decision)
    seconds["decision"] = time.perf_counter() - tick

    tick = time.perf_counter()
    head, head_dropped = None, None
    word_max = [float(p.max()) if len(p) else 0.0 for p in probabilities]
    scores = word_max
    if recipe.response is not None:
        logger.info("stacked: response head (cross-validated by source, calibrated on out-of-fold responses)")
        try:
            head = response.train_head(recipe.response, decision, builder.names, every_record, every_cols,
                                       every_probs, len(train_records))
        except response.HeadNotFitted as exc:  # one source, one class, too few responses to cross-validate
            head, head_dropped = None, {"reason": str(exc)}
            logger.info("stacked: response head dropped (%s)", exc)
        kept = False
        if head is not None:
            head_scores = [float(head.scores[i]) for i in real]
            kept, head_dropped = response.keep_head(head_scores, word_max, [bool(r.spans) for r in tuned_records])
        if kept:
            scores, head_dropped = head_scores, None
        elif head is not None:  # too little data for the head to rank better than the top word probability
            logger.info("stacked: response head dropped (%s)", head_dropped["reason"])
            head_dropped |= head.info(real, every_record)
            head = None
    decision = combiner.tune_gate(tuned_records, tuned_words, probabilities, scores, decision, recipe.decision,
                                  table, [every_cols[i].contradicted() for i in real])
    seconds["response"] = time.perf_counter() - tick

    run_dir.mkdir(parents=True, exist_ok=True)
    combiner.save(booster, run_dir)
    if head is not None:
        response.save(head.booster, run_dir, head.rounds)
    else:
        response.discard(run_dir)  # a head of an earlier try in this directory (--resume) is not this run's
    importance = booster.feature_importance("gain", iteration=rounds)
    top = sorted(zip(builder.names, importance.tolist()), key=lambda kv: -kv[1])
    chosen = next(row for row in table if "response_f1" in row
                  and all(row[k] == v for k, v in decision.to_dict().items()))
    info = {"columns": builder.names, "rounds": rounds, "decision": decision.to_dict(),
            "response": None if head is None else head.info(real, every_record),
            **({"response_head_dropped": head_dropped} if head_dropped else {}),
            "members": {m.name: {"recipe": m.recipe, "detector": m.detector,
                                 "path": m.run_paths()[0] if m.recipe and m.refit else None,
                                 **({"fold_paths": m.run_paths()} if m.recipe and not m.refit else {})}
                        for m in recipe.members},
            "tuning": {"responses": len(tuned_records), "training_out_of_fold": len(tuned_records) - len(eval_records),
                       "eval": len(eval_records), "span_f1": chosen["span_f1"], "table": table},
            "words": {"train": len(y), "train_hallucinated": int(y.sum()), "eval": len(y_eval),
                      "eval_hallucinated": int(y_eval.sum())},
            "feature_gain": {name: round(value, 1) for name, value in top},
            "data": data_record(selected, eval_split=recipe.data.eval_split),
            "seconds": {k: round(v, 1) for k, v in seconds.items()}}
    write_run_files(run_dir, recipe, info, fingerprint=fingerprint, trained_on=trained_on(selected))
    head_words = "" if head is None else f"; response head AUROC {info['response']['auroc']} (out of fold)"
    summary = (f"{rounds} boosting rounds{head_words}; {combiner.describe(decision)}; span F1 "
               f"{chosen['span_f1']:.3f} / response F1 {chosen['response_f1']:.3f} on {len(tuned_records)} responses "
               f"(out-of-fold training + eval) → {run_dir}")
    return TrainResult(output_dir=run_dir, stats={"responses": len(train_records)}, metrics=info["tuning"],
                       resumed_from=None, summary=summary)
