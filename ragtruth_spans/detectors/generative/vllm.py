"""vLLM backend for prediction (optional extra, GPU only: ``pip install 'ragtruth-spans[vllm]'``).

Serves the base model with the trained LoRA adapter (``LoRARequest``) and generates greedily. Prompts, parsing and
alignment are the same as the Hugging Face backend (:mod:`ragtruth_spans.detectors.generative.hf`), so both write
identical prediction files up to numerical differences. vLLM schedules every item of a ``detect_batch`` call
itself, so ``predict`` hands it large chunks (:attr:`VLLMDetector.preferred_chunk_size`).

Scores, as in the HF backend: span scores from the generated tokens' log-probabilities (``logprobs=1``, vLLM's
default ``raw_logprobs`` mode, i.e. before any logits processing). The response score ``1 - P(clean)``:

- when the greedy output *is* the clean completion, ``P(clean)`` is the product of its generated tokens'
  probabilities (no second call);
- otherwise a second ``generate`` call over prompt + clean-completion token ids with ``prompt_logprobs=0`` and
  ``max_tokens=1`` returns each prompt token's log-probability; those of the completion tokens are summed.

``prompt_logprobs`` are order-dependent when prefix caching is on (vllm-project/vllm#42019: values of cached
positions can be stale), so with ``score_clean`` the engine starts with ``enable_prefix_caching=False`` (pass
``enable_prefix_caching=True`` to trade exact scores for speed, or ``score_clean=False``). This backend is not
exercised by the repository's tests beyond a stand-in engine (they run on CPU without vllm).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.generative import prompts
from ragtruth_spans.detectors.generative.results import (
    DEFAULT_MAX_NEW_TOKENS,
    assemble_results,
    prepare_items,
    prompt_budget,
)
from ragtruth_spans.detectors.generative.run_dir import ModelDir
from ragtruth_spans.detectors.generative.scoring import (
    Generation,
    clean_completion_ids,
    hallucination_score,
    stop_token_ids,
)
from ragtruth_spans.detectors.shared.align import FUZZY_THRESHOLD

VLLM_LORA_RANKS = (8, 16, 32, 64, 128, 256, 320, 512)
"""LoRA ranks vLLM accepts for ``max_lora_rank``; the adapter's rank is rounded up to the next one."""


def import_vllm() -> tuple[Any, Any, Any]:
    """``(LLM, SamplingParams, LoRARequest)``, or an :class:`InputError` with the install command."""
    try:
        from vllm import LLM, SamplingParams
        from vllm.lora.request import LoRARequest
    except ImportError as exc:
        raise InputError(
            f"the vllm backend needs the optional 'vllm' package ({exc}); install it on a CUDA machine with "
            "`pip install 'ragtruth-spans[vllm]'`, or use `--backend hf`", field="backend") from None
    return LLM, SamplingParams, LoRARequest


