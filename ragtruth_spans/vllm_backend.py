"""vLLM backend for prediction (optional extra, GPU only: ``pip install 'ragtruth-spans[vllm]'``).

Serves the base model with the trained LoRA adapter (``LoRARequest``) and automatic prefix caching, and
generates greedily. Prompts, parsing and alignment are the same as the Hugging Face backend
(:mod:`ragtruth_spans.detector`), so both write identical prediction files up to numerical differences.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .align import FUZZY_THRESHOLD
from .detector import DEFAULT_MAX_NEW_TOKENS, DetectionResult, ModelDir, build_prompt, finish, item_fields
from .detector import prompt_budget as _prompt_budget
from .schema import Record

VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)
"""LoRA ranks vLLM accepts for ``max_lora_rank``; the adapter's rank is rounded up to the next one."""


class BackendUnavailable(RuntimeError):
    """The requested backend's optional dependency is not installed."""


def import_vllm() -> tuple[Any, Any, Any]:
    """``(LLM, SamplingParams, LoRARequest)``, or :class:`BackendUnavailable` with the install command."""
    try:
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
    except ImportError as exc:
        raise BackendUnavailable(
            f"the vllm backend needs the optional 'vllm' package ({exc}); install it on a CUDA machine with "
            "`pip install 'ragtruth-spans[vllm]'`, or use `--backend hf`") from None
    return LLM, SamplingParams, LoRARequest


class VLLMDetector:
    """Same interface as :class:`~ragtruth_spans.detector.Detector` (``detect_batch``), generation by vLLM."""

    def __init__(self, llm: Any, tokenizer: Any, lora_request: Any, sampling_params: Any, *,
                 max_new_tokens: int, max_length: int | None, fuzzy_threshold: float = FUZZY_THRESHOLD) -> None:
        self.llm = llm
        self.tokenizer = tokenizer
        self.lora_request = lora_request
        self.sampling_params = sampling_params
        self.max_new_tokens = max_new_tokens
        self.max_length = max_length
        self.fuzzy_threshold = fuzzy_threshold

    @classmethod
    def from_pretrained(cls, path: str | Path, *, load_in_4bit: bool | None = None,
                        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, max_length: int | None = None,
                        **llm_kwargs: Any) -> VLLMDetector:
        """Start vLLM on the base model of a training output dir with its adapter; ``llm_kwargs`` go to
        ``vllm.LLM`` (e.g. ``gpu_memory_utilization``, ``tensor_parallel_size``)."""
        LLM, SamplingParams, LoRARequest = import_vllm()
        from transformers import AutoTokenizer

        info = ModelDir.read(path)
        rank = int(json.loads((info.path / "adapter_config.json").read_text(encoding="utf-8"))["r"])
        max_lora_rank = next((r for r in VLLM_LORA_RANKS if r >= rank), rank)
        quantize = info.load_in_4bit if load_in_4bit is None else load_in_4bit
        kwargs: dict[str, Any] = {
            "model": info.base_model, "revision": info.revision, "tokenizer": str(info.path),
            "enable_lora": True, "max_lora_rank": max_lora_rank, "max_loras": 1,
            "enable_prefix_caching": True, "seed": 0,
        }
        if quantize:
            kwargs["quantization"] = "bitsandbytes"  # the same NF4 base the adapter was trained on (QLoRA)
        if info.max_length:
            kwargs["max_model_len"] = info.max_length if max_length is None else max_length
        kwargs.update(llm_kwargs)
        llm = LLM(**kwargs)
        sampling = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, skip_special_tokens=True)
        lora = LoRARequest("ragtruth-spans-detector", 1, str(info.path))
        tokenizer = AutoTokenizer.from_pretrained(str(info.path))
        return cls(llm, tokenizer, lora, sampling, max_new_tokens=max_new_tokens,
                   max_length=max_length or info.max_length)

    def detect_batch(self, items: Sequence[dict[str, Any] | Record], batch_size: int = 64,
                     on_batch: Callable[[int], None] | None = None) -> list[DetectionResult]:
        """Detect spans for each item, in input order (vLLM schedules the whole list itself)."""
        budget = _prompt_budget(self.max_length, self.max_new_tokens)
        built = [build_prompt(self.tokenizer, item, prompt_budget=budget) for item in items]
        # Token ids, tokenized exactly as the HF backend does (the rendered template already holds any BOS).
        token_prompts = [{"prompt_token_ids": self.tokenizer(p, add_special_tokens=False)["input_ids"]}
                         for p, _ in built]
        outputs = self.llm.generate(token_prompts, self.sampling_params, lora_request=self.lora_request,
                                    use_tqdm=False)
        if on_batch is not None:
            on_batch(len(items))
        return [finish(item_fields(item)[2], out.outputs[0].text, shortened=shortened,
                       fuzzy_threshold=self.fuzzy_threshold)
                for item, out, (_, shortened) in zip(items, outputs, built)]
