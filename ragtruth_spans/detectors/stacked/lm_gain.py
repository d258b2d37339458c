"""The language-model support signal: how much the context raises a causal LM's probability of each response token.

A causal LM (the packaged SmolLM2-135M-Instruct, Llama architecture, or any local/hub causal LM the user names)
reads every response twice, with plain prompts:

- **with the context**: ``"Context:\\n{context}\\n\\n[Question: {question}\\n\\n]Response: {response}"``;
- **without it**: ``"[Question: {question}\\n\\n]Response: {response}"``.

For every response token it records ``log p(token | prompt, response prefix)`` in both passes; the **gain**
(with − without) says whether the context supports the token: copied or entailed text gains, invented text does
not. A long context is cut to ``max_context_tokens`` by relevance: its sentences (and lines) ranked by how many of
the response's content words they hold, the best kept in their original order. Responses are cut to
``max_response_tokens``; words past the cut get NaN (LightGBM's missing value).

Scores are pure functions of (model weights, settings, context, question, response), so they are cached per
record under ``<cache>/lm_gain/<key>/`` (:func:`~ragtruth_spans.core.cache.cache_root`), the key naming the
model's weight hash and the settings; a cached file is read only when its key and text hash match.

Word columns (:data:`LM_FEATURES`): the mean gain of the tokens overlapping the word, their lowest gain, their
mean log-probability with the context, and the mean gain of the word's ±3 neighbours.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.cache import cache_root
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import atomic_write_bytes
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.stacked.text import STOP_WORDS, normalise

Interval = tuple[int, int]
LM_FEATURES: tuple[str, ...] = ("lm_gain", "lm_gain_min", "lm_logprob", "lm_gain_mean_3")
"""Column names of :func:`lm_columns`, in order."""
CACHE_VERSION = 1
"""Part of the cache key: raise it whenever the prompts or what is stored change."""
_CONTENT = re.compile(r"\w+")
_PIECES = re.compile(r"[^\n]+?(?:[.!?](?=\s)|$)", re.MULTILINE)


@dataclass(frozen=True)
class TokenScores:
    """One response's scored tokens: ``offsets`` ``(n, 2)`` character intervals ``[start, end)`` of the response,
    ``with_context`` and ``without_context`` their log-probabilities (natural log)."""

    offsets: np.ndarray
    with_context: np.ndarray
    without_context: np.ndarray

    @property
    def gain(self) -> np.ndarray:
        return self.with_context - self.without_context


EMPTY = TokenScores(np.zeros((0, 2), np.int32), np.zeros(0, np.float32), np.zeros(0, np.float32))
"""No scored token: every LM column missing (NaN)."""


def _content_words(text: str) -> set[str]:
    return {w for w in (normalise(m.group()) for m in _CONTENT.finditer(text)) if w not in STOP_WORDS}


def cut_context(context: str, response: str, budget: int, count_tokens: Any) -> str:
    """``context`` itself when it holds at most ``budget`` tokens (``count_tokens(text) -> int``), else its
    sentences/lines with the most response content words, kept in their original order, up to ``budget``."""
    if count_tokens(context) <= budget:
        return context
    wanted = _content_words(response)
    pieces = [m.group().strip() for m in _PIECES.finditer(context)]
    pieces = [p for p in pieces if p]
    ranked = sorted(range(len(pieces)), key=lambda i: (-len(_content_words(pieces[i]) & wanted), i))
    kept, used = set(), 0
    for i in ranked:
        cost = count_tokens(pieces[i]) + 1
        if used + cost > budget:
            continue
        kept.add(i)
        used += cost
    return "\n".join(pieces[i] for i in sorted(kept))


def prompts(item: DetectItem, context: str) -> tuple[str, str]:
    """The prefixes of the two passes (with and without the context); the response follows each."""
    question = f"Question: {item.question}\n\n" if item.question else ""
    return f"Context:\n{context}\n\n{question}Response: ", f"{question}Response: "


class LMScorer:
    """Scores responses with a causal LM (see the module docstring); ``model`` is what
    :func:`~ragtruth_spans.models.hf_models.resolve_base_model` accepts (``smollm2-135m-instruct``, a folder, a
    hub id the user named)."""

    def __init__(self, model: str, *, max_context_tokens: int = 768, max_response_tokens: int = 512,
                 device: str | None = None, cache: bool = True) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ragtruth_spans.models.hf_models import is_local_reference, resolve_base_model

        path, revision = resolve_base_model(model)
        local = is_local_reference(path)
        self.tokenizer = AutoTokenizer.from_pretrained(path, revision=revision, local_files_only=local)
        if not getattr(self.tokenizer, "is_fast", False):
            raise InputError(f"features.lm: {model} has no fast tokenizer (character offsets are needed)",
                             field="features.lm.model")
        import torch

        self.torch = torch
        self.model = AutoModelForCausalLM.from_pretrained(path, revision=revision, local_files_only=local,
                                                          dtype=torch.float32).eval()
        self.device = device or "cpu"
        self.model.to(self.device)
        self.max_context_tokens, self.max_response_tokens = max_context_tokens, max_response_tokens
        self.key = _cache_key(model, path, max_context_tokens, max_response_tokens)
        self.cache_dir = cache_root() / "lm_gain" / self.key if cache else None

    def _count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _logprobs(self, prefix: str, response_ids: list[int]) -> np.ndarray:
        """``log p`` of every response token after ``prefix`` (one forward pass, logits kept for the response)."""
        torch = self.torch
        prefix_ids = self.tokenizer(prefix, add_special_tokens=False)["input_ids"]
        bos = [self.tokenizer.bos_token_id] if self.tokenizer.bos_token_id is not None else []
        ids = torch.tensor([bos + prefix_ids + response_ids], device=self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, logits_to_keep=len(response_ids) + 1).logits[0, :-1].float()
        logp = torch.log_softmax(logits, dim=-1)
        target = torch.tensor(response_ids, device=self.device)
        return logp.gather(1, target[:, None])[:, 0].cpu().numpy().astype(np.float32)

    def score(self, item: DetectItem) -> TokenScores:
        """The two passes over one response (cached)."""
        path = None
        if self.cache_dir is not None:
            digest = hashlib.sha256(json.dumps([item.context, item.question, item.response]).encode()).hexdigest()
            path = self.cache_dir / digest[:2] / f"{digest}.npz"
            if path.is_file():
                try:
                    with np.load(path) as saved:
                        return TokenScores(saved["offsets"], saved["with_context"], saved["without_context"])
                except (OSError, ValueError, KeyError):  # a damaged cache file is scored again and replaced
                    pass
        encoded = self.tokenizer(item.response, add_special_tokens=False, return_offsets_mapping=True)
        ids = list(encoded["input_ids"])[:self.max_response_tokens]
        offsets = np.asarray(encoded["offset_mapping"][:len(ids)], dtype=np.int32).reshape(-1, 2)
        if not ids:
            scores = TokenScores(offsets, np.zeros(0, np.float32), np.zeros(0, np.float32))
        else:
            context = cut_context(item.context, item.response, self.max_context_tokens, self._count)
            with_prefix, without_prefix = prompts(item, context)
            scores = TokenScores(offsets, self._logprobs(with_prefix, ids), self._logprobs(without_prefix, ids))
        if path is not None:
            buffer = io.BytesIO()
            np.savez(buffer, offsets=scores.offsets, with_context=scores.with_context,
                     without_context=scores.without_context)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(path, buffer.getvalue())
        return scores

    def score_batch(self, items: Sequence[DetectItem]) -> list[TokenScores]:
        return [self.score(item) for item in items]


def _cache_key(model: str, path: str, max_context_tokens: int, max_response_tokens: int) -> str:
    """The cache folder's name: a hash of the model's weight files (or, for a hub id, its name) and the settings."""
    folder = Path(path)
    if folder.is_dir():
        from ragtruth_spans.models.gguf import sha256_of

        weights = sorted(p for p in folder.iterdir() if p.suffix in {".safetensors", ".bin"})
        identity = [sha256_of(p) for p in weights] or [str(folder.resolve())]
    else:
        identity = [model]
    settings = [CACHE_VERSION, identity, max_context_tokens, max_response_tokens]
    return hashlib.sha256(json.dumps(settings).encode()).hexdigest()[:24]


def lm_columns(words: Sequence[Interval], scores: TokenScores) -> np.ndarray:
    """``(len(words), len(LM_FEATURES))``: per word, the gain statistics of the tokens overlapping it (NaN for a
    word no scored token overlaps: past the response cut)."""
    out = np.full((len(words), len(LM_FEATURES)), np.nan, dtype=np.float32)
    if not len(words) or not len(scores.offsets):
        return out
    gain = scores.gain
    starts, ends = scores.offsets[:, 0], scores.offsets[:, 1]
    for w, (a, b) in enumerate(words):
        hit = np.nonzero((starts < b) & (ends > a))[0]
        if len(hit):
            out[w, 0] = gain[hit].mean()
            out[w, 1] = gain[hit].min()
            out[w, 2] = scores.with_context[hit].mean()
    word_gain = out[:, 0]
    for w in range(len(words)):
        window = word_gain[max(0, w - 3):w + 4]
        window = window[~np.isnan(window)]
        out[w, 3] = window.mean() if len(window) else math.nan
    return out
