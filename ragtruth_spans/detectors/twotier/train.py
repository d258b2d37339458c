"""``ragtruth-spans train`` for the two-tier family: fine-tune the tier-2 cross-encoder on sentence labels derived
from the training split's gold spans (:mod:`.checks`), then tune its threshold on ``data.eval_split``.

Run directory: ``model/`` (the cross-encoder and its tokenizer), ``base_model/`` (only for the tiny random BERT),
``checkpoint-*`` (the trainer's; a killed run resumes from the last), ``recipe.yaml`` and ``run_info.json`` (the
threshold, the tuning grid, tier 1's report on the training and eval splits, the pair counts and the metrics).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.logs import log_lines
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.twotier.checks import SentenceCheck, sentence_checks
from ragtruth_spans.detectors.twotier.detector import MODEL_DIR, TwoTierDetector
from ragtruth_spans.detectors.twotier.recipe import TwoTierRecipe
from ragtruth_spans.detectors.twotier.tier1 import tier1_report
from ragtruth_spans.reporting.console import training_data_summary
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.data import RecordStats, examples_sha256
from ragtruth_spans.training.run import TrainResult
from ragtruth_spans.training.skeleton import base_model, data_record, select_data, tiny_texts, trained_on

logger = logging.getLogger(__name__)


@dataclass
class PairStats(RecordStats):
    """:class:`RecordStats` plus the sentences, those tier 1 filtered, and the tier-2 pairs by label."""

    sentences: int = 0
    tier1_filtered: int = 0
    unsupported_pairs: int = 0
    supported_pairs: int = 0
    supported_pairs_dropped: int = 0


def pair_rows(checks: list[list[SentenceCheck]], stats: PairStats | None = None) -> list[dict[str, Any]]:
    """``{"premise", "sentence", "label"}`` rows of the verifiable sentences (label 1.0 = unsupported)."""
    rows = []
    for per_item in checks:
        for check in per_item:
            if stats is not None:
                stats.sentences += 1
                stats.tier1_filtered += check.rule is not None
            if check.rule is None:
                rows.append({"premise": check.premise, "sentence": check.text, "label": float(check.label or 0)})
    if stats is not None:
        stats.unsupported_pairs = sum(r["label"] == 1.0 for r in rows)
        stats.supported_pairs = len(rows) - stats.unsupported_pairs
        stats.examples = len(rows)
    return rows


def subsample_supported(rows: list[dict[str, Any]], ratio: float | None, seed: int,
                        stats: PairStats) -> list[dict[str, Any]]:
    """Keep every unsupported pair and at most ``ratio`` supported pairs per unsupported one (seeded sample, order
    kept); the dropped ones are counted."""
    import random

    if ratio is None:
        return rows
    supported = [i for i, r in enumerate(rows) if r["label"] == 0.0]
    keep = min(len(supported), round(ratio * stats.unsupported_pairs))
    kept = set(random.Random(seed).sample(supported, keep))
    out = [r for i, r in enumerate(rows) if r["label"] == 1.0 or i in kept]
    stats.supported_pairs_dropped = len(supported) - keep
    stats.supported_pairs = keep
    stats.examples = len(out)
    return out


def base_model_path(recipe: TwoTierRecipe, output_dir: Path, records: list[Record]) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the encoder to fine-tune: a packaged model's verified folder, a local folder
    (checked), a converted ``model.gguf_file``, a hub id at ``model.revision``, or a tiny random BERT built under
    ``output_dir/base_model`` (:func:`~ragtruth_spans.training.skeleton.base_model`)."""
    def build(base: Path) -> None:
        from ragtruth_spans.models.tiny import build_tiny_bert

        spec = recipe.model.tiny
        build_tiny_bert(base, seed=spec.seed, texts=tiny_texts(records, questions=False),
                        vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                        num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
                        intermediate_size=spec.intermediate_size)

    return base_model(recipe.model, output_dir, build)


def _pos_weight(recipe: TwoTierRecipe, stats: PairStats) -> float | None:
    weight = recipe.training.pos_weight
    if weight == "balanced":
        return stats.supported_pairs / stats.unsupported_pairs if stats.unsupported_pairs else None
    return weight


