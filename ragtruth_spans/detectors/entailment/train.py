"""``ragtruth-spans train`` for the entailment family: a transformers ``Trainer`` per stage, then the run directory.

Pipeline: the base encoder (a packaged model verified by SHA-256, a local folder, a hub id, or a tiny random BERT
built under ``base_model/``) → for each stage in order: its training pairs (``train.jsonl`` of its directories,
kept to ``sources``, a seeded sample of ``max_pairs``) tokenized as pairs → ``Trainer`` with the masked loss
(:mod:`.loss`), checkpoints every ``training.save_steps`` under ``checkpoint-stage-<n>/`` → the stage's model
saved in ``checkpoint-stage-<n>/final/`` and measured on its directories' ``dev.jsonl`` (``stage.json``, written
last, marks the stage done) → the last stage's model saved at the root as a standard Hugging Face
sequence-classification folder (``config.json`` with ``id2label``, ``model.safetensors``, tokenizer files) →
``metrics.json`` (per-source accuracy on ``evaluation.splits``) → ``recipe.yaml`` and ``run_info.json``
(:func:`~ragtruth_spans.runs.run_dir.write_run_files`) → the stage folders deleted.

A killed run resumes (``ragtruth-spans train`` again with the same recipe and data: the run directory rules of
:func:`ragtruth_spans.detectors.train.train` refuse other settings): finished stages are skipped, the current one
continues from its last checkpoint (``Trainer``'s ``resume_from_checkpoint``: weights, optimizer, scheduler, RNG
states and the data order). Progress: the ``Trainer``'s bar on a terminal, and every ``training.logging_steps``
a line with the pairs per second and the time left (:func:`eta_logger`), which a background run's log shows.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import atomic_write_json
from ragtruth_spans.core.jsonl import file_sha256, read_json_file
from ragtruth_spans.detectors.entailment.loss import accuracies, trainer_loss
from ragtruth_spans.detectors.entailment.model import (
    encode_pairs,
    load_classifier,
    load_tokenizer,
    pair_probabilities,
)
from ragtruth_spans.detectors.entailment.pairs import Pair, counts, load_split, sample_pairs, sample_per_source
from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe, StageSection
from ragtruth_spans.evaluation.overlap import TrainedOn, text_fingerprint
from ragtruth_spans.models.hf_models import check_report_to, is_local_reference
from ragtruth_spans.models.pretrained import PACKAGED_MODELS
from ragtruth_spans.models.tiny import BASE_MODEL_DIR, TINY
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.run import TrainResult, run_trainer

logger = logging.getLogger(__name__)

METRICS_FILE = "metrics.json"
STAGE_FILE = "stage.json"
FINAL_DIR = "final"
TINY_VOCAB_TEXTS = 4000
"""Texts of the first stage a tiny model's tokenizer is trained on."""


def stage_dir(output_dir: Path, index: int) -> Path:
    """Where stage ``index`` (0-based) keeps its checkpoints and, once done, its model (``final/``); the
    ``checkpoint-`` prefix keeps it out of the run's manifest and marks it as progress to resume."""
    return output_dir / f"checkpoint-stage-{index + 1}"


def measure(model: Any, tokenizer: Any, pairs: Sequence[Pair], *, max_length: int,
            batch_size: int) -> dict[str, Any]:
    """Per-source accuracies of ``model`` on ``pairs`` (:func:`~.loss.accuracies`) and the pairs per second."""
    started = time.perf_counter()
    probabilities = pair_probabilities(model, tokenizer, [(p.premise, p.hypothesis) for p in pairs],
                                       max_length=max_length, batch_size=batch_size)
    seconds = time.perf_counter() - started
    return {"sources": accuracies(pairs, probabilities),
            "pairs_per_second": round(len(pairs) / seconds, 1) if pairs and seconds > 0 else None}


