"""The similarity methods' supports (their thresholds-free evidence), each computed once per distinct text.

RAGTruth has six responses per source, and a benchmark runs ``sim-cosine``, ``sim-overlap`` and ``sim-hybrid`` on
the same responses. So: a context's evidence units
(:func:`~ragtruth_spans.detectors.shared.sentences.evidence_units`, pysbd) and their tokens are kept per context, by
a content hash (bounded); a response's sentences are kept per response text (bounded); the sentences and units of a
whole batch of items are embedded in one encoder call, each distinct text once
(:meth:`~ragtruth_spans.detectors.shared.encoder.SentenceEncoder.embed`); and each sentence's support with its
context (cosine or overlap) is kept in a bounded cache shared by every detector of the process, so ``sim-hybrid``
reuses what ``sim-cosine`` and ``sim-overlap`` computed. Nothing here depends on a threshold.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ragtruth_spans.detectors.shared.sentences import Interval, evidence_units, split_sentences, tokens
from ragtruth_spans.detectors.similarity.overlap import overlap_ratio

CONTEXT_CACHE_SIZE = 1024
"""Contexts whose units and unit tokens are kept."""
SUPPORT_CACHE_SIZE = 200_000
"""Sentence supports kept (one float each, keyed by method, encoder, context hash and sentence text)."""
SUPPORTS = ("cosine", "overlap")


class BoundedCache:
    """A least-recently-used mapping that keeps at most ``size`` entries."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: Hashable, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.size:
            self._data.popitem(last=False)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


@dataclass(frozen=True)
class ContextEvidence:
    """A context's evidence units (with the QA question) and their word tokens; ``key`` hashes what made them."""

    key: str
    units: tuple[str, ...]
    unit_tokens: tuple[tuple[str, ...], ...]


_contexts = BoundedCache(CONTEXT_CACHE_SIZE)
_supports = BoundedCache(SUPPORT_CACHE_SIZE)


def context_evidence(context: str, task: str, question: str | None = None) -> ContextEvidence:
    """The (cached) evidence units of ``context`` for ``task`` and ``question``."""
    digest = hashlib.sha256()
    for part in (task, question or "", context):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\x00")
    key = digest.hexdigest()
    found = _contexts.get(key)
    if found is None:
        units = tuple(evidence_units(context, task, question))
        found = ContextEvidence(key=key, units=units, unit_tokens=tuple(tuple(tokens(u)) for u in units))
        _contexts.put(key, found)
    return found


@lru_cache(maxsize=4096)
def response_sentences(response: str) -> tuple[Interval, ...]:
    """:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences` of a response, cached by its text."""
    return tuple(split_sentences(response))


def sentence_supports(pairs: Sequence[tuple[ContextEvidence, str]], method: str, encoder: Any = None) -> list[float]:
    """The ``method`` support (``cosine``: highest cosine similarity with a unit; ``overlap``: highest overlap
    ratio) of each ``(context, sentence text)`` pair; 0.0 for a context without units. ``encoder`` (a
    :class:`~ragtruth_spans.detectors.shared.encoder.SentenceEncoder`) is needed for ``cosine``."""
    tag = getattr(encoder, "name_or_path", "") if method == "cosine" else ""
    keys = [(method, tag, context.key, text) for context, text in pairs]
    values: list[float | None] = [_supports.get(key) for key in keys]
    missing = [i for i, value in enumerate(values) if value is None]
    if missing:
        todo = [pairs[i] for i in missing]
        computed = _cosines(todo, encoder) if method == "cosine" else [_overlap(c, t) for c, t in todo]
        for i, value in zip(missing, computed):
            values[i] = value
            _supports.put(keys[i], value)
    return [float(v) for v in values]  # type: ignore[arg-type]


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
