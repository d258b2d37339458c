"""The stacked detector: per-word columns (:mod:`.columns`) → the combiner's probability per word → spans.

``Span.score`` is the mean word probability of the span; ``Detection.score`` (the response score) is the highest
word probability of the response (0.0 for a response without words). Diagnostics per response: ``words`` and,
when a member could not judge the item, ``member_errors`` (the member's columns are zeros there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.stacked.columns import ColumnBuilder, ItemColumns
from ragtruth_spans.detectors.stacked.combiner import Decision


class StackedDetector(Detector):
    """A trained combiner over the columns of ``builder`` (see the module docstring)."""

    kind = "stacked"
    preferred_chunk_size = 32

    def __init__(self, booster: Any, builder: ColumnBuilder, decision: Decision, *,
                 run_info: Mapping[str, Any] | None = None) -> None:
        self.booster, self.builder, self.decision = booster, builder, decision
        self.run_info = dict(run_info or {})

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "run_dir": self.run_info.get("run_dir"),
                "fingerprint": self.run_info.get("fingerprint"), "members": list(self.builder.members),
                **self.decision.to_dict()}

    def probabilities(self, columns: Sequence[ItemColumns]) -> list[np.ndarray]:
        """The combiner's probability of every word of every item (one predict call for all of them)."""
        rows = [c.matrix for c in columns if len(c.words)]
        flat = self.booster.predict(np.concatenate(rows)) if rows else np.zeros(0)
        out, at = [], 0
        for c in columns:
            out.append(np.asarray(flat[at:at + len(c.words)], dtype=np.float64))
            at += len(c.words)
        return out

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        checked = [DetectItem.of(item) for item in items]
        columns = self.builder.build(checked)
        detections = []
        for item, cols, probs in zip(checked, columns, self.probabilities(columns)):
            spans = self.decision.spans(cols.words, probs, item.task)
            score = round(float(probs.max()), 6) if len(probs) else 0.0
            detections.append(Detection(spans=spans, score=score,
                                        diagnostics={"words": len(cols.words), **cols.diagnostics}))
        return detections
