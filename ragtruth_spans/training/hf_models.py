"""Hugging Face model plumbing shared by the families that fine-tune transformers: dtypes, the 4-bit
bitsandbytes configuration (QLoRA), the pad token, and offline loading of local folders."""

from __future__ import annotations

from typing import Any

from ragtruth_spans.training.recipe import QuantizationSection


def torch_dtype(name: str, device: str | None = None) -> Any:
    """The torch dtype for a recipe dtype name; ``"auto"`` is passed through for ``from_pretrained``. On CPU
    (``device="cpu"``) everything runs in float32: bf16/fp16 matmuls are slow or unsupported there."""
    import torch

    if device == "cpu":
        return torch.float32
    return "auto" if name == "auto" else getattr(torch, name)


def bitsandbytes_config(quantization: QuantizationSection, device: str | None = None) -> Any:
    """The ``BitsAndBytesConfig`` of a recipe's ``quantization`` section: 4-bit weights (NF4 by default) with
    the section's compute and storage dtypes (compute in float32 on CPU)."""
    import torch
    from transformers import BitsAndBytesConfig

    q = quantization
    return BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type=q.quant_type, bnb_4bit_use_double_quant=q.double_quant,
        bnb_4bit_compute_dtype=torch_dtype(q.compute_dtype, device),
        bnb_4bit_quant_storage=getattr(torch, q.quant_storage))


def ensure_pad_token(tokenizer: Any) -> Any:
    """Give a tokenizer without a pad token its EOS token as pad token (Llama-class tokenizers have none)."""
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
