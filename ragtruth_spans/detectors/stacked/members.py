"""The members of a stacked run (step 1 of :mod:`.train`): a member trained here (``members[].recipe``) is
trained ``folds`` times on source-disjoint parts of the training split, each scoring the part it did not see,
then once on the whole split (``members/<name>/full``) or kept as the mean of its folds; a member used as it is
(``members[].detector``) scores both splits directly."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.logs import in_chunks
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import DetectItem, Detector
from ragtruth_spans.detectors.stacked import combiner
from ragtruth_spans.detectors.stacked.columns import FoldMean, character_scores
from ragtruth_spans.detectors.stacked.recipe import MEMBERS_DIR, MemberSection, StackedRecipe

logger = logging.getLogger(__name__)

Scores = list[tuple[np.ndarray, bool]]
"""Per response, a float32 score per character and whether the member judged it."""


def _train_member(member: MemberSection, recipe: StackedRecipe, data_dir: Path, output: Path) -> Detector:
    """The member trained on ``data_dir/train.jsonl`` (eval: ``data_dir/dev.jsonl``) into ``output``; a finished
    run there with the same fingerprint is reused, an unfinished one resumes (a killed ``train`` goes on)."""
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train
    from ragtruth_spans.runs.run_dir import run_fingerprint
    from ragtruth_spans.runs.run_info import FINGERPRINT_FILE, RUN_INFO_FILE

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
            detectors[member.name] = load_detector(member.detector, **member.options)
            on_train[member.name] = _scored(detectors[member.name], train_items, f"member {member.name} (training)")
        else:
            home = run_dir / MEMBERS_DIR / member.name
            folds = combiner.source_folds([r.source_id for r in train_records], member.folds, recipe.data.seed)
            scores: list[Any] = [None] * len(train_records)
            fold_detectors = []
            for k in range(member.folds):
                logger.info("member %s: fold %d/%d", member.name, k + 1, member.folds)
                data = _member_data(home / "data" / f"fold-{k}",
                                    [r for r, f in zip(train_records, folds) if f != k], eval_records)
                detector = _train_member(member, recipe, data, home / f"fold-{k}")
                fold_detectors.append(detector)
                held = [i for i, f in enumerate(folds) if f == k]
                for i, result in zip(held, _scored(detector, [train_items[i] for i in held],
                                                   f"member {member.name}, fold {k + 1} (held out)")):
                    scores[i] = result
            if member.refit:
                logger.info("member %s: all training responses", member.name)
                data = _member_data(home / "data" / "full", train_records, eval_records)
                detectors[member.name] = _train_member(member, recipe, data, home / "full")
            else:
                detectors[member.name] = FoldMean(fold_detectors)
            on_train[member.name] = scores
        on_eval[member.name] = _scored(detectors[member.name], eval_items, f"member {member.name} (eval)")
    return detectors, on_train, on_eval


def _scored(detector: Any, items: Sequence[DetectItem], stage: str) -> list[Any]:
    """A member's :func:`~.columns.character_scores` of ``items``, in chunks with progress
    (:func:`~ragtruth_spans.core.logs.in_chunks`)."""
    return in_chunks(items, lambda _, part: character_scores(detector, part), desc=f"stacked: {stage}", log=logger)
