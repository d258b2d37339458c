"""QLoRA fine-tuning of a generative span detector: TRL ``SFTTrainer`` + PEFT LoRA + bitsandbytes 4-bit.

Pipeline: prepared records → (task filter, seeded clean-example subsampling, context shortening) →
conversational prompt-completion examples (loss on the completion only) → 4-bit base model (or plain LoRA) →
``SFTTrainer`` → ``output_dir`` with the adapter, the tokenizer, ``recipe.yaml`` and ``run_info.json``.
Re-running with the same ``output_dir`` resumes from its last ``checkpoint-*``. Works under ``accelerate launch``
(DDP: one model copy per local rank; FSDP-QLoRA: ``quantization.quant_storage`` = ``model.dtype``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.generative.prompts import (
    CHAT_TEMPLATE_KWARGS,
    FALLBACK_CHAT_TEMPLATE,
    adapt_messages,
    build_messages,
    fit_context,
    format_target,
)
from ragtruth_spans.detectors.generative.recipe import GenerativeRecipe
from ragtruth_spans.detectors.generative.run_dir import BASE_MODEL_DIR
from ragtruth_spans.reporting.console import training_data_summary
from ragtruth_spans.training.data import (
    RecordStats,
    examples_sha256,
    file_sha256,
    load_training_records,
    select_records,
    training_file,
)
from ragtruth_spans.training.hf_models import bitsandbytes_config, ensure_pad_token, torch_dtype
from ragtruth_spans.training.recipe import TINY
from ragtruth_spans.training.run import TrainResult
from ragtruth_spans.training.run_dir import write_run_files


@dataclass
class DataStats(RecordStats):
    """:class:`RecordStats` plus the contexts shortened to fit ``max_length`` and the examples too long for it."""

    shortened: int = 0
    too_long: int = 0
    too_long_ids: list[str] = field(default_factory=list)


def build_examples(records: Sequence[Record], tokenizer: Any, max_length: int,
                   stats: DataStats) -> list[dict[str, Any]]:
    """TRL conversational prompt-completion examples; contexts are shortened to fit ``max_length`` tokens.

    An example whose prompt without context plus target still exceeds ``max_length`` cannot be trained on
    without cutting the response or target: it is dropped and counted in ``stats.too_long``.
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
        stats.shortened += shortened
        messages = adapt_messages(tokenizer, build_messages(rec.task_type, context, rec.response, rec.question))
        examples.append({"id": rec.id, "prompt": messages,
                         "completion": [{"role": "assistant", "content": target}],
                         "chat_template_kwargs": dict(CHAT_TEMPLATE_KWARGS)})
    stats.examples = len(examples)
    return examples