def fit(recipe: TwoTierRecipe, base: tuple[str, str | None], train_rows: list[dict[str, Any]],
        eval_rows: list[dict[str, Any]] | None, pos_weight: float | None, output_dir: Path,
        resume: bool) -> tuple[Any, dict[str, Any]]:
    """Fine-tune the cross-encoder ``base`` (path or id, revision) with sentence-transformers'
    ``CrossEncoderTrainer`` (binary cross-entropy); the best checkpoint by eval loss is kept when there is an eval
    split. Returns the model and the trainer metrics."""
    import torch
    from datasets import Dataset
    from sentence_transformers import CrossEncoder
    from sentence_transformers.cross_encoder import CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers import set_seed

    from ragtruth_spans.models.hf_models import is_local_reference, loading
    from ragtruth_spans.training.arguments import trainer_arguments
    from ragtruth_spans.training.progress import attach_progress
    from ragtruth_spans.training.run import last_checkpoint

    set_seed(recipe.training.seed)
    path, revision = base
    with loading(path, "base encoder"):
        model = CrossEncoder(path, num_labels=1, max_length=recipe.data.max_length, device="cpu"
                             if not torch.cuda.is_available() else None, revision=revision,
                             local_files_only=is_local_reference(path))
    loss = BinaryCrossEntropyLoss(model, pos_weight=None if pos_weight is None else torch.tensor(pos_weight))
    args = CrossEncoderTrainingArguments(**trainer_arguments(recipe, recipe.training, output_dir,
                                                             CrossEncoderTrainingArguments,
                                                             evaluate=bool(eval_rows)))
    trainer = CrossEncoderTrainer(model=model, args=args, train_dataset=Dataset.from_list(train_rows),
                                  eval_dataset=Dataset.from_list(eval_rows) if eval_rows else None, loss=loss)
    last = last_checkpoint(output_dir, resume)
    attach_progress(trainer)
    result = trainer.train(resume_from_checkpoint=last)
    metrics = dict(result.metrics) | {"resumed_from": last, "best_checkpoint": trainer.state.best_model_checkpoint}
    return model, metrics


def train(recipe: TwoTierRecipe, *, resume: bool = False,
          fingerprint: dict[str, Any] | None = None) -> TrainResult:
    """Fine-tune and tune per ``recipe`` into ``recipe.output_dir`` (claimed by
    :func:`ragtruth_spans.detectors.train.train`)."""
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

    output_dir = Path(recipe.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    selected = select_data(recipe.data, PairStats(), RecordStats())
    records, source, stats = selected.train, selected.source, selected.stats
    eval_records = selected.eval or []
    encoder = SentenceEncoder(recipe.premise.retriever)
    logger.info("building premises (%d units by %s) for %d training and %d eval responses", recipe.premise.top_k,
                recipe.premise.retriever, len(records), len(eval_records))
    rows = pair_rows(sentence_checks(records, encoder, recipe.premise.top_k), stats)
    rows = subsample_supported(rows, recipe.pairs.supported_per_unsupported, recipe.data.seed, stats)
    log_lines(logger, training_data_summary(stats, source, recipe.data.max_length))
    if not rows or not stats.unsupported_pairs or not stats.supported_pairs:
        raise InputError(f"tier 2 needs supported and unsupported sentences to learn from; {source} gives "
                         f"{stats.supported_pairs} supported and {stats.unsupported_pairs} unsupported")
    eval_rows = pair_rows(sentence_checks(eval_records, encoder, recipe.premise.top_k)) if eval_records else None
    started = time.time()
    base = base_model_path(recipe, output_dir, records)
    model, metrics = fit(recipe, base, rows, eval_rows, _pos_weight(recipe, stats), output_dir, resume)
    metrics["wall_s"] = round(time.time() - started, 2)
    model.save_pretrained(str(output_dir / MODEL_DIR))
    detector = TwoTierDetector(output_dir / MODEL_DIR, retriever=recipe.premise.retriever,
                               top_k=recipe.premise.top_k, max_length=recipe.data.max_length, encoder=encoder,
                               cross_encoder=model)
    tuning = None
    if eval_records:
        detector, result = detector.tune(eval_records, criterion=recipe.tuning.criterion,
                                         split=recipe.data.eval_split or "", values=recipe.tuning.grid)
        tuning = result.to_dict()
    write_run_files(output_dir, recipe, fingerprint=fingerprint, trained_on=trained_on(selected), info={
        "base_model": {"name_or_path": recipe.model.name_or_path, "path": base[0], "revision": base[1],
                       "gguf_file": recipe.model.gguf_file},
        "threshold": detector.threshold, "tuning": tuning,
        "tier1": {"train": tier1_report(records), "eval": tier1_report(eval_records) if eval_records else None},
        "data": data_record(selected, eval_split=recipe.data.eval_split, pairs_sha256=examples_sha256(rows),
                            pos_weight=_pos_weight(recipe, stats)),
        "train_metrics": metrics,
    })
    summary = (f"cross-encoder in {output_dir / MODEL_DIR}, threshold {detector.threshold}"
               + (f" ({tuning['criterion']} {tuning['value']:.4f} on {tuning['split']})" if tuning else
                  " (no eval split: not tuned)") + f", {metrics['wall_s']} s")
    return TrainResult(output_dir=output_dir, stats=stats, metrics=metrics, resumed_from=metrics["resumed_from"],
                       summary=summary)
