"""Evidence for every span of any detector: a shared step after detection.

``EvidenceFinder(mode)`` explains the spans of a :class:`~ragtruth_spans.detectors.base.Detection`: for each span,
the claim is the response sentence(s) holding the span plus the span's text; the context's passages are ranked by
relevance to the claim and a verdict is reached (:mod:`.verdict`). Spans come back with ``evidence`` set
(:class:`~ragtruth_spans.core.evidence.SpanEvidence`, offsets of the context); nothing else of the detection
changes.

Modes: ``lexical`` (the default: idf-weighted content-word overlap, numbers, names, negations, Data2txt fields; no
model, cheap enough for gating) and ``encoder`` (relevance is the mean of the lexical score and the cosine
similarity of all-MiniLM-L6-v2 sentence embeddings, and a claim far from every passage is unsupported).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import check_choice
from ragtruth_spans.core.lru import BoundedCache
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem, NormalItem
from ragtruth_spans.detectors.shared.sentences import split_sentences
from ragtruth_spans.evidence.index import ContextIndex
from ragtruth_spans.evidence.verdict import Claim, VerdictSettings, decide

MODES: tuple[str, ...] = ("lexical", "encoder")
INDEX_CACHE_SIZE = 64
"""Contexts whose index is kept (a RAGTruth source has six responses to one context)."""


def claim_of(response: str, span: Span, sentences: Sequence[tuple[int, int]] | None = None) -> Claim:
    """The claim of ``span``: the span and the response sentences it touches (an empty span: the sentence at its
    start); without such a sentence, the span alone."""
    sentences = split_sentences(response) if sentences is None else sentences
    touching = [(a, b) for a, b in sentences if (a < span.end and span.start < b) or a <= span.start < b]
    if not touching:
        return Claim(response, span.start, span.end, span.start, span.end)
    return Claim(response, span.start, span.end, min(span.start, touching[0][0]), max(span.end, touching[-1][1]))


def cached_index(indexes: BoundedCache, context: str, task: str) -> ContextIndex:
    """The :class:`ContextIndex` of ``context`` (read as given) for ``task``, made once and kept in ``indexes`` —
    the cache every :class:`EvidenceFinder` given it reads, so an index built ahead (the gate, with the context
    in NFC as :meth:`EvidenceFinder.explain_batch` reads it) is the one the check finds."""
    kind = task if task == "Data2txt" else "text"
    return indexes.get_or_make((kind, context), lambda: ContextIndex.build(context, task))


class EvidenceFinder:
    """Attaches evidence to detections (see the module docstring). ``settings``: the verdict's thresholds;
    ``encoder``: an already loaded :class:`~ragtruth_spans.detectors.shared.encoder.SentenceEncoder` (encoder
    mode; loaded on first use otherwise, on ``device``); ``indexes``: the cache of context indexes, which finders
    of several threads may share (:func:`cached_index` fills it ahead)."""

    def __init__(self, mode: str = "lexical", *, settings: VerdictSettings | None = None, encoder: Any = None,
                 device: str | None = None, indexes: BoundedCache | None = None) -> None:
        check_choice(mode, MODES, "evidence mode", field="evidence")
        self.mode = mode
        self.settings = settings or (ENCODER_SETTINGS if mode == "encoder" else LEXICAL_SETTINGS)
        self._encoder, self._device = encoder, device
        self.indexes = indexes if indexes is not None else BoundedCache(INDEX_CACHE_SIZE)

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

            self._encoder = SentenceEncoder(device=self._device)
        return self._encoder

    def describe(self) -> dict[str, Any]:
        """What changes the evidence: the mode, the thresholds and (encoder mode) the encoder."""
        out: dict[str, Any] = {"mode": self.mode, "settings": asdict(self.settings)}
        if self.mode == "encoder":
            from ragtruth_spans.models.pretrained import MINILM

            out["encoder"] = getattr(self._encoder, "name_or_path", MINILM)
        return out

    def index(self, context: str, task: str) -> ContextIndex:
        """The (cached) :class:`ContextIndex` of a context (read as given: :meth:`explain_batch` gives it in NFC)."""
        return cached_index(self.indexes, context, task)

    def explain(self, item: DetectItem | Record | Mapping[str, Any], spans: Sequence[Span]) -> list[Span]:
        """``spans`` (characters of ``item``'s response) with their evidence set, in the same order."""
        return self.explain_batch([item], [spans])[0]

    def explain_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]],
                      spans: Sequence[Sequence[Span]]) -> list[list[Span]]:
        """:meth:`explain` of many items; in encoder mode every claim of the batch is encoded in one call. Texts are
        read in NFC (:class:`~ragtruth_spans.detectors.base.NormalItem`), so the verdict is the same for any
        spelling; the spans come back as given, their passages in the caller's context."""
        normal = [NormalItem.of(item) for item in items]
        forward = [[n.span_forward(span) for span in item_spans] for n, item_spans in zip(normal, spans)]
        explained = self._explain_normal([n.item for n in normal], forward)
        return [[n.evidence_back(span, done) for span, done in zip(item_spans, done_spans)]
                for n, item_spans, done_spans in zip(normal, spans, explained)]

    def _explain_normal(self, items: Sequence[DetectItem], spans: Sequence[Sequence[Span]]) -> list[list[Span]]:
        claims = []
        for item, item_spans in zip(items, spans):
            sentences = split_sentences(item.response) if item_spans else []
            claims.append([claim_of(item.response, span, sentences) for span in item_spans])
        embeddings = self._claim_embeddings([c for cs in claims for c in cs])
        out, at = [], 0
        for item, item_spans, item_claims in zip(items, spans, claims):
            index = self.index(item.context, item.task)
            explained = []
            for span, claim in zip(item_spans, item_claims):
                scores, similarity = self._scores(index, claim, None if embeddings is None else embeddings[at])
                explained.append(replace(span, evidence=decide(index, claim, scores, self.settings, similarity)))
                at += 1
            out.append(explained)
        return out

    def attach(self, item: DetectItem | Record | Mapping[str, Any], detection: Detection) -> Detection:
        """A copy of ``detection`` whose spans carry their evidence."""
        return self.attach_batch([item], [detection])[0]

    def attach_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]],
                     detections: Sequence[Detection]) -> list[Detection]:
        """:meth:`attach` of many items (in encoder mode, one encoder call for all their claims)."""
        spans = self.explain_batch(items, [d.spans for d in detections])
        return [replace(d, spans=s) for d, s in zip(detections, spans)]

    def _claim_embeddings(self, claims: list[Claim]) -> np.ndarray | None:
        if self.mode != "encoder" or not claims:
            return None
        return self.encoder.encode([c.text() for c in claims])

    def _scores(self, index: ContextIndex, claim: Claim, embedding: np.ndarray | None) -> tuple[list[float],
                                                                                             float | None]:
        lexical = index.relevance(claim.weights())
        if embedding is None or not index.units:
            return lexical, None
        units = self.encoder.encode_units([u.text for u in index.units])
        cosine = np.clip(units @ embedding, 0.0, 1.0)
        return [0.5 * (a + float(b)) for a, b in zip(lexical, cosine)], float(cosine.max())


LEXICAL_SETTINGS = VerdictSettings()
"""The thresholds of the lexical mode (tuned on the RAGTruth pool's train split: docs/EVIDENCE.md)."""
ENCODER_SETTINGS = VerdictSettings(negation_relevance=0.6)
"""The thresholds of the encoder mode (tuned on the RAGTruth pool's train split: docs/EVIDENCE.md)."""


def attach_evidence(item: DetectItem | Record | Mapping[str, Any], detection: Detection, *, mode: str = "lexical",
                    finder: EvidenceFinder | None = None) -> Detection:
    """``detection`` with evidence on every span (a new :class:`EvidenceFinder` of ``mode`` unless ``finder``)."""
    return (finder or EvidenceFinder(mode)).attach(item, detection)


def attach_evidence_batch(items: Sequence[DetectItem | Record | Mapping[str, Any]], detections: Sequence[Detection],
                          *, mode: str = "lexical", finder: EvidenceFinder | None = None) -> list[Detection]:
    """:func:`attach_evidence` of many items."""
    return (finder or EvidenceFinder(mode)).attach_batch(items, detections)