def ensure_base_model(recipe: GenerativeRecipe, output_dir: Path, records: Sequence[Record]) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the base model; builds the tiny random Llama under ``output_dir/base_model``."""
    if recipe.model.name_or_path != TINY:
        return recipe.model.name_or_path, recipe.model.revision
    base = output_dir / BASE_MODEL_DIR
    if not (base / "config.json").is_file():
        from ragtruth_spans.training.tiny import build_tiny_llama

        texts = [t for r in records for t in (r.context, r.response, r.question or "")]
        spec = recipe.model.tiny
        build_tiny_llama(base, seed=spec.seed, texts=texts, vocab_size=spec.vocab_size,
                         hidden_size=spec.hidden_size, num_hidden_layers=spec.num_hidden_layers,
                         num_attention_heads=spec.num_attention_heads, intermediate_size=spec.intermediate_size)
    return str(base), None


def is_fsdp() -> bool:
    """Whether this process runs under ``accelerate launch`` with FSDP."""
    return os.environ.get("ACCELERATE_USE_FSDP", "false").lower() == "true"


def load_tokenizer(path: str, revision: str | None):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, revision=revision)
    if not getattr(tokenizer, "chat_template", None):
        tokenizer.chat_template = FALLBACK_CHAT_TEMPLATE  # saved with the tokenizer, so inference renders the same
    return ensure_pad_token(tokenizer)


def load_model(recipe: GenerativeRecipe, path: str, revision: str | None):
    """The base model, 4-bit quantized unless ``quantization.enabled`` is false, ready for LoRA training."""
    import torch
    from accelerate import PartialState
    from transformers import AutoModelForCausalLM

    q = recipe.quantization
    kwargs: dict[str, Any] = {"revision": revision, "dtype": torch_dtype(recipe.model.dtype)}
    if recipe.model.attn_implementation:
        kwargs["attn_implementation"] = recipe.model.attn_implementation
    if q.enabled:
        kwargs["quantization_config"] = bitsandbytes_config(q)
    # One full model copy per process: pin it to this rank's GPU (DDP). FSDP places shards itself; CPU: no map.
    if torch.cuda.is_available() and not is_fsdp():
        kwargs["device_map"] = {"": PartialState().local_process_index}
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


def sft_config(recipe: GenerativeRecipe, output_dir: Path):
    import torch
    from trl import SFTConfig

    t = recipe.training
    # transformers 5 renamed gradient_checkpointing* to activation_checkpointing* (old names still work, with a warning)
    ckpt = ("activation_checkpointing" if "activation_checkpointing" in SFTConfig.__dataclass_fields__
            else "gradient_checkpointing")
    return SFTConfig(
        output_dir=str(output_dir),
        num_train_epochs=t.num_epochs,
        max_steps=t.max_steps if t.max_steps is not None else -1,
        learning_rate=t.learning_rate,
        lr_scheduler_type=t.lr_scheduler,
        warmup_steps=t.warmup_ratio,  # a float in [0, 1) is a ratio of the total steps in transformers 5
        weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm,
        optim=t.optim,
        per_device_train_batch_size=t.per_device_batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        **{ckpt: t.gradient_checkpointing, f"{ckpt}_kwargs": {"use_reentrant": False}},
        packing=t.packing,
        seed=t.seed,
        data_seed=t.seed,
        bf16=t.bf16,
        tf32=t.tf32 if torch.cuda.is_available() else None,
        logging_steps=t.logging_steps,
        logging_first_step=True,
        save_steps=t.save_steps,
        save_total_limit=t.save_total_limit,
        report_to=[] if recipe.logging.report_to == "none" else [recipe.logging.report_to],
        run_name=recipe.logging.run_name,
        max_length=recipe.data.max_length,
        completion_only_loss=True,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
    )


def train(recipe: GenerativeRecipe, *, console: Console | None = None, resume: bool = False,
          fingerprint: dict[str, Any] | None = None) -> TrainResult:
    """Fine-tune per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.training.run.train`);
    ``resume``: continue from the directory's last checkpoint; ``fingerprint`` goes into ``run_info.json``."""
    from accelerate import PartialState
    from datasets import Dataset
    from transformers import set_seed
    from transformers.trainer_utils import get_last_checkpoint
    from trl import SFTTrainer

    console = console or Console(stderr=True)
    output_dir = Path(recipe.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    set_seed(recipe.training.seed)

    records, source = load_training_records(recipe.data)
    stats = DataStats()
    records = select_records(records, recipe.data, stats)
    if not records:
        raise InputError(f"no training records left from {source} (tasks={recipe.data.tasks}, "
                         f"clean_fraction={recipe.data.clean_fraction})")
    with PartialState().main_process_first():  # under accelerate/torchrun, rank 0 builds the tiny base model
        base_path, revision = ensure_base_model(recipe, output_dir, records)
    tokenizer = load_tokenizer(base_path, revision)
    examples = build_examples(records, tokenizer, recipe.data.max_length, stats)
    if PartialState().is_main_process:
        console.print(training_data_summary(stats, source, recipe.data.max_length))
    if not examples:
        raise InputError(f"every example is longer than data.max_length={recipe.data.max_length}")
    data_hash = examples_sha256(examples)
    dataset = Dataset.from_list([{k: ex[k] for k in ("prompt", "completion", "chat_template_kwargs")}
                                 for ex in examples])

    last = get_last_checkpoint(str(output_dir)) if resume else None
    if last:
        console.print(f"[bold]resuming[/] from {last}")
    model = load_model(recipe, base_path, revision)
    trainer = SFTTrainer(model=model, args=sft_config(recipe, output_dir), train_dataset=dataset,
                         processing_class=tokenizer, peft_config=lora_config(recipe))
    if trainer.is_world_process_zero():
        trainer.model.print_trainable_parameters()
    start = time.time()
    result = trainer.train(resume_from_checkpoint=last)
    metrics = dict(result.metrics)
    metrics["wall_s"] = round(time.time() - start, 2)

    if trainer.is_fsdp_enabled:  # gather the sharded adapter into one file
        trainer.accelerator.state.fsdp_plugin.set_state_dict_type("FULL_STATE_DICT")
    trainer.save_model(str(output_dir))  # adapter_config.json, adapter_model.safetensors, tokenizer files
    if trainer.is_world_process_zero():
        tokenizer.save_pretrained(str(output_dir))
        write_run_files(output_dir, recipe, fingerprint=fingerprint, info={
            "base_model": {"name_or_path": recipe.model.name_or_path, "revision": revision,
                           "path": BASE_MODEL_DIR if recipe.model.name_or_path == TINY else base_path},
            "quantization": recipe.quantization.model_dump(),
            "data": {"source": source, "examples_sha256": data_hash,
                     "source_sha256": file_sha256(training_file(recipe.data)), "counts": asdict(stats)},
            "train_metrics": metrics,
            "resumed_from": last,
            "world_size": trainer.args.world_size,
        })
        console.print(f"[bold green]done[/]: adapter and run info in {output_dir} "
                      f"(train_loss={metrics.get('train_loss', float('nan')):.4f}, {metrics['wall_s']} s)")
    return TrainResult(output_dir=output_dir, stats=stats, metrics=metrics, resumed_from=last)
