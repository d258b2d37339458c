"""The two-tier detector: tier-1 rules set aside no-info sentences (never flagged); a fine-tuned cross-encoder
gives every other sentence a probability of being unsupported by its premise (:mod:`.checks`).

A sentence is flagged when its probability is >= the threshold (0.5, or the one tuned on the eval split); the span
is the whole trimmed sentence and its score the probability. The **response score** is the highest probability
over the verifiable sentences (0.0 when there is none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.twotier.checks import SentenceCheck, sentence_checks
from ragtruth_spans.training.tuning import DEFAULT_CRITERION, PAPER_GRID, TuningResult, tune_thresholds

MODEL_DIR = "model"
"""Where a two-tier run directory keeps the fine-tuned cross-encoder."""


class TwoTierDetector(Detector):
    """Tier 1 rules + tier 2 cross-encoder (see the module docstring)."""

    kind = "two-tier"
    preferred_chunk_size = 32

    def __init__(self, model_dir: str | Path, *, retriever: str, top_k: int, max_length: int,
                 threshold: float = 0.5, device: str | None = None, batch_size: int = 32,
                 source: dict[str, Any] | None = None, encoder: Any = None, cross_encoder: Any = None) -> None:
        self.model_dir = Path(model_dir)
        self.retriever, self.top_k, self.max_length = retriever, top_k, max_length
        self.threshold = float(threshold)
        self.device, self.batch_size = device or "cpu", batch_size
        self.source = dict(source or {})
        self._encoder, self._cross_encoder = encoder, cross_encoder

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

            self._encoder = SentenceEncoder(self.retriever, device=self.device)
        return self._encoder

    @property
    def cross_encoder(self) -> Any:
        if self._cross_encoder is None:
            from ragtruth_spans.models.hf_models import check_model_folder, loading

            check_model_folder(self.model_dir, what="cross-encoder")
            with loading(self.model_dir, "cross-encoder"):
                from sentence_transformers import CrossEncoder

                self._cross_encoder = CrossEncoder(str(self.model_dir), device=self.device,
                                                   max_length=self.max_length, local_files_only=True)
        return self._cross_encoder

    def judge(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[list[SentenceCheck]]:
        """Every item's sentence checks, the verifiable ones with their tier-2 probability."""
        checks = sentence_checks(items, self.encoder, self.top_k)
        verifiable = [c for per_item in checks for c in per_item if c.rule is None]
        if verifiable:
            probabilities = self.cross_encoder.predict([(c.premise, c.text) for c in verifiable],
                                                       batch_size=self.batch_size, show_progress_bar=False)
            for check, p in zip(verifiable, probabilities):
                check.probability = round(float(p), 6)
        return checks

    def decide(self, checks: Sequence[SentenceCheck], threshold: float | None = None) -> Detection:
        """The detection of one response's judged sentences under ``threshold`` (default: the detector's)."""
        t = self.threshold if threshold is None else threshold
        judged = [c for c in checks if c.probability is not None]
        spans = [Span(*c.interval, score=c.probability) for c in judged if c.probability >= t]
        return Detection(spans=spans, score=max((c.probability for c in judged), default=0.0),
                         diagnostics={"sentences": len(checks), "tier1_filtered": len(checks) - len(judged),
                                      "flagged_sentences": len(spans)})

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        return [self.decide(checks) for checks in self.judge(items)]

    def tune(self, records: Sequence[Record], *, criterion: str = DEFAULT_CRITERION, split: str = "dev",
             values: Sequence[float] = PAPER_GRID) -> tuple[TwoTierDetector, TuningResult]:
        """A copy with the threshold that maximises ``criterion`` on ``records`` (probabilities computed once)."""
        judged = self.judge(records)
        result = tune_thresholds(records, [{"threshold": v} for v in sorted(values)],
                                 lambda t: [self.decide(c, t["threshold"]) for c in judged],
                                 criterion=criterion, split=split)
        source = self.source | {"threshold_from": f"tuned on {split}", "criterion": criterion}
        return self.with_thresholds(result.thresholds, source), result

    def with_thresholds(self, thresholds: Mapping[str, float], source: dict[str, Any]) -> TwoTierDetector:
        """A copy with another ``threshold`` (sharing the loaded encoders)."""
        return TwoTierDetector(self.model_dir, retriever=self.retriever, top_k=self.top_k,
                               max_length=self.max_length, threshold=thresholds["threshold"], device=self.device,
                               batch_size=self.batch_size, encoder=self._encoder,
                               cross_encoder=self._cross_encoder, source=source)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.source, "threshold": self.threshold, "retriever": self.retriever,
                "top_k": self.top_k, "max_length": self.max_length}
