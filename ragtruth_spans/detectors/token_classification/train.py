"""Training a token classifier: HF ``Trainer`` on response-token labels, then the threshold tuned on dev.

Pipeline: prepared records → (task filter, seeded clean-example subsampling) → windows (:mod:`.windows`; every
window of a record, or only its best one with ``windows.train_windows: best``; a record no window fits is skipped
and counted in ``no_windows``) labelled on the response tokens (-100 elsewhere) → model (full fine-tuning, or
(Q)LoRA with a trainable head) → ``Trainer`` with class-weighted cross-entropy (with ``data.eval_split``: every
``eval_steps``, the eval loss and the best token-level F1 over thresholds on every window of the dev records; the
checkpoint of highest token F1 is kept) → ``output_dir`` with the weights, the tokenizer, ``recipe.yaml`` and
``run_info.json`` (with ``base_model.resolved_revision``, the commit a hub base was loaded at, which a LoRA run
reloads) → the threshold tuned on the dev records (:mod:`.tuning`) and written into ``run_info.json``. The
run-directory rules (resume, refuse) are applied by :func:`ragtruth_spans.detectors.train.train`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.logs import log_lines
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.token_classification.labels import IGNORE_INDEX, label_names, token_labels
from ragtruth_spans.detectors.token_classification.model import (
    ensure_base_model,
    load_for_training,
    load_tokenizer,
)
from ragtruth_spans.detectors.token_classification.recipe import TokenClassificationRecipe
from ragtruth_spans.detectors.token_classification.run_dir import window_settings
from ragtruth_spans.detectors.token_classification.windows import Layout, plan_windows
from ragtruth_spans.models.gguf import gguf_record
from ragtruth_spans.models.hf_models import check_report_to, is_local_reference, resolved_revision
from ragtruth_spans.models.tiny import BASE_MODEL_DIR, TINY
from ragtruth_spans.reporting.console import threshold_decision, training_data_summary
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.arguments import trainer_arguments
from ragtruth_spans.training.data import RecordStats, examples_sha256
from ragtruth_spans.training.run import TrainResult, last_checkpoint, run_trainer
from ragtruth_spans.training.skeleton import SelectedData, data_record, select_data, trained_on

logger = logging.getLogger(__name__)


@dataclass
class WindowStats(RecordStats):
    """:class:`RecordStats` plus the windows built (``windows``), those trained on (``windows_used``, fewer with
    ``train_windows: best``), the most windows of one response, the responses slid over in segments, and the
    records skipped because no window of them fits ``data.max_length`` (``no_windows``: the question leaves no
    room for the response beside ``windows.min_context_tokens`` context tokens, or ``windows.response_overlap``
    leaves no step to slide over the response)."""

    windows: int = 0
    windows_used: int = 0
    max_windows: int = 0
    long_responses: int = 0
    labelled_tokens: int = 0
    hallucinated_tokens: int = 0
    long_response_ids: list[str] = field(default_factory=list)
    no_windows: int = 0
    no_windows_ids: list[str] = field(default_factory=list)


def build_examples(records: Sequence[Record], tokenizer: Any, recipe: TokenClassificationRecipe, stats: WindowStats,
                   *, best_only: bool) -> list[dict[str, Any]]:
    """One example per window used: ``input_ids``, ``attention_mask``, ``labels`` (label ids on the response
    tokens, -100 elsewhere) and ``token_type_ids`` when the model takes them. A record no window fits is skipped
    and counted (``stats.no_windows``); with typed labels, a gold span without a RAGTruth type is an
    :class:`InputError` naming the record."""
    layout, settings, scheme = Layout.of(tokenizer), window_settings(recipe), recipe.labels.scheme
    examples = []
    for record in records:
        try:
            planned = plan_windows(tokenizer, layout, settings, context=record.context, response=record.response,
                                   question=record.question)
        except InputError:
            stats.no_windows += 1
            stats.no_windows_ids.append(record.id)
            continue
        labels = token_labels(planned.offsets, record.spans, scheme, record_id=record.id)
        used = planned.best_window() if best_only else planned.windows
        stats.windows += len(planned.windows)
        stats.windows_used += len(used)
        stats.max_windows = max(stats.max_windows, len(planned.windows))
        if planned.segments > 1:
            stats.long_responses += 1
            stats.long_response_ids.append(record.id)
        for window in used:
            window_labels = [IGNORE_INDEX] * len(window.input_ids)
            window_labels[window.response_start:window.response_start + window.count] = (
                labels[window.first:window.first + window.count])
            example = {"id": record.id, "input_ids": window.input_ids, "attention_mask": [1] * len(window.input_ids),
                       "labels": window_labels}
            if window.token_type_ids is not None:
                example["token_type_ids"] = window.token_type_ids
            examples.append(example)
            stats.labelled_tokens += window.count
            stats.hallucinated_tokens += sum(1 for x in labels[window.first:window.first + window.count] if x > 0)
    stats.examples = len(examples)
    return examples


def weighted_loss(n_labels: int, hallucinated_weight: float):
    """``compute_loss_func`` for the ``Trainer``: cross-entropy over the labelled tokens with weight
    ``hallucinated_weight`` on every positive label, summed and divided by the labelled tokens of the whole
    accumulated batch (``num_items_in_batch``; the batch's own count when evaluating)."""
    import torch

    weights = torch.tensor([1.0] + [hallucinated_weight] * (n_labels - 1))

    def loss(outputs: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
        logits = outputs["logits"].float()
        total = torch.nn.functional.cross_entropy(logits.view(-1, n_labels), labels.view(-1).to(logits.device),
                                                  weight=weights.to(logits.device), ignore_index=IGNORE_INDEX,
                                                  reduction="sum")
        count = num_items_in_batch if num_items_in_batch is not None else (labels != IGNORE_INDEX).sum()
        return total / torch.clamp(torch.as_tensor(count, device=logits.device, dtype=total.dtype), min=1.0)

    return loss


def hallucination_probabilities(logits: Any, labels: Any) -> Any:
    """``preprocess_logits_for_metrics``: keep only P(hallucinated) per token (the eval loop gathers less)."""
    import torch

    return 1.0 - torch.softmax(logits.float(), dim=-1)[..., 0]


def token_f1(eval_prediction: Any) -> dict[str, float]:
    """``compute_metrics``: the best token-level F1 of "hallucinated" over the thresholds of the tuning grid, on
    the labelled (response) tokens of the eval windows; the best checkpoint is the one with the highest."""
    import numpy as np

    from ragtruth_spans.detectors.token_classification.tuning import THRESHOLD_GRID
    from ragtruth_spans.evaluation.metrics import prf

    probs, labels = np.asarray(eval_prediction.predictions), np.asarray(eval_prediction.label_ids)
    mask = labels != IGNORE_INDEX
    p_hal, gold = probs[mask], labels[mask] > 0
    best = (0.0, THRESHOLD_GRID[0])
    for threshold in THRESHOLD_GRID:
        flagged = p_hal >= threshold
        f1 = float(prf((flagged & gold).sum(), flagged.sum(), gold.sum())[2])
        best = max(best, (f1, threshold))
    return {"token_f1": best[0], "token_f1_threshold": best[1]}


@dataclass
class _Prepared:
    tokenizer: Any
    base_path: str
    revision: str | None
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    eval_records: list[Record]
    stats: WindowStats
    eval_stats: WindowStats | None
    source: str
    selected: SelectedData


def _prepare(recipe: TokenClassificationRecipe, output_dir: Path) -> _Prepared:
    from accelerate import PartialState

    main_process = PartialState().is_main_process  # under accelerate/torchrun only rank 0 prints the summaries
    selected = select_data(recipe.data, WindowStats(), WindowStats())
    records, source, stats = selected.train, selected.source, selected.stats
    with PartialState().main_process_first():  # under accelerate/torchrun, rank 0 builds a tiny base model
        base_path, revision = ensure_base_model(recipe, output_dir, records)
    tokenizer = load_tokenizer(base_path, revision)
    examples = build_examples(records, tokenizer, recipe, stats, best_only=recipe.windows.train_windows == "best")
    if main_process:
        log_lines(logger, training_data_summary(stats, source, recipe.data.max_length))
    if not examples:
        raise InputError(f"no training record fits data.max_length={recipe.data.max_length}: all {stats.no_windows} "
                         "were skipped (no room for the response beside the question and "
                         f"windows.min_context_tokens={recipe.windows.min_context_tokens} context tokens, or "
                         f"windows.response_overlap={recipe.windows.response_overlap} too large to slide)")
    eval_examples, eval_records, eval_stats = [], [], selected.eval_stats
    if selected.eval is not None and eval_stats is not None:
        eval_examples = build_examples(selected.eval, tokenizer, recipe, eval_stats, best_only=False)
        if main_process:
            log_lines(logger, training_data_summary(eval_stats, selected.eval_source, recipe.data.max_length))
        skipped = set(eval_stats.no_windows_ids)
        eval_records = [r for r in selected.eval if r.id not in skipped]  # threshold tuning runs the same ones
        if not eval_records:
            raise InputError(f"no evaluation record left from {selected.eval_source} (data.eval_split="
                             f"{recipe.data.eval_split}); set data.eval_split=null to train without one")
    return _Prepared(tokenizer, base_path, revision, examples, eval_examples, eval_records, stats, eval_stats,
                     source, selected)


def _dataset(examples: Sequence[dict[str, Any]]):
    from datasets import Dataset

    return Dataset.from_list([{k: v for k, v in ex.items() if k != "id"} for ex in examples])


def _trainer(recipe: TokenClassificationRecipe, data: _Prepared, model: Any, output_dir: Path):
    from transformers import DataCollatorForTokenClassification, Trainer, TrainingArguments

    kwargs = trainer_arguments(recipe, recipe.training, output_dir, TrainingArguments, evaluate=bool(data.eval))
    kwargs["train_sampling_strategy"] = "group_by_length" if recipe.training.group_by_length else "random"
    kwargs["remove_unused_columns"] = False
    if data.eval:  # keep the checkpoint that flags hallucinated tokens best, not the one of lowest weighted loss
        kwargs.update(metric_for_best_model="token_f1", greater_is_better=True)
    return Trainer(model=model, args=TrainingArguments(**kwargs), train_dataset=_dataset(data.train),
                   eval_dataset=_dataset(data.eval) if data.eval else None, processing_class=data.tokenizer,
                   data_collator=DataCollatorForTokenClassification(data.tokenizer),
                   compute_loss_func=weighted_loss(len(label_names(recipe.labels.scheme)),
                                                   recipe.training.hallucinated_weight),
                   compute_metrics=token_f1 if data.eval else None,
                   preprocess_logits_for_metrics=hallucination_probabilities if data.eval else None)


def train(recipe: TokenClassificationRecipe, *, resume: bool = False,
          fingerprint: dict[str, Any] | None = None, callbacks: Sequence[Any] = ()) -> TrainResult:
    """Fine-tune per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.detectors.train.train`);
    ``resume``: continue from the directory's last checkpoint; ``fingerprint`` goes into ``run_info.json``;
    ``callbacks``: ``TrainerCallback`` objects added to the trainer."""
    from transformers import set_seed

    output_dir = Path(recipe.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    check_report_to(recipe.logging.report_to)
    set_seed(recipe.training.seed)
    data = _prepare(recipe, output_dir)
    last = last_checkpoint(output_dir, resume)
    model = load_for_training(recipe, data.base_path, data.revision, data.tokenizer)
    trainer = _trainer(recipe, data, model, output_dir)
    metrics = run_trainer(trainer, last, best_metric="best_eval_token_f1" if data.eval else None,
                          callbacks=callbacks)
    trainer.save_model(str(output_dir))  # weights (or adapter + head) and the tokenizer
    summary = ""  # one process renders the run
    if trainer.is_world_process_zero():
        detection = _tune_threshold(recipe, trainer.model, data)
        write_run_files(output_dir, recipe, fingerprint=fingerprint,
                        info=_run_info(recipe, data, model, metrics, last, detection),
                        trained_on=trained_on(data.selected))
        figure = (f"span F1 {detection['dev']['f1']:.3f}" if isinstance(detection.get("dev"), dict) else None)
        summary = (f"model and run info in {output_dir} (train_loss over the whole run="
                   f"{metrics['train_loss_whole_run'] or float('nan'):.4f}, {metrics['wall_s']} s). Decision: "
                   + threshold_decision(detection["threshold"], bool(detection.get("tuned")),
                                        recipe.data.eval_split, figure))
    return TrainResult(output_dir=output_dir, stats=data.stats, metrics=metrics, resumed_from=last,
                       summary=summary)


def _tune_threshold(recipe: TokenClassificationRecipe, model: Any, data: _Prepared) -> dict[str, Any]:
    """The run's detection settings: the threshold tuned on the eval records (or the recipe's, or 0.5)."""
    from ragtruth_spans.detectors.token_classification.detector import DEFAULT_THRESHOLD, TokenClassificationDetector
    from ragtruth_spans.detectors.token_classification.tuning import tune

    d = recipe.detection
    settings = {"aggregation": d.aggregation, "span_edges": d.span_edges}
    if not data.eval_records:
        return {"threshold": d.threshold or DEFAULT_THRESHOLD, "tuned": False, **settings}
    model.eval()
    detector = TokenClassificationDetector(model, data.tokenizer, scheme=recipe.labels.scheme,
                                           windows=window_settings(recipe), threshold=DEFAULT_THRESHOLD,
                                           batch_size=recipe.training.per_device_batch_size, **settings)
    tuned = tune(detector, data.eval_records, fixed_threshold=d.threshold, **settings)
    dev = tuned["dev"]
    logger.info("threshold %s (%s) on %s: span P %.3f R %.3f F1 %.3f — best F1 per aggregation: %s",
                tuned["threshold"], "tuned" if tuned["tuned"] else "fixed by the recipe", recipe.data.eval_split,
                dev["precision"], dev["recall"], dev["f1"],
                ", ".join(f"{k} {v['f1']:.3f}@{v['threshold']}" for k, v in tuned["aggregations"].items()))
    return tuned


def _run_info(recipe: TokenClassificationRecipe, data: _Prepared, model: Any, metrics: dict[str, Any],
              last: str | None, detection: dict[str, Any]) -> dict[str, Any]:
    return {
        "base_model": {"name_or_path": recipe.model.name_or_path, "revision": data.revision,
                       # the commit a hub revision such as "main" resolved to: a LoRA run reloads exactly this base
                       "resolved_revision": resolved_revision(model, data.base_path),
                       "path": BASE_MODEL_DIR if recipe.model.name_or_path == TINY else data.base_path,
                       "local": is_local_reference(data.base_path),
                       **gguf_record(data.base_path)},
        "finetuning": recipe.finetuning,
        "labels": list(label_names(recipe.labels.scheme)),
        "quantization": recipe.quantization.model_dump() if recipe.finetuning == "lora" else None,
        "data": data_record(data.selected, eval_split=recipe.data.eval_split,
                            examples_sha256=examples_sha256(data.train),
                            eval_extra={"examples_sha256": examples_sha256(data.eval)}),
        "train_metrics": metrics,
        "detection": detection,
        "resumed_from": last,
    }
