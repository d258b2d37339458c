"""The stacked detector: per-word columns (:mod:`.columns`) → the combiner's probability per word → spans.

``Span.score`` is the mean word probability of the span. ``Detection.score`` (the response score) is the response
head's calibrated probability that the response holds a hallucination (:mod:`.response`); a run without a head
gives the highest word probability (0.0 for a response without words). The decision's gate and fill act on that
score; with the decision's ``conflict_rule``, words the context contradicts are flagged whatever the score, and a
response flagged only so gets the gate's value as its score. Diagnostics per response: ``words``, ``word_max``
(the highest word probability), ``contradicted_words`` when any, and, when a member could not judge the item,
``member_errors`` (the member's columns are zeros there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragtruth_spans.core.threads import one_native_thread
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.shared.context_cache import ContextCache
from ragtruth_spans.detectors.stacked.columns import ColumnBuilder, ItemColumns
from ragtruth_spans.detectors.stacked.combiner import Decision
from ragtruth_spans.detectors.stacked.response import Calibration, head_columns, head_matrix


class StackedDetector(Detector):
    """A trained combiner over the columns of ``builder`` (see the module docstring)."""

    kind = "stacked"
    preferred_chunk_size = 32

    def __init__(self, booster: Any, builder: ColumnBuilder, decision: Decision, *,
                 head: tuple[Any, Calibration] | None = None, run_info: Mapping[str, Any] | None = None,
                 columns: Sequence[int] | None = None) -> None:
        self.booster, self.builder, self.decision, self.head = booster, builder, decision, head
        self.run_info = dict(run_info or {})
        self.columns = None if columns is None else np.asarray(columns, dtype=np.int64)
        """Which of the builder's columns the combiner reads, in its order (a run of an older, smaller feature
        set); None: all of them."""

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "run_dir": self.run_info.get("run_dir"),
                "fingerprint": self.run_info.get("fingerprint"), "members": list(self.builder.members),
                "response_head": self.head is not None, **self.decision.to_dict(),
                **{k: v for k, v in (self.builder.encoder.describe() if self.builder.encoder else {}).items()
                   if k == "encoder_precision"}}

    def probabilities(self, columns: Sequence[ItemColumns]) -> list[np.ndarray]:
        """The combiner's probability of every word of every item (one predict call for all of them)."""
        rows = [c.matrix if self.columns is None else c.matrix[:, self.columns] for c in columns if len(c.words)]
        flat = self.booster.predict(np.concatenate(rows)) if rows else np.zeros(0)
        out, at = [], 0
        for c in columns:
            out.append(np.asarray(flat[at:at + len(c.words)], dtype=np.float64))
            at += len(c.words)
        return out

    def scores(self, items: Sequence[DetectItem], columns: Sequence[ItemColumns],
               probabilities: Sequence[np.ndarray]) -> list[float]:
        """The response score of every item (see the module docstring)."""
        if self.head is None:
            return [float(p.max()) if len(p) else 0.0 for p in probabilities]
        booster, calibration = self.head
        x = head_matrix(columns, probabilities, self.builder.names, self.decision, [i.task for i in items],
                        [i.response for i in items])
        return [float(v) for v in calibration(booster.predict(head_columns(booster, x)))] if len(x) else []

    def context_cache(self) -> ContextCache | None:
        """The sentence encoder's cache of context encodings (None without an encoder)."""
        return getattr(self.builder.encoder, "context_cache", None)

    def prepare_context(self, context: str, question: str | None = None, *, task: str | None = None) -> None:
        """The sentence encoder's pass over the context's units, into its context cache (see
        :meth:`Detector.prepare_context <ragtruth_spans.detectors.base.Detector.prepare_context>`); the context and
        question read in NFC, as ``detect_batch`` reads them."""
        from ragtruth_spans.core.text import normalise
        from ragtruth_spans.detectors.base import quick_task

        question = None if question is None else normalise(question)
        with one_native_thread():
            self.builder.prepare(normalise(context), quick_task(task, question), question)

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        checked = [DetectItem.of(item) for item in items]
        with one_native_thread():  # small products: a second BLAS/OpenMP thread costs more than it gives
            return self._detect_checked(checked)

    def _detect_checked(self, checked: list[DetectItem]) -> list[Detection]:
        columns = self.builder.build(checked)
        probabilities = self.probabilities(columns)
        detections = []
        for item, cols, probs, score in zip(checked, columns, probabilities,
                                            self.scores(checked, columns, probabilities)):
            contradicted = cols.contradicted()
            spans = self.decision.spans(cols.words, probs, item.task, score, contradicted)
            if spans and score < self.decision.response_threshold:
                score = self.decision.response_threshold  # a contradicted word opened the gate (conflict_rule)
            word_max = round(float(probs.max()), 6) if len(probs) else 0.0
            extra = {"contradicted_words": int(contradicted.sum())} if contradicted.any() else {}
            detections.append(Detection(spans=spans, score=round(score, 6),
                                        diagnostics={"words": len(cols.words), "word_max": word_max, **extra,
                                                     **cols.diagnostics}))
        return detections