def eta_logger(stage: str, pairs_per_step: int) -> Any:
    """A ``TrainerCallback`` logging every ``logging_steps`` steps the stage's step, pairs per second (of this
    session) and the time left at that pace."""
    from transformers import TrainerCallback

    class EtaLogger(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started, self.first_step = time.perf_counter(), state.global_step

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            done = state.global_step - self.first_step
            if not state.is_world_process_zero or done <= 0 or state.global_step % args.logging_steps:
                return
            per_step = (time.perf_counter() - self.started) / done
            left = int(per_step * (state.max_steps - state.global_step))
            logger.info("stage %s: step %d/%d, %.1f pairs/s, about %dh%02dm left", stage, state.global_step,
                        state.max_steps, pairs_per_step / per_step, left // 3600, left % 3600 // 60)

    return EtaLogger()


def _training_arguments(recipe: EntailmentRecipe, stage: StageSection, folder: Path) -> Any:
    import torch
    from transformers import TrainingArguments

    t = recipe.training
    return TrainingArguments(
        output_dir=str(folder), num_train_epochs=stage.epochs, max_steps=t.max_steps or -1,
        learning_rate=stage.learning_rate, lr_scheduler_type=t.lr_scheduler,
        warmup_steps=t.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps in transformers 5
        weight_decay=t.weight_decay, max_grad_norm=t.max_grad_norm, per_device_train_batch_size=t.per_device_batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps, seed=t.seed, data_seed=t.seed, bf16=t.bf16,
        logging_steps=t.logging_steps, logging_first_step=True, save_strategy="steps", save_steps=t.save_steps,
        save_total_limit=t.save_total_limit, eval_strategy="no",
        train_sampling_strategy="group_by_length" if t.group_by_length else "random",
        report_to=[] if recipe.logging.report_to == "none" else [recipe.logging.report_to],
        run_name=recipe.logging.run_name, use_cpu=not torch.cuda.is_available(), dataloader_num_workers=0,
        remove_unused_columns=False, disable_tqdm=False)


def _dataset(tokenizer: Any, pairs: Sequence[Pair], max_length: int) -> Any:
    from datasets import Dataset

    encoded = encode_pairs(tokenizer, [p.premise for p in pairs], [p.hypothesis for p in pairs], max_length)
    return Dataset.from_dict({**{name: encoded[name] for name in encoded},
                              "labels": [p.label for p in pairs]})


def stage_pairs(recipe: EntailmentRecipe, index: int) -> list[Pair]:
    """The training pairs of stage ``index``: its directories' ``train.jsonl``, kept to its sources, sampled."""
    stage = recipe.stages[index]
    pairs = load_split(stage.data, "train", sources=stage.sources, field=f"stages[{index}].data")
    pairs = sample_pairs(pairs, stage.max_pairs, recipe.training.seed + index)
    if not pairs:
        raise InputError(f"no training pair left in {', '.join(stage.data)} (sources: "
                         f"{', '.join(stage.sources or ['all'])})", field=f"stages[{index}]")
    return pairs


@dataclass
class _Stage:
    """A stage's outcome (``stage.json``): its pairs, the trainer's figures and its dev accuracies."""

    record: dict[str, Any]
    model_dir: Path


def _train_stage(recipe: EntailmentRecipe, index: int, start_from: str, tokenizer: Any, output_dir: Path, *,
                 resume: bool, callbacks: Sequence[Any]) -> _Stage:
    """Train stage ``index`` from the model folder ``start_from`` (continuing from the stage's last checkpoint
    when ``resume``), save it to ``final/``, measure it on dev and write ``stage.json``."""
    from transformers import DataCollatorWithPadding, Trainer
    from transformers.trainer_utils import get_last_checkpoint

    stage, folder = recipe.stages[index], stage_dir(output_dir, index)
    pairs = stage_pairs(recipe, index)
    logger.info("stage %d/%d (%s): %d training pairs from %s", index + 1, len(recipe.stages), stage.name,
                len(pairs), ", ".join(stage.data))
    last = get_last_checkpoint(str(folder)) if resume and folder.is_dir() else None
    if last:
        logger.info("resuming stage %s from %s", stage.name, last)
    model = load_classifier(start_from)
    t = recipe.training
    trainer = Trainer(model=model, args=_training_arguments(recipe, stage, folder),
                      train_dataset=_dataset(tokenizer, pairs, recipe.model.max_length), processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer), compute_loss_func=trainer_loss)
    pairs_per_step = t.per_device_batch_size * t.gradient_accumulation_steps
    metrics = run_trainer(trainer, last, callbacks=[*callbacks, eta_logger(stage.name, pairs_per_step)])
    final = folder / FINAL_DIR
    trainer.save_model(str(final))
    dev = load_split(stage.data, "dev", required=False)
    dev = sample_per_source(dev, recipe.evaluation.max_pairs_per_source, recipe.training.seed)
    record = {"name": stage.name, "data": list(stage.data), "sources": stage.sources, "pairs": len(pairs),
              "counts": counts(pairs), "resumed_from": last,
              "train": {k: metrics[k] for k in ("train_loss", "train_loss_whole_run", "train_runtime",
                                                "train_samples_per_second", "wall_s") if k in metrics},
              "steps": trainer.state.global_step,
              "dev": measure(trainer.model, tokenizer, dev, max_length=recipe.model.max_length,
                             batch_size=recipe.evaluation.batch_size) if dev else None}
    atomic_write_json(folder / STAGE_FILE, record)
    _log_accuracy(f"stage {stage.name} on dev", record["dev"])
    return _Stage(record, final)


def _log_accuracy(what: str, measured: dict[str, Any] | None) -> None:
    if not measured:
        logger.info("%s: no pairs to measure", what)
        return
    overall = measured["sources"]["all"]
    logger.info("%s: three-way accuracy %s, binary accuracy %.4f over %d pairs", what,
                overall["three_way_accuracy"], overall["binary_accuracy"], overall["pairs"])


def _base(recipe: EntailmentRecipe, output_dir: Path) -> tuple[str, str | None]:
    """The base encoder (a tiny one is built from the first stage's texts under ``base_model/``)."""
    def build_tiny(folder: Path) -> None:
        from ragtruth_spans.models.tiny import build_tiny_bert

        texts = [t for p in stage_pairs(recipe, 0)[:TINY_VOCAB_TEXTS] for t in (p.premise, p.hypothesis)]
        spec = recipe.model.tiny
        build_tiny_bert(folder, seed=spec.seed, texts=texts, vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                        num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
                        intermediate_size=spec.intermediate_size)

    if recipe.model.name_or_path != TINY:
        from ragtruth_spans.models.hf_models import resolve_base_model

        return resolve_base_model(recipe.model.name_or_path, recipe.model.revision)
    folder = output_dir / BASE_MODEL_DIR
    if not (folder / "config.json").is_file():
        build_tiny(folder)
    return str(folder), None


def base_model_record(recipe: EntailmentRecipe, path: str, revision: str | None) -> dict[str, Any]:
    """What ``run_info.json`` says of the base: its name, revision, the package or folder it came from (no folder
    for a packaged model: the installed package's path is the machine's) and the SHA-256 of its weights."""
    packaged = PACKAGED_MODELS.get(recipe.model.name_or_path)
    weights = Path(path) / "model.safetensors"
    digest = packaged.sha256 if packaged else file_sha256(weights) if is_local_reference(path) else None
    where = BASE_MODEL_DIR if recipe.model.name_or_path == TINY else None if packaged else path
    return {"name_or_path": recipe.model.name_or_path, "revision": revision,
            "package": packaged.pip_name if packaged else None, "path": where, "weights_sha256": digest}


def _stages(recipe: EntailmentRecipe, base: str, tokenizer: Any, output_dir: Path, *, resume: bool,
            callbacks: Sequence[Any]) -> list[_Stage]:
    """Every stage in order, each from the previous one's model; a stage a resumed run finished is read back."""
    done: list[_Stage] = []
    start_from = base
    for index in range(len(recipe.stages)):
        folder = stage_dir(output_dir, index)
        if resume and (folder / STAGE_FILE).is_file() and (folder / FINAL_DIR / "config.json").is_file():
            logger.info("stage %d (%s) finished before: skipped", index + 1, recipe.stages[index].name)
            stage = _Stage(read_json_file(folder / STAGE_FILE), folder / FINAL_DIR)
        else:
            stage = _train_stage(recipe, index, start_from, tokenizer, output_dir, resume=resume,
                                 callbacks=callbacks)
        done.append(stage)
        start_from = str(stage.model_dir)
    return done


def _measure_run(recipe: EntailmentRecipe, model: Any, tokenizer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(metrics, data)``: per-source accuracies on each of ``evaluation.splits`` of every stage directory, and
    the SHA-256 and counts of every file read."""
    metrics: dict[str, Any] = {}
    files: dict[str, str | None] = {}
    for split in recipe.evaluation.splits:
        pairs = sample_per_source(load_split(recipe.data_dirs(), split, required=False),
                                  recipe.evaluation.max_pairs_per_source, recipe.training.seed)
        metrics[split] = measure(model, tokenizer, pairs, max_length=recipe.model.max_length,
                                 batch_size=recipe.evaluation.batch_size) if pairs else None
        _log_accuracy(f"the trained model on {split}", metrics[split])
    for folder in recipe.data_dirs():
        for name in ("train", "dev", "test"):
            path = Path(folder) / f"{name}.jsonl"
            files[str(path)] = file_sha256(path)
    return metrics, {"files_sha256": files}


def _trained_on(recipe: EntailmentRecipe) -> TrainedOn:
    """The fingerprints of every premise (as sources) and hypothesis (as responses) trained on."""
    premises: set[str] = set()
    hypotheses: set[str] = set()
    records = 0
    for index in range(len(recipe.stages)):
        for pair in stage_pairs(recipe, index):
            premises.add(text_fingerprint(pair.premise))
            hypotheses.add(text_fingerprint(pair.hypothesis))
            records += 1
    return TrainedOn(frozenset(premises), frozenset(hypotheses), {"train": records})


def train(recipe: EntailmentRecipe, *, resume: bool = False, fingerprint: dict[str, Any] | None = None,
          callbacks: Sequence[Any] = ()) -> TrainResult:
    """Train per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.detectors.train.train`;
    ``resume``: continue the run there, see the module docstring); ``fingerprint`` goes into ``run_info.json``;
    ``callbacks``: ``TrainerCallback`` objects added to every stage's trainer."""
    from transformers import set_seed

    output_dir = Path(recipe.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    check_report_to(recipe.logging.report_to)
    set_seed(recipe.training.seed)
    started = time.perf_counter()
    base, revision = _base(recipe, output_dir)
    tokenizer = load_tokenizer(base, revision)
    stages = _stages(recipe, base, tokenizer, output_dir, resume=resume, callbacks=callbacks)
    model = load_classifier(str(stages[-1].model_dir))
    model.save_pretrained(str(output_dir))
    tokenizer.save_pretrained(str(output_dir))
    metrics, data = _measure_run(recipe, model, tokenizer)
    atomic_write_json(output_dir / METRICS_FILE, metrics)
    info = {"base_model": base_model_record(recipe, base, revision), "labels": list(model.config.id2label.values()),
            "max_length": recipe.model.max_length, "stages": [s.record for s in stages], "data": data,
            "metrics": METRICS_FILE, "detection": {"threshold": recipe.detection.threshold},
            "seconds": round(time.perf_counter() - started, 1)}
    write_run_files(output_dir, recipe, fingerprint=fingerprint, info=info, trained_on=_trained_on(recipe))
    for index in range(len(recipe.stages)):
        shutil.rmtree(stage_dir(output_dir, index), ignore_errors=True)  # checkpoints: the run is finished
    overall = (metrics.get("dev") or metrics.get("test") or {}).get("sources", {}).get("all", {})
    summary = (f"NLI model in {output_dir} ({len(stages)} stage(s), {sum(s.record['pairs'] for s in stages)} "
               f"training pairs, {info['seconds']} s); "
               + (f"three-way accuracy {overall.get('three_way_accuracy')}, binary "
                  f"{overall.get('binary_accuracy')} on {'dev' if metrics.get('dev') else 'test'}"
                  if overall else "no dev or test pairs measured"))
    return TrainResult(output_dir=output_dir, stats={"pairs": [s.record["pairs"] for s in stages]},
                       metrics=metrics, resumed_from=None, summary=summary)
