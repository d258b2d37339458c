"""The similarity methods' supports (their thresholds-free evidence), each computed once per distinct text.

RAGTruth has six responses per source, and tuning runs a detector's evidence once for a whole grid of thresholds.
So a :class:`SupportCache`, owned by a detector (and shared by its copies with other thresholds), keeps a context's
evidence units (:func:`~ragtruth_spans.detectors.shared.sentences.evidence_units`, pysbd) and their tokens per
context, by a content hash, and each sentence's support with its context (cosine or overlap), both bounded; a
response's sentences are kept per response text (:func:`response_sentences`, a bounded ``lru_cache``); the
sentences and units of a whole batch of items are embedded in one encoder call, each distinct text once
(:meth:`~ragtruth_spans.detectors.shared.encoder.SentenceEncoder.embed`, whose embeddings the encoder keeps).
Nothing here depends on a threshold, and nothing is kept at module level.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ragtruth_spans.core.lru import BoundedCache
from ragtruth_spans.detectors.shared.sentences import Interval, evidence_units, split_sentences, tokens
from ragtruth_spans.detectors.similarity.tiling import overlap_ratio

CONTEXT_CACHE_SIZE = 1024
"""Contexts whose units and unit tokens are kept."""
SUPPORT_CACHE_SIZE = 200_000
"""Sentence supports kept (one float each, keyed by method, encoder, context hash and sentence text)."""
SUPPORTS = ("cosine", "overlap")


@dataclass(frozen=True)
class ContextEvidence:
    """A context's evidence units (with the QA question) and their word tokens; ``key`` hashes what made them."""

    key: str
    units: tuple[str, ...]
    unit_tokens: tuple[tuple[str, ...], ...]


class SupportCache:
    """What one detector computed (and its copies with other thresholds reuse): contexts' evidence, at most
    ``contexts`` of them, and sentence supports, at most ``supports`` (one float each, keyed by method, encoder,
    context hash and sentence text)."""

    def __init__(self, contexts: int = CONTEXT_CACHE_SIZE, supports: int = SUPPORT_CACHE_SIZE) -> None:
        self.contexts = BoundedCache(contexts)
        self.supports = BoundedCache(supports)

    def context_evidence(self, context: str, task: str, question: str | None = None) -> ContextEvidence:
        """The (cached) evidence units of ``context`` for ``task`` and ``question``."""
        digest = hashlib.sha256()
        for part in (task, question or "", context):
            digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
        key = digest.hexdigest()
        found = self.contexts.get(key)
        if found is None:
            units = tuple(evidence_units(context, task, question))
            found = ContextEvidence(key=key, units=units, unit_tokens=tuple(tuple(tokens(u)) for u in units))
            self.contexts.put(key, found)
        return found

    def sentence_supports(self, pairs: Sequence[tuple[ContextEvidence, str]], method: str,
                          encoder: Any = None) -> list[float]:
        """The ``method`` support (``cosine``: highest cosine similarity with a unit; ``overlap``: highest overlap
        ratio) of each ``(context, sentence text)`` pair; 0.0 for a context without units. ``encoder`` (a
        :class:`~ragtruth_spans.detectors.shared.encoder.SentenceEncoder`) is needed for ``cosine``."""
        tag = getattr(encoder, "name_or_path", "") if method == "cosine" else ""
        keys = [(method, tag, context.key, text) for context, text in pairs]
        values: list[float | None] = [self.supports.get(key) for key in keys]
        missing = [i for i, value in enumerate(values) if value is None]
        if missing:
            todo = [pairs[i] for i in missing]
            computed = _cosines(todo, encoder) if method == "cosine" else [_overlap(c, t) for c, t in todo]
            for i, value in zip(missing, computed):
                values[i] = value
                self.supports.put(keys[i], value)
        return [float(v) for v in values]  # type: ignore[arg-type]


@lru_cache(maxsize=4096)
def response_sentences(response: str) -> tuple[Interval, ...]:
    """:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences` of a response, cached by its text."""
    return tuple(split_sentences(response))


def _cosines(pairs: Sequence[tuple[ContextEvidence, str]], encoder: Any) -> list[float]:
    contexts = {context.key: context for context, _ in pairs}
    texts = [text for _, text in pairs] + [unit for context in contexts.values() for unit in context.units]
    embedded = encoder.embed(texts)
    matrices = {key: np.stack([embedded[u] for u in context.units]) if context.units else None
                for key, context in contexts.items()}
    out = []
    for context, text in pairs:
        units = matrices[context.key]
        out.append(float((units @ embedded[text]).max()) if units is not None else 0.0)
    return out


def _overlap(context: ContextEvidence, text: str) -> float:
    sentence = tokens(text)
    return max((overlap_ratio(sentence, unit) for unit in context.unit_tokens), default=0.0)
