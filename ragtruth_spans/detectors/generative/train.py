"""QLoRA fine-tuning of a generative span detector: TRL ``SFTTrainer`` + PEFT LoRA + bitsandbytes 4-bit.

Pipeline: prepared records → (task filter, seeded clean-example subsampling, examples that fit ``max_length``
whole) → conversational prompt-completion examples (loss on the completion only) → 4-bit base model (or plain
LoRA) → ``SFTTrainer`` (with ``data.eval_split``: eval loss every ``eval_steps`` and the best checkpoint kept) →
``output_dir`` with the adapter, the tokenizer, ``recipe.yaml`` and ``run_info.json``. The run-directory rules
(resume, refuse) are applied by :func:`ragtruth_spans.detectors.train.train`. Works under ``accelerate launch``
(DDP: one model copy per local rank; FSDP-QLoRA: ``quantization.quant_storage`` = ``model.dtype``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.logs import log_lines
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.generative.prompts import (
    CHAT_TEMPLATE_KWARGS,
    FALLBACK_CHAT_TEMPLATE,
    adapt_messages,
    build_messages,
    fit_context,
    format_target,
    skeleton_texts,
)
from ragtruth_spans.detectors.generative.recipe import GenerativeRecipe
from ragtruth_spans.models.gguf import gguf_record
from ragtruth_spans.models.hf_models import (
    bitsandbytes_config,
    check_report_to,
    ensure_pad_token,
    is_local_reference,
    loading,
    resolved_revision,
    torch_dtype,
)
from ragtruth_spans.models.tiny import BASE_MODEL_DIR, TINY
from ragtruth_spans.reporting.console import training_data_summary
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.arguments import trainer_arguments
from ragtruth_spans.training.data import RecordStats, examples_sha256
from ragtruth_spans.training.run import TrainResult, last_checkpoint, run_trainer
from ragtruth_spans.training.skeleton import SelectedData, base_model, data_record, select_data, tiny_texts, trained_on

logger = logging.getLogger(__name__)


@dataclass
class DataStats(RecordStats):
    """:class:`RecordStats` plus the examples dropped because their context had to be shortened to fit
    ``max_length`` (the cut may have removed the evidence their labels rely on) or because even the response and
    target alone do not fit."""

    shortened: int = 0
    too_long: int = 0
    too_long_ids: list[str] = field(default_factory=list)
    shortened_ids: list[str] = field(default_factory=list)


def build_examples(records: Sequence[Record], tokenizer: Any, max_length: int,
                   stats: DataStats) -> list[dict[str, Any]]:
    """TRL conversational prompt-completion examples of the records that fit ``max_length`` tokens whole.

    A record whose context would have to be shortened is dropped (counted in ``stats.shortened``): with part of
    the evidence cut, a "clean" label would teach the model to accept unsupported text, and the spans of a
    hallucinated one would no longer be all that the visible evidence leaves unsupported. A record whose prompt
    without context plus target still exceeds ``max_length`` is dropped too (``stats.too_long``).
    """
    examples = []
    for rec in records:
        target = format_target(rec.spans)
        try:
            context, shortened = fit_context(tokenizer, rec.task_type, rec.context, rec.response, rec.question,
                                             target, max_length)
        except InputError:
            stats.too_long += 1
            stats.too_long_ids.append(rec.id)
            continue
        if shortened:
            stats.shortened += 1
            stats.shortened_ids.append(rec.id)
            continue
        messages = adapt_messages(tokenizer, build_messages(rec.task_type, context, rec.response, rec.question))
        examples.append({"id": rec.id, "prompt": messages,
                         "completion": [{"role": "assistant", "content": target}],
                         "chat_template_kwargs": dict(CHAT_TEMPLATE_KWARGS)})
    stats.examples = len(examples)
    return examples


def ensure_base_model(recipe: GenerativeRecipe, output_dir: Path, records: Sequence[Record]) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the base model (:func:`~ragtruth_spans.training.skeleton.base_model`): the
    tiny random Llama, built under ``output_dir/base_model``; a packaged model's verified folder; a local folder
    (checked now, not after a hub lookup); or a hub id."""
    def build(base: Path) -> None:
        from ragtruth_spans.models.tiny import build_tiny_llama

        spec = recipe.model.tiny
        build_tiny_llama(base, seed=spec.seed, texts=tiny_texts(records), skeleton=skeleton_texts(),
                         vocab_size=spec.vocab_size, hidden_size=spec.hidden_size,
                         num_hidden_layers=spec.num_hidden_layers, num_attention_heads=spec.num_attention_heads,
                         intermediate_size=spec.intermediate_size)

    return base_model(recipe.model, output_dir, build)


