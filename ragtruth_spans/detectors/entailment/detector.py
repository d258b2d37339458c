"""The entailment detector: a response sentence that no context window entails is a hallucinated span.

For each item: the response's sentences (:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences`,
trimmed, half-open ``[start, end)``) and the context's windows (:mod:`.windows`: the whole context, in premises
the model reads whole). Each sentence is judged against its ``windows`` best windows by cosine similarity of the
sentence encoder (:mod:`~ragtruth_spans.detectors.shared.encoder`; a context's window embeddings are kept in the
encoder's context cache), all pairs of a batch in one run of the NLI model. A sentence's **entailment** is the
highest P(entailment) over its windows and its **contradiction** the highest P(contradiction)
(:func:`EntailmentDetector.sentence_scores`, the columns other detectors may read).

A sentence is flagged when its entailment is below ``threshold``: an ``Evident Conflict`` span with the verdict
``contradicted`` when, in its most contradicting window, P(contradiction) exceeds P(neutral), else an
``Evident Baseless Info`` span with the verdict ``unsupported``; the span score is ``1 - entailment``, the
evidence the windows judged (best first, with their context offsets; a Data2txt JSON window has none, so none is
listed). The **response score** is the highest ``1 - entailment`` of its sentences (0.0 without sentences).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragtruth_spans.core.evidence import Passage, SpanEvidence
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.entailment.model import pair_probabilities
from ragtruth_spans.detectors.entailment.pairs import CONTRADICTION, ENTAILMENT, NEUTRAL
from ragtruth_spans.detectors.entailment.windows import Window, context_windows
from ragtruth_spans.detectors.shared.sentences import split_sentences
from ragtruth_spans.models.pretrained import MINILM

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3
"""Characters per token a window's character budget assumes (English word pieces average about four)."""
HYPOTHESIS_TOKENS = 64
"""Tokens of the model's budget kept for the response sentence beside a window."""


@dataclass(frozen=True)
class SentenceScores:
    """One response sentence ``[start, end)``: its ``entailment`` (highest P(entailment) of its windows), its
    ``contradiction`` (highest P(contradiction)), whether contradiction dominates in the window of that highest
    P(contradiction) (``contradicting``), and its windows judged (indices into the item's windows, best
    entailment first) with their similarity to it."""

    start: int
    end: int
    entailment: float
    contradiction: float
    contradicted: bool
    contradicting: int
    windows: tuple[int, ...]
    similarities: tuple[float, ...]


