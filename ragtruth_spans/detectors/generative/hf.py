"""The generative detector on the Hugging Face backend: base model + LoRA adapter, greedy batched generation.

``GenerativeDetector.from_pretrained(run_dir)`` loads what ``ragtruth-spans train`` wrote; ``detect_batch`` builds
the same prompt as training (``prompts.build_messages`` → ``fit_context`` → ``render_prompt``), generates greedily
(left padding, prompts of similar length together), parses the generated JSON
(:mod:`ragtruth_spans.detectors.shared.parsing`) and aligns each span text to character offsets of the response
(:mod:`ragtruth_spans.detectors.shared.align`), half-open ``[start, end)``. Scores: see :mod:`.scoring`.
"""

from __future__ import annotations

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
from ragtruth_spans.models.hf_models import bitsandbytes_config, ensure_pad_token, loading, torch_dtype


class GenerativeDetector(Detector):
    """A trained generative detector (Hugging Face backend).

    ``batch_size``: responses generated together. ``score_clean``: compute the response score ``1 - P(clean)``
    (one extra forward pass per batch); False leaves ``Detection.score`` None. Span scores are always computed
    (they come with the generation).
    """

    kind = "generative"

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 max_length: int | None = None, fuzzy_threshold: float = FUZZY_THRESHOLD,
                 score_clean: bool = True, batch_size: int = 8, run_dir: str | None = None,
                 run: dict[str, Any] | None = None) -> None:
        if batch_size < 1:
            raise InputError(f"must be >= 1, got {batch_size}", field="batch_size")
        self.model = model
        self.tokenizer = ensure_pad_token(tokenizer)
        self.max_new_tokens = max_new_tokens
        self.max_length = max_length
        self.fuzzy_threshold = fuzzy_threshold
        self.score_clean = score_clean
        self.batch_size = batch_size
        self.run_dir = run_dir
        self.run = run or {}  # what identifies the loaded run: fingerprint, 4-bit or not
        self.generated_tokens = 0  # running count of generated tokens (padding excluded), for throughput reports
        tokenizer.padding_side = "left"

    @classmethod
    def from_pretrained(cls, path: str | Path, *, load_in_4bit: bool | None = None, device: str | None = None,
                        max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS, max_length: int | None = None,
                        merge: bool = True, score_clean: bool = True, batch_size: int = 8) -> GenerativeDetector:
        """Load a training output directory: base model (+ 4-bit if the recipe or ``load_in_4bit`` says so) and
        the LoRA adapter, tokenizer from ``path``.

        ``device``: "cpu", "cuda", ... (default: CUDA when available). ``max_length``: prompt + generation token
        budget (default: the recipe's ``data.max_length``). ``merge``: merge the adapter into unquantized weights
        for faster generation.
        """
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM, AutoTokenizer

        info = ModelDir.read(path)
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        quantize = info.load_in_4bit if load_in_4bit is None else load_in_4bit
        kwargs: dict[str, Any] = {"dtype": torch_dtype(info.recipe.model.dtype, device), "revision": info.revision}
        attn = info.recipe.model.attn_implementation
        if attn and not (attn == "flash_attention_2" and device == "cpu"):
            kwargs["attn_implementation"] = attn
        if quantize:
            kwargs["quantization_config"] = bitsandbytes_config(info.recipe.quantization, device)
            kwargs["device_map"] = {"": device}
        local = info.base_is_local
        with loading(info.base_model, "base model"):
            base = AutoModelForCausalLM.from_pretrained(info.base_model, local_files_only=local, **kwargs)
        if not quantize:
            base = base.to(device)
        with loading(info.path, "LoRA adapter"):
            model = PeftModel.from_pretrained(base, str(info.path), local_files_only=True)
        if merge and not quantize:
            model = model.merge_and_unload()
        model.eval()
        with loading(info.path, "tokenizer"):
            tokenizer = AutoTokenizer.from_pretrained(str(info.path), local_files_only=True)
        return cls(model, tokenizer, max_new_tokens=max_new_tokens, max_length=max_length or info.max_length,
                   score_clean=score_clean, batch_size=batch_size, run_dir=str(info.path),
                   run={"fingerprint": info.fingerprint, "load_in_4bit": quantize})

    @property
    def prompt_budget(self) -> int | None:
        return prompt_budget(self.max_length, self.max_new_tokens)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "run_dir": self.run_dir, **self.run, "backend": "hf",
                "max_new_tokens": self.max_new_tokens, "max_length": self.max_length, "score_clean": self.score_clean}

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        """Detect spans for each item, in input order; prompts of similar length are generated together, in
        batches of :attr:`batch_size`.

        Scores (probabilities of the model, in [0, 1]):

        - ``Detection.score = 1 - P(clean)`` (when ``score_clean``): ``P(clean)`` is the probability of generating
          exactly the clean completion (:func:`~.scoring.clean_completion_ids`: ``[]`` and the end-of-turn tokens,
          as in training), computed by teacher forcing that reuses the generation's KV cache of the prompt
          (:meth:`generate_and_score`);
        - ``span.score``: the mean probability of the generated tokens that spell the item's ``text`` value,
          located in the generated text left to right (JSON-escaped form first). An item whose text cannot be
          located in the raw output (e.g. a repaired, single-quoted output with other escapes) gets the mean
          probability of all its generation's tokens instead.
        """
        built, too_long = prepare_items(self.tokenizer, items, prompt_budget=self.prompt_budget)
        prompt_ids = {i: prompts.prompt_token_ids(self.tokenizer, messages) for i, (messages, _) in built.items()}
        order = sorted(built, key=lambda i: len(prompt_ids[i]))
        generations: dict[int, Generation] = {}
        scores: dict[int, float] = {}
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            completions = [clean_completion_ids(self.tokenizer, built[i][0], prompt_ids[i], self.stop_ids)
                           for i in chunk] if self.score_clean else None
            batch, clean_logprobs = self.generate_and_score([prompt_ids[i] for i in chunk], completions)
            generations.update(zip(chunk, batch))
            if clean_logprobs is not None:
                scores.update((i, hallucination_score(lp)) for i, lp in zip(chunk, clean_logprobs))
        return assemble_results(self.tokenizer, items, built, too_long, generations, scores,
                                fuzzy_threshold=self.fuzzy_threshold)

    @property
    def stop_ids(self) -> set[int]:
        """Token ids that end a generation (:func:`~.scoring.stop_token_ids` of the model's generation config)."""
        config = getattr(self.model, "generation_config", None)
        return stop_token_ids(self.tokenizer, getattr(config, "eos_token_id", None))

    def generate_ids(self, prompt_ids: Sequence[list[int]]) -> list[Generation]:
        """Greedy generations for prompt token ids (one left-padded batch); see :meth:`generate_and_score`."""
        return self.generate_and_score(prompt_ids)[0]

    def generate_and_score(self, prompt_ids: Sequence[list[int]], completion_ids: Sequence[list[int]] | None = None
                           ) -> tuple[list[Generation], list[float] | None]:
        """Greedy generations for prompt token ids (one left-padded batch), with each generated token's probability
        under the model (softmax of the raw logits, ``output_logits=True``); and, when ``completion_ids`` are
        given, ``log P(completion | prompt)`` of each by teacher forcing that reuses the prompt's KV cache from the
        generation: the first completion token is scored from the first generation step's logits, the others by
        one forward pass over the completion tokens alone (no second prefill of the prompt)."""
        import torch

        input_ids, attention_mask = self._left_pad(prompt_ids)
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=attention_mask,
                                      max_new_tokens=self.max_new_tokens, do_sample=False,
                                      pad_token_id=self.tokenizer.pad_token_id, return_dict_in_generate=True,
                                      output_logits=True)
            new_tokens = out.sequences[:, input_ids.shape[1]:]
            steps = len(out.logits)
            token_logprobs = torch.stack([
                torch.log_softmax(out.logits[t].float(), dim=-1).gather(-1, new_tokens[:, t:t + 1]).squeeze(-1)
                for t in range(steps)], dim=1) if steps else new_tokens.new_zeros((len(prompt_ids), 0)).float()
            clean = None
            if completion_ids is not None:
                clean = self._cached_completion_logprobs(out, attention_mask, completion_ids)
        del out
        self.generated_tokens += int((new_tokens != self.tokenizer.pad_token_id).sum())
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        stop = torch.tensor(sorted(self.stop_ids), dtype=torch.long, device=new_tokens.device)
        generations = []
        for row, text, logprobs in zip(new_tokens, texts, token_logprobs):
            is_stop = torch.isin(row, stop).nonzero()
            length = int(is_stop[0]) + 1 if len(is_stop) else len(row)
            generations.append(Generation(text=text, token_ids=row[:length].tolist(),
                                          token_probs=logprobs[:length].exp().tolist()))
        return generations, clean

    def _cached_completion_logprobs(self, out: Any, attention_mask: Any,
                                    completion_ids: Sequence[list[int]]) -> list[float]:
        """``log P(completion | prompt)`` from a ``generate`` output: its cache, cut back to the prompt, and the
        logits of its first step (which predict the first token after the prompt)."""
        import torch

        width = attention_mask.shape[1]
        first = torch.log_softmax(out.logits[0].float(), dim=-1)
        totals = [float(first[row, c[0]]) if c else 0.0 for row, c in enumerate(completion_ids)]
        rest = [list(c[:-1]) for c in completion_ids]  # tokens fed to predict completion tokens 1..n-1
        longest = max(len(r) for r in rest)
        if longest == 0:
            return totals
        cache = out.past_key_values
        cache.crop(-(cache.get_seq_length() - width))
        pad = self.tokenizer.pad_token_id
        device = attention_mask.device
        feed = torch.tensor([r + [pad] * (longest - len(r)) for r in rest], dtype=torch.long, device=device)
        feed_mask = torch.tensor([[1] * len(r) + [0] * (longest - len(r)) for r in rest], dtype=torch.long,
                                 device=device)
        positions = attention_mask.long().sum(-1, keepdim=True) + torch.arange(longest, device=device)[None, :]
        logits = self.model(input_ids=feed, attention_mask=torch.cat([attention_mask, feed_mask], dim=1),
                            position_ids=positions, past_key_values=cache, use_cache=True).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        for row, completion in enumerate(completion_ids):
            for k, token in enumerate(completion[1:]):
                totals[row] += float(logprobs[row, k, token])
        return totals

    def completion_logprobs(self, prompt_ids: Sequence[list[int]],
                            completion_ids: Sequence[list[int]]) -> list[float]:
        """``log P(completion | prompt)`` for each pair, by teacher forcing with a full forward pass over the
        left-padded batch of prompt + completion ids (position ids follow the attention mask, as in ``generate``).
        :meth:`detect_batch` gets the same numbers without this second prefill (:meth:`generate_and_score`); this
        stand-alone form scores completions when no generation is run."""
        import torch

        if not prompt_ids:
            return []
        input_ids, attention_mask = self._left_pad([p + c for p, c in zip(prompt_ids, completion_ids)])
        keep = max(len(c) for c in completion_ids) + 1  # logits at position t predict the token at t + 1
        position_ids = (attention_mask.long().cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                logits_to_keep=keep).logits[:, -keep:]
            logprobs = torch.log_softmax(logits.float(), dim=-1)
        totals = []
        for row, completion in enumerate(completion_ids):
            n = len(completion)
            targets = torch.tensor(completion, device=logprobs.device)
            # completion tokens are the last n of the row; their predictions sit at kept positions keep-1-n .. keep-2
            picked = logprobs[row, keep - 1 - n:keep - 1].gather(-1, targets[:, None])
            totals.append(float(picked.sum()))
        return totals

    def _left_pad(self, sequences: Sequence[list[int]]) -> tuple[Any, Any]:
        """``(input_ids, attention_mask)`` tensors on the model's device, left-padded with the pad token."""
        import torch

        width = max(len(s) for s in sequences)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(s)) + list(s) for s in sequences], dtype=torch.long)
        attention_mask = torch.tensor([[0] * (width - len(s)) + [1] * len(s) for s in sequences], dtype=torch.long)
        return input_ids.to(self.model.device), attention_mask.to(self.model.device)