class VLLMDetector(Detector):
    """The generative detector on vLLM: the same prompts, parsing, alignment and scores as
    :class:`~ragtruth_spans.detectors.generative.hf.GenerativeDetector`; vLLM schedules every item of a
    ``detect_batch`` call itself (give it large calls)."""

    kind = "generative"
    preferred_chunk_size = 4096

    def __init__(self, llm: Any, tokenizer: Any, lora_request: Any, sampling_params: Any, *,
                 max_new_tokens: int, max_length: int | None, fuzzy_threshold: float = FUZZY_THRESHOLD,
                 score_params: Any = None, stop_ids: set[int] | None = None, run_dir: str | None = None,
                 run: dict[str, Any] | None = None) -> None:
        """``sampling_params`` must request ``logprobs`` (span scores); ``score_params`` (``max_tokens=1``,
        ``prompt_logprobs=0``) enables the response score, None leaves it None; ``stop_ids`` end a generation."""
        self.llm = llm
        self.tokenizer = tokenizer
        self.lora_request = lora_request
        self.sampling_params = sampling_params
        self.score_params = score_params
        self.stop_ids = stop_ids if stop_ids is not None else stop_token_ids(tokenizer)
        self.run_dir = run_dir
        self.run = run or {}
        self.max_new_tokens = max_new_tokens
        self.max_length = max_length
        self.fuzzy_threshold = fuzzy_threshold

    @classmethod
    def from_pretrained(cls, path: str | Path, *, load_in_4bit: bool | None = None,
                        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, max_length: int | None = None,
                        score_clean: bool = True, **llm_kwargs: Any) -> VLLMDetector:
        """Start vLLM on the base model of a training output dir with its adapter; ``llm_kwargs`` go to
        ``vllm.LLM`` (e.g. ``gpu_memory_utilization``, ``tensor_parallel_size``). ``score_clean``: compute the
        response score (a second, prompt-scoring ``generate`` call per batch)."""
        LLM, SamplingParams, LoRARequest = import_vllm()
        from transformers import AutoTokenizer, GenerationConfig

        info = ModelDir.read(path)
        rank = int(json.loads((info.path / "adapter_config.json").read_text(encoding="utf-8"))["r"])
        max_lora_rank = next((r for r in VLLM_LORA_RANKS if r >= rank), rank)
        quantize = info.load_in_4bit if load_in_4bit is None else load_in_4bit
        kwargs: dict[str, Any] = {
            "model": info.base_model, "revision": info.revision, "tokenizer": str(info.path),
            "enable_lora": True, "max_lora_rank": max_lora_rank, "max_loras": 1,
            "enable_prefix_caching": not score_clean, "seed": 0,  # see the module docstring
        }
        if quantize:
            kwargs["quantization"] = "bitsandbytes"  # the same NF4 base the adapter was trained on (QLoRA)
        if info.max_length:
            kwargs["max_model_len"] = info.max_length if max_length is None else max_length
        kwargs.update(llm_kwargs)
        llm = LLM(**kwargs)
        sampling = SamplingParams(temperature=0.0, max_tokens=max_new_tokens, skip_special_tokens=True, logprobs=1)
        score_params = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=0) if score_clean else None
        lora = LoRARequest("ragtruth-spans-detector", 1, str(info.path))
        tokenizer = AutoTokenizer.from_pretrained(str(info.path))
        try:
            eos = GenerationConfig.from_pretrained(info.base_model, revision=info.revision).eos_token_id
        except OSError:  # no generation_config.json: the tokenizer's EOS only
            eos = None
        return cls(llm, tokenizer, lora, sampling, max_new_tokens=max_new_tokens,
                   max_length=max_length or info.max_length, score_params=score_params,
                   stop_ids=stop_token_ids(tokenizer, eos), run_dir=str(info.path),
                   run={"fingerprint": info.fingerprint, "load_in_4bit": quantize})

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "run_dir": self.run_dir, **self.run, "backend": "vllm",
                "max_new_tokens": self.max_new_tokens, "max_length": self.max_length,
                "score_clean": self.score_params is not None}

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        """Detect spans for each item, in input order (vLLM schedules the whole list itself); scores as in
        :meth:`~ragtruth_spans.detectors.generative.hf.GenerativeDetector.detect_batch`. A response too long for
        the window fails alone (``too_long``), as with the HF backend."""
        built, too_long = prepare_items(self.tokenizer, items,
                                        prompt_budget=prompt_budget(self.max_length, self.max_new_tokens))
        todo = sorted(built)
        # Token ids, tokenized exactly as the HF backend does (the rendered template already holds any BOS).
        prompt_ids = {i: prompts.prompt_token_ids(self.tokenizer, built[i][0]) for i in todo}
        outputs = self.llm.generate([{"prompt_token_ids": prompt_ids[i]} for i in todo], self.sampling_params,
                                    lora_request=self.lora_request, use_tqdm=False)
        generations = {i: _generation(out.outputs[0]) for i, out in zip(todo, outputs)}
        scores: dict[int, float] = {}
        if self.score_params is not None and todo:
            completions = {i: clean_completion_ids(self.tokenizer, built[i][0], prompt_ids[i], self.stop_ids)
                           for i in todo}
            for i in todo:  # a clean greedy output already carries P(clean)
                if generations[i].token_ids == completions[i]:
                    scores[i] = hallucination_score(sum(math.log(max(p, 1e-45)) for p in generations[i].token_probs))
            rest = [i for i in todo if i not in scores]
            scored = self.llm.generate([{"prompt_token_ids": prompt_ids[i] + completions[i]} for i in rest],
                                       self.score_params, lora_request=self.lora_request,
                                       use_tqdm=False) if rest else []
            for i, out in zip(rest, scored):
                scores[i] = hallucination_score(_tail_logprob(out, len(completions[i])))
        return assemble_results(self.tokenizer, items, built, too_long, generations, scores,
                                fuzzy_threshold=self.fuzzy_threshold)


def _generation(completion: Any) -> Generation:
    """A vLLM ``CompletionOutput`` (generated with ``logprobs=1``) as a :class:`Generation`: each generated
    token's probability is read from its entry in ``completion.logprobs`` (which always holds the sampled
    token)."""
    token_ids = list(completion.token_ids)
    probs = [math.exp(entry[token].logprob) for token, entry in zip(token_ids, completion.logprobs)]
    return Generation(text=completion.text, token_ids=token_ids, token_probs=probs)


def _tail_logprob(output: Any, n: int) -> float:
    """Sum of the log-probabilities of the last ``n`` prompt tokens of a vLLM ``RequestOutput`` generated with
    ``prompt_logprobs=0`` (``prompt_logprobs[k]`` maps prompt token ``k`` to its ``Logprob``; entry 0 is None)."""
    ids = list(output.prompt_token_ids)
    return sum(output.prompt_logprobs[k][ids[k]].logprob for k in range(len(ids) - n, len(ids)))
