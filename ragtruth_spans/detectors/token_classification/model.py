"""The token classifier: base model resolution, loading for training (full fine-tuning, or (Q)LoRA with a
trainable head) and loading a saved run for inference.

A run directory holds either the whole fine-tuned model (``finetuning: full``: ``config.json`` +
``model.safetensors``) or a PEFT adapter (``finetuning: lora``: ``adapter_config.json`` +
``adapter_model.safetensors``, the classification head — ``classifier`` or ``score`` — saved in full with it),
plus the tokenizer, ``recipe.yaml`` and ``run_info.json``. A tiny random base lives in ``base_model/``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.token_classification.labels import label_names
from ragtruth_spans.detectors.token_classification.recipe import TokenClassificationRecipe
from ragtruth_spans.models.hf_models import (
    bitsandbytes_config,
    ensure_pad_token,
    is_local_reference,
    loading,
    torch_dtype,
)
from ragtruth_spans.training.skeleton import base_model, tiny_texts

HEADS = ("classifier", "score")
"""Names of the token-classification heads (BERT-style, Llama-style): newly initialised, kept in full precision
under 4-bit quantization, and trained in full under LoRA (PEFT's TOKEN_CLS ``modules_to_save``)."""


def ensure_base_model(recipe: TokenClassificationRecipe, output_dir: Path,
                      records: Sequence[Record]) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the base model: a tiny random BERT or Llama built under
    ``output_dir/base_model``; a packaged model's verified folder; a local folder (checked); or a hub id
    (:func:`~ragtruth_spans.training.skeleton.base_model`)."""
    def build_tiny(base: Path) -> None:
        from ragtruth_spans.models.tiny import build_tiny_bert, build_tiny_llama

        spec = recipe.model.tiny
        build = build_tiny_bert if spec.architecture == "bert" else build_tiny_llama
        build(base, seed=spec.seed, texts=tiny_texts(records), vocab_size=spec.vocab_size,
              hidden_size=spec.hidden_size, num_hidden_layers=spec.num_hidden_layers,
              num_attention_heads=spec.num_attention_heads, intermediate_size=spec.intermediate_size)

    return base_model(recipe.model, output_dir, build_tiny)


def load_tokenizer(path: str, revision: str | None = None) -> Any:
    """The base model's fast tokenizer (offsets need one), with a pad token."""
    from transformers import AutoTokenizer

    with loading(path, "tokenizer"):
        tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, local_files_only=is_local_reference(path))
    if not getattr(tokenizer, "is_fast", False):
        raise InputError("token classification needs a fast tokenizer (character offsets of tokens)", path=path)
    return ensure_pad_token(tokenizer)


def _model_kwargs(recipe: TokenClassificationRecipe, revision: str | None, path: str, device: str | None,
                  quantize: bool) -> dict[str, Any]:
    names = label_names(recipe.labels.scheme)
    kwargs: dict[str, Any] = {
        "revision": revision, "local_files_only": is_local_reference(path),
        "dtype": torch_dtype(recipe.model.dtype, device), "num_labels": len(names),
        "id2label": dict(enumerate(names)), "label2id": {name: i for i, name in enumerate(names)}}
    if recipe.model.attn_implementation and not (recipe.model.attn_implementation == "flash_attention_2"
                                                 and device == "cpu"):
        kwargs["attn_implementation"] = recipe.model.attn_implementation
    if recipe.model.attention_dropout is not None:
        kwargs.update(attention_probs_dropout_prob=recipe.model.attention_dropout,
                      attention_dropout=recipe.model.attention_dropout)
    if quantize:
        kwargs["quantization_config"] = bitsandbytes_config(recipe.quantization, device, skip_modules=list(HEADS))
    return kwargs


def _from_pretrained(path: str, kwargs: dict[str, Any], max_length: int) -> Any:
    from transformers import AutoConfig, AutoModelForTokenClassification

    with loading(path, "base model"):
        config = AutoConfig.from_pretrained(path, revision=kwargs["revision"],
                                            local_files_only=kwargs["local_files_only"])
        accepted = {k: v for k, v in kwargs.items()
                    if k not in ("attention_probs_dropout_prob", "attention_dropout") or hasattr(config, k)}
        model = AutoModelForTokenClassification.from_pretrained(path, **accepted)
    positions = getattr(model.config, "max_position_embeddings", None)
    if positions is not None and max_length > positions:
        raise InputError(f"data.max_length={max_length} exceeds the {positions} positions of {path}",
                         field="data.max_length")
    return model


def load_for_training(recipe: TokenClassificationRecipe, path: str, revision: str | None, tokenizer: Any) -> Any:
    """The model to train: every weight (``full``), or the base (4-bit when ``quantization.enabled``) wrapped in
    a PEFT LoRA model whose classification head is trained in full (``lora``)."""
    import torch
    from accelerate import PartialState

    quantize = recipe.finetuning == "lora" and recipe.quantization.enabled
    kwargs = _model_kwargs(recipe, revision, path, None, quantize)
    if torch.cuda.is_available():
        kwargs["device_map"] = {"": PartialState().local_process_index}
    model = _from_pretrained(path, kwargs, recipe.data.max_length)
    model.config.pad_token_id = tokenizer.pad_token_id
    if recipe.finetuning == "full":
        return model
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    if quantize:
        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=recipe.training.gradient_checkpointing,
            gradient_checkpointing_kwargs={"use_reentrant": False})
    lc = recipe.lora
    config = LoraConfig(r=lc.r, lora_alpha=lc.alpha, lora_dropout=lc.dropout, target_modules=lc.target_modules,
                        modules_to_save=list(lc.modules_to_save) if lc.modules_to_save else None, bias="none",
                        exclude_modules=list(HEADS), task_type="TOKEN_CLS")
    return get_peft_model(model, config)


def load_trained(run_dir: Path, recipe: TokenClassificationRecipe, base: str, revision: str | None, *,
                 device: str, load_in_4bit: bool | None = None) -> Any:
    """The trained classifier of a run directory, on ``device``, in eval mode (see the module docstring)."""
    if recipe.finetuning == "full":
        kwargs = _model_kwargs(recipe, None, str(run_dir), device, False)
        kwargs["local_files_only"] = True
        model = _from_pretrained(str(run_dir), kwargs, recipe.data.max_length).to(device)
        return model.eval()
    from peft import PeftModel

    quantize = recipe.quantization.enabled if load_in_4bit is None else load_in_4bit
    kwargs = _model_kwargs(recipe, revision, base, device, quantize)
    if quantize:
        kwargs["device_map"] = {"": device}
    model = _from_pretrained(base, kwargs, recipe.data.max_length)
    if not quantize:
        model = model.to(device)
    with loading(run_dir, "adapter"):
        model = PeftModel.from_pretrained(model, str(run_dir))
    if not quantize:
        model = model.merge_and_unload()
    return model.eval()