def is_fsdp() -> bool:
    """Whether this process runs under ``accelerate launch`` with FSDP."""
    return os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"


def load_tokenizer(path: str, revision: str | None):
    from transformers import AutoTokenizer

    with loading(path, "tokenizer"):
        tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, local_files_only=is_local_reference(path))
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = FALLBACK_CHAT_TEMPLATE  # saved with the tokenizer, so inference renders the same
    return ensure_pad_token(tokenizer)


def load_model(recipe: GenerativeRecipe, path: str, revision: str | None):
    """The base model, 4-bit quantized unless ``quantization.enabled`` is false, ready for LoRA training."""
    import torch
    from accelerate import PartialState
    from transformers import AutoModelForCausalLM

    q = recipe.quantization
    kwargs: dict[str, Any] = {"revision": revision, "dtype": torch_dtype(recipe.model.dtype),
                              "local_files_only": is_local_reference(path)}
    if recipe.model.attn_implementation:
        kwargs["attn_implementation"] = recipe.model.attn_implementation
    if q.enabled:
        kwargs["quantization_config"] = bitsandbytes_config(q)
    # One full model copy per process: pin it to this rank's GPU (DDP). FSDP places shards itself; CPU: no map.
    if torch.cuda.is_available() and not is_fsdp():
        kwargs["device_map"] = {"": PartialState().local_process_index}
    with loading(path, "base model"):
        model = AutoModelForCausalLM.from_pretrained(path, **kwargs)
    model.config.use_cache = False  # incompatible with gradient checkpointing; irrelevant for training
    if q.enabled and not is_fsdp():
        # Upcasts the non-quantized parameters (norms, embeddings) to fp32 for stable QLoRA training. Skipped under
        # FSDP, which needs every parameter in one dtype (that of quant_storage).
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=recipe.training.gradient_checkpointing,
            gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def lora_config(recipe: GenerativeRecipe):
    from peft import LoraConfig

    lc = recipe.lora
    return LoraConfig(r=lc.r, lora_alpha=lc.alpha, lora_dropout=lc.dropout, target_modules=lc.target_modules,
                      modules_to_save=lc.modules_to_save, bias="none", task_type="CAUSAL_LM")


def sft_config(recipe: GenerativeRecipe, output_dir: Path, *, evaluate: bool = False):
    """TRL's ``SFTConfig``: the shared trainer arguments plus packing, the length budget and loss on the
    completion only."""
    from trl import SFTConfig

    return SFTConfig(**trainer_arguments(recipe, recipe.training, output_dir, SFTConfig, evaluate=evaluate),
                     packing=recipe.training.packing, max_length=recipe.data.max_length, completion_only_loss=True)


@dataclass
class _Prepared:
    tokenizer: Any
    base_path: str
    revision: str | None
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    stats: DataStats
    eval_stats: DataStats | None
    source: str
    selected: SelectedData


def _prepare(recipe: GenerativeRecipe, output_dir: Path) -> _Prepared:
    from accelerate import PartialState

    selected = select_data(recipe.data, DataStats(), DataStats(), eval_as_training=True)
    stats, source, eval_stats = selected.stats, selected.source, selected.eval_stats
    with PartialState().main_process_first():  # under accelerate/torchrun, rank 0 builds the tiny base model
        base_path, revision = ensure_base_model(recipe, output_dir, selected.train)
    tokenizer = load_tokenizer(base_path, revision)
    examples = build_examples(selected.train, tokenizer, recipe.data.max_length, stats)
    eval_examples = []
    if selected.eval is not None:
        eval_examples = build_examples(selected.eval, tokenizer, recipe.data.max_length, eval_stats)
        if not eval_examples:
            raise InputError(f"no evaluation example left from {selected.eval_source} (data.eval_split="
                             f"{recipe.data.eval_split}); set data.eval_split=null to train without one")
    if PartialState().is_main_process:
        log_lines(logger, training_data_summary(stats, source, recipe.data.max_length))
        if eval_stats is not None:
            log_lines(logger, training_data_summary(eval_stats, selected.eval_source, recipe.data.max_length))
    if not examples:
        raise InputError(f"no example fits data.max_length={recipe.data.max_length} whole")
    return _Prepared(tokenizer, base_path, revision, examples, eval_examples, stats, eval_stats, source, selected)


