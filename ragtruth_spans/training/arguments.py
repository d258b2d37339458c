"""The recipe → ``transformers.TrainingArguments`` mapping every Hugging Face trainer of the project shares
(TRL's ``SFTConfig`` extends ``TrainingArguments``, so the generative family passes the same keys)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.training.recipe import Recipe, TrainingSection


def checkpointing_keys(config_class: type, enabled: bool) -> dict[str, Any]:
    """Gradient checkpointing settings under the names ``config_class`` knows (transformers 5 renamed
    ``gradient_checkpointing*`` to ``activation_checkpointing*``; the old names still work, with a warning)."""
    name = ("activation_checkpointing" if "activation_checkpointing" in config_class.__dataclass_fields__
            else "gradient_checkpointing")
    return {name: enabled, f"{name}_kwargs": {"use_reentrant": False}}


def trainer_arguments(recipe: Recipe, training: TrainingSection, output_dir: Path, config_class: type, *,
                      evaluate: bool) -> dict[str, Any]:
    """Keyword arguments for ``config_class`` (``TrainingArguments`` or a subclass) from a recipe's
    ``training`` section. With ``evaluate``: the eval split is evaluated every ``eval_steps``, checkpoints are
    saved at the same steps and the best one is loaded at the end — by default the one of lowest eval loss
    (``metric_for_best_model="eval_loss"``); a family may override that metric (token classification keeps the
    checkpoint of highest ``token_f1``)."""
    import torch

    t = training
    kwargs: dict[str, Any] = dict(
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
        per_device_eval_batch_size=t.per_device_batch_size,
        gradient_accumulation_steps=t.gradient_accumulation_steps,
        **checkpointing_keys(config_class, t.gradient_checkpointing),
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
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        ddp_find_unused_parameters=False,
    )
    if evaluate:
        kwargs.update(eval_strategy="steps", eval_steps=t.eval_steps, save_strategy="steps",
                      load_best_model_at_end=True, metric_for_best_model="eval_loss", greater_is_better=False)
    return kwargs