class EntailmentDetector(Detector):
    """An NLI cross-encoder over each sentence's best context windows (see the module docstring)."""

    kind = "entailment"
    preferred_chunk_size = 32

    def __init__(self, model: Any, tokenizer: Any, *, max_length: int = 256, threshold: float = 0.5,
                 windows: int = 3, window_sentences: int = 2, window_fields: int = 6, encoder: str = MINILM,
                 device: str | None = None, batch_size: int = 32, run_info: dict[str, Any] | None = None,
                 runtime: str = "torch") -> None:
        """``model``: a torch sequence classifier with its ``tokenizer``, or an
        :class:`~.onnx.OnnxClassifier` (``runtime`` names which; the tokenizer is then unused)."""
        self.model, self.tokenizer, self.max_length, self.runtime = model, tokenizer, max_length, runtime
        self.threshold, self.top_k = float(threshold), windows
        self.window_sentences, self.window_fields = window_sentences, window_fields
        self.encoder_name, self.device, self.batch_size = encoder, device, batch_size
        self.run_info = dict(run_info or {})
        self._encoder: Any = None

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ragtruth_spans.detectors.shared.encoder import shared_encoder

            self._encoder = shared_encoder(self.encoder_name, device=self.device)
        return self._encoder

    def context_cache(self) -> Any:
        return self.encoder.context_cache

    def windows_of(self, item: DetectItem) -> list[Window]:
        """The context windows of ``item`` (:func:`~.windows.context_windows` within the model's budget)."""
        max_chars = max(CHARS_PER_TOKEN * (self.max_length - HYPOTHESIS_TOKENS), 64)
        return context_windows(item.context, item.task, item.question, sentences=self.window_sentences,
                               fields=self.window_fields, max_chars=max_chars)

    def _choices(self, items: Sequence[DetectItem], windows: Sequence[list[Window]],
                 sentences: Sequence[list[tuple[int, int]]]) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """Per item and sentence: the indices of its ``top_k`` windows by cosine similarity and the similarities."""
        texts = [item.response[a:b] for item, spans in zip(items, sentences) for a, b in spans]
        embedded = self.encoder.embed(texts) if texts else {}
        out = []
        for item, found, spans in zip(items, windows, sentences):
            units = self.encoder.encode_units([w.text for w in found])
            rows = []
            for a, b in spans:
                similarity = units @ embedded[item.response[a:b]]
                order = np.argsort(-similarity, kind="stable")[:self.top_k]
                rows.append((order, similarity[order]))
            out.append(rows)
        return out

    def judged_windows(self, items: Sequence[DetectItem]) -> tuple[list[list[Window]], list[list[tuple[int, int]]],
                                                                   list[list[tuple[np.ndarray, np.ndarray]]]]:
        """Per item: its windows, its response sentences ``[start, end)`` and, per sentence, the indices of the
        windows it is judged against (best first) with their similarities — the one choice of premises, shared by
        the detector and the pairs built from a task's own labels (:mod:`.task_pairs`), so both read the same."""
        windows = [self.windows_of(item) for item in items]
        sentences = [split_sentences(item.response) for item in items]
        return windows, sentences, self._choices(items, windows, sentences)

    def sentence_scores(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[list[SentenceScores]]:
        """Per item, the :class:`SentenceScores` of each response sentence, in order (every pair of the batch in
        one batched run of the model; a pair asked twice is run once)."""
        items = [DetectItem.of(item) for item in items]
        windows, sentences, choices = self.judged_windows(items)
        pairs: dict[tuple[str, str], int] = {}
        for item, found, spans, rows in zip(items, windows, sentences, choices):
            for (a, b), (order, _) in zip(spans, rows):
                for w in order:
                    pairs.setdefault((found[w].premise, item.response[a:b]), len(pairs))
        onnx = getattr(self.model, "probabilities", None)  # an OnnxClassifier (runtime=onnx-*) tokenizes itself
        probabilities = onnx(list(pairs), self.batch_size) if onnx is not None else pair_probabilities(
            self.model, self.tokenizer, list(pairs), max_length=self.max_length, batch_size=self.batch_size)
        out = []
        for item, found, spans, rows in zip(items, windows, sentences, choices):
            scored = []
            for (a, b), (order, similarity) in zip(spans, rows):
                p = probabilities[[pairs[(found[w].premise, item.response[a:b])] for w in order]]
                best = np.argsort(-p[:, ENTAILMENT], kind="stable")
                worst = int(np.argmax(p[:, CONTRADICTION]))
                scored.append(SentenceScores(
                    a, b, round(float(p[:, ENTAILMENT].max()), 6), round(float(p[:, CONTRADICTION].max()), 6),
                    bool(p[worst, CONTRADICTION] > p[worst, NEUTRAL]), int(order[worst]),
                    tuple(int(order[i]) for i in best),
                    tuple(round(float(similarity[i]), 6) for i in best)))
            out.append(scored)
        return out

    def decide(self, item: DetectItem, windows: Sequence[Window], scores: Sequence[SentenceScores],
               threshold: float | None = None) -> Detection:
        """The detection of one item from its sentence scores (see the module docstring)."""
        threshold = self.threshold if threshold is None else threshold
        spans = [self._span(windows, s) for s in scores if s.entailment < threshold]
        return Detection(spans=spans, score=round(max((1.0 - s.entailment for s in scores), default=0.0), 6),
                         diagnostics={"sentences": len(scores), "flagged_sentences": len(spans),
                                      "windows": len(windows)})

    def _span(self, windows: Sequence[Window], s: SentenceScores) -> Span:
        judged = list(zip(s.windows, s.similarities))
        if s.contradicted:  # the contradicting window first
            judged.sort(key=lambda pair: pair[0] != s.contradicting)
        passages = tuple(Passage(windows[w].start, windows[w].end, min(max(sim, 0.0), 1.0))  # type: ignore[arg-type]
                         for w, sim in judged if windows[w].start is not None)
        if s.contradicted:
            verdict, kind = "contradicted", "Evident Conflict"
            reason = f"a context window contradicts it (P(contradiction) {s.contradiction:.2f})"
        else:
            verdict, kind = "unsupported", "Evident Baseless Info"
            reason = f"no context window entails it (best P(entailment) {s.entailment:.2f})"
        return Span(s.start, s.end, type=kind, score=round(1.0 - s.entailment, 6),
                    evidence=SpanEvidence(verdict=verdict, passages=passages, reason=reason))

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        items = [DetectItem.of(item) for item in items]
        scores = self.sentence_scores(items)
        return [self.decide(item, self.windows_of(item), found) for item, found in zip(items, scores)]

    def character_scores(self, items: Sequence[DetectItem]) -> list[tuple[np.ndarray, bool]]:
        """Per item, a float32 score per response character — ``1 - entailment`` of the sentence ``[start, end)``
        it lies in, 0 between sentences — and True (every item is judged): what a stacked member's columns read
        (docs/STACKED.md), soft where :meth:`detect_batch` keeps only the sentences below ``threshold``.

        Example: a response of one sentence whose best window entails it at 0.9 scores 0.1 on every character
        of that sentence.
        """
        out = []
        for item, found in zip(items, self.sentence_scores(items)):
            scores = np.zeros(len(item.response), dtype=np.float32)
            for s in found:
                scores[s.start:s.end] = 1.0 - s.entailment
            out.append((scores, True))
        return out

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.run_info, "threshold": self.threshold, "windows": self.top_k,
                "window_sentences": self.window_sentences, "window_fields": self.window_fields,
                "max_length": self.max_length, "encoder": self.encoder_name, "splitter": "pysbd",
                "runtime": self.runtime}