def _dataset(examples: Sequence[dict[str, Any]]):
    from datasets import Dataset

    return Dataset.from_list([{k: ex[k] for k in ("prompt", "completion", "chat_template_kwargs")}
                              for ex in examples])


def train(recipe: GenerativeRecipe, *, resume: bool = False,
          fingerprint: dict[str, Any] | None = None, callbacks: Sequence[Any] = ()) -> TrainResult:
    """Fine-tune per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.detectors.train.train`);
    ``resume``: continue from the directory's last checkpoint; ``fingerprint`` goes into ``run_info.json``;
    ``callbacks``: ``TrainerCallback`` objects added to the trainer."""
    from transformers import set_seed
    from trl import SFTTrainer

    output_dir = Path(recipe.output_dir)
    check_report_to(recipe.logging.report_to)
    set_seed(recipe.training.seed)
    data = _prepare(recipe, output_dir)
    last = last_checkpoint(output_dir, resume)
    model = load_model(recipe, data.base_path, data.revision)
    trainer = SFTTrainer(model=model, args=sft_config(recipe, output_dir, evaluate=bool(data.eval)),
                         train_dataset=_dataset(data.train), eval_dataset=_dataset(data.eval) if data.eval else None,
                         processing_class=data.tokenizer, peft_config=lora_config(recipe))
    if trainer.is_world_process_zero():
        trainable, total = trainer.model.get_nb_trainable_parameters()
        logger.info("trainable parameters: %s of %s (%.2f%%)", f"{trainable:,}", f"{total:,}",
                    100 * trainable / total)
    metrics = run_trainer(trainer, last, best_metric="best_eval_loss" if data.eval else None, callbacks=callbacks)

    if trainer.is_fsdp_enabled:  # gather the sharded adapter into one file
        trainer.accelerator.state.fsdp_plugin.set_state_dict_type("FULL_STATE_DICT")
    trainer.save_model(str(output_dir))  # adapter_config.json, adapter_model.safetensors, tokenizer files
    if trainer.is_world_process_zero():
        data.tokenizer.save_pretrained(str(output_dir))
        write_run_files(output_dir, recipe, fingerprint=fingerprint, info=_run_info(recipe, data, model, metrics,
                                                                                    last, trainer.args.world_size),
                        trained_on=trained_on(data.selected))
    summary = (f"adapter and run info in {output_dir} (train_loss over the whole run="
               f"{metrics['train_loss_whole_run'] or float('nan'):.4f}, {metrics['wall_s']} s)"
               if trainer.is_world_process_zero() else "")  # one process renders the run
    return TrainResult(output_dir=output_dir, stats=data.stats, metrics=metrics, resumed_from=last,
                       summary=summary)


def _run_info(recipe: GenerativeRecipe, data: _Prepared, model: Any, metrics: dict[str, Any], last: str | None,
              world_size: int) -> dict[str, Any]:
    return {
        "base_model": {"name_or_path": recipe.model.name_or_path, "revision": data.revision,
                       # the commit a hub revision such as "main" resolved to: predict loads exactly this base
                       "resolved_revision": resolved_revision(model, data.base_path),
                       "path": BASE_MODEL_DIR if recipe.model.name_or_path == TINY else data.base_path,
                       **gguf_record(data.base_path)},
        "quantization": recipe.quantization.model_dump(),
        "data": data_record(data.selected, eval_split=recipe.data.eval_split,
                            examples_sha256=examples_sha256(data.train),
                            eval_extra={"examples_sha256": examples_sha256(data.eval)}),
        "train_metrics": metrics,
        "resumed_from": last,
        "world_size": world_size,
    }
