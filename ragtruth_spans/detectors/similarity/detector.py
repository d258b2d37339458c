"""The DelucionQA similarity detectors (Sadat et al. 2023): a response sentence that no context sentence supports
is a hallucinated span (the whole trimmed sentence, see :mod:`ragtruth_spans.detectors.shared.sentences`).

Methods (the evidence units are the question and the context's sentences or JSON fields):

- ``cosine`` (``sim-cosine``): support = the highest cosine similarity of the sentence's all-MiniLM-L6-v2
  embedding with any unit; supported when support > T1 (``cosine``).
- ``overlap`` (``sim-overlap``): support = the highest overlap ratio (:mod:`.overlap`) with any unit; supported
  when support > T2 (``overlap``).
- ``hybrid`` (``sim-hybrid``): hallucinated when neither the cosine (> T1) nor the overlap (> T2) supports it.
- ``keywords`` (``keyword-match``): the response is hallucinated when the share of its keywords (:mod:`.keywords`)
  missing from the question + context is > T3 (``keywords``); its spans are the sentences holding a missing one.

Scores. Each support ``x`` is mapped onto [0, 1] so that its threshold ``t`` lands on 0.5
(``x / 2t`` below ``t``, ``0.5 + (x - t) / 2(1 - t)`` above; cosines are clipped to [0, 1] first). A sentence's
score is ``1 - calibrated support`` (hybrid: ``1 - max`` of the two calibrated supports), so a sentence is flagged
exactly when its score is >= 0.5; the span score is the sentence's score and the **response score** is the highest
sentence score (``1 - min`` calibrated support; 0.0 for a response without sentences). For ``keywords`` the
response score is the calibrated missing share (flagged when > 0.5) and each span carries it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.shared.sentences import Interval
from ragtruth_spans.detectors.similarity.keywords import DEFAULT_MAX_NGRAM, DEFAULT_TOP, KeywordMatch, match_keywords
from ragtruth_spans.detectors.similarity.support import SupportCache, response_sentences
from ragtruth_spans.models.pretrained import MINILM
from ragtruth_spans.training.tuning import DEFAULT_CRITERION, PAPER_GRID, TuningResult, grid, tune_thresholds

METHOD_THRESHOLDS: dict[str, tuple[str, ...]] = {"cosine": ("cosine",), "overlap": ("overlap",),
                                                 "hybrid": ("cosine", "overlap"), "keywords": ("keywords",)}
"""Each method and the thresholds it decides with."""
PAPER_THRESHOLDS: dict[str, dict[str, float]] = {"cosine": {"cosine": 0.6}, "overlap": {"overlap": 0.1},
                                                 "hybrid": {"cosine": 0.1, "overlap": 0.9},
                                                 "keywords": {"keywords": 0.2}}
"""DelucionQA's thresholds: T1 0.6 (cosine); T2 0.1 (overlap); hybrid T1 0.1, T2 0.9; T3 0.2 (keywords)."""
DEFAULT_THRESHOLDS: dict[str, dict[str, float]] = {**PAPER_THRESHOLDS, "hybrid": {"cosine": 0.6, "overlap": 0.1}}
"""The named detectors' thresholds: the paper's, except hybrid, whose paper thresholds flag nothing on RAGTruth
(dev span F1 0.000): its default is the best of the paper's grid tuned by span F1 on the pool's dev split (0.174;
docs/BASELINES.md), which is the paper's own single-method T1 and T2."""
DEFAULTS_FROM: dict[str, str] = {"cosine": "paper", "overlap": "paper", "keywords": "paper",
                                 "hybrid": "tuned on the RAGTruth pool's dev split (docs/BASELINES.md)"}
NAMES: dict[str, str] = {"sim-cosine": "cosine", "sim-overlap": "overlap", "sim-hybrid": "hybrid",
                         "keyword-match": "keywords"}


def calibrate(support: float, threshold: float) -> float:
    """``support`` in [0, 1] mapped piecewise-linearly so that ``threshold`` lands on 0.5 (monotone)."""
    x = min(max(float(support), 0.0), 1.0)
    if x <= threshold:
        return 0.5 * x / threshold
    return 0.5 + 0.5 * (x - threshold) / (1.0 - threshold)


def check_thresholds(method: str, thresholds: Mapping[str, float]) -> dict[str, float]:
    """The thresholds of ``method``, each in (0, 1); a missing, extra or out-of-range one is an InputError."""
    check_choice(method, METHOD_THRESHOLDS, "similarity method", field="method")
    expected = METHOD_THRESHOLDS[method]
    if set(thresholds) != set(expected):
        raise InputError(f"the {method} method takes the thresholds {', '.join(expected)}, got "
                         f"{', '.join(sorted(thresholds)) or 'none'}", field="thresholds")
    for name, value in thresholds.items():
        if not 0.0 < float(value) < 1.0:
            raise InputError(f"must be strictly between 0 and 1, got {value}", field=f"thresholds.{name}")
    return {name: float(thresholds[name]) for name in expected}


@dataclass
class ResponseEvidence:
    """What the thresholds decide on, for one response: its sentences and their supports."""

    sentences: list[Interval]
    cosine: list[float] | None = None
    overlap: list[float] | None = None
    keywords: KeywordMatch | None = None


class SimilarityDetector(Detector):
    """One DelucionQA method with its thresholds (see the module docstring)."""

    kind = "similarity"

    def __init__(self, method: str, thresholds: Mapping[str, float] | None = None, *, encoder: str = MINILM,
                 device: str | None = None, batch_size: int = 64, max_ngram: int = DEFAULT_MAX_NGRAM,
                 top_keywords: int = DEFAULT_TOP, source: dict[str, Any] | None = None) -> None:
        self.method = method
        self.thresholds = check_thresholds(method, thresholds if thresholds is not None
                                           else DEFAULT_THRESHOLDS.get(method, {}))
        self.encoder_name, self.device, self.batch_size = encoder, device, batch_size
        self.max_ngram, self.top_keywords = max_ngram, top_keywords
        default_source = DEFAULTS_FROM.get(method, "paper") if thresholds is None else "given"
        self.source = dict(source or {"thresholds_from": default_source})
        self._encoder: Any = None
        self.supports = SupportCache()  # shared with the copies of other thresholds (tuning)

    @property
    def encoder(self) -> Any:
        if self._encoder is None:
            from ragtruth_spans.detectors.shared.encoder import shared_encoder

            self._encoder = shared_encoder(self.encoder_name, device=self.device, batch_size=self.batch_size)
        return self._encoder

    # --- evidence (expensive, thresholds-free) ------------------------------------------------------------
    def evidence(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[ResponseEvidence]:
        """The supports of every sentence of every item (what :meth:`decide` thresholds); computed for the whole
        batch at once and cached per distinct text (:mod:`.support`)."""
        items = [DetectItem.of(item) for item in items]
        out = [ResponseEvidence(sentences=list(response_sentences(item.response))) for item in items]
        if self.method == "keywords":
            for item, found in zip(items, out):
                found.keywords = match_keywords(item.response, (item.question or "") + "\n" + item.context,
                                                max_ngram=self.max_ngram, top=self.top_keywords)
            return out
        contexts = [self.supports.context_evidence(item.context, item.task, item.question) for item in items]
        pairs = [(context, item.response[a:b]) for item, context, found in zip(items, contexts, out)
                 for a, b in found.sentences]
        for name in METHOD_THRESHOLDS[self.method]:
            values = iter(self.supports.sentence_supports(pairs, name, self.encoder if name == "cosine" else None))
            for found in out:
                setattr(found, name, [next(values) for _ in found.sentences])
        return out

    # --- decision (cheap) ---------------------------------------------------------------------------------
    def decide(self, evidence: ResponseEvidence, thresholds: Mapping[str, float] | None = None) -> Detection:
        """The detection of one response's evidence under ``thresholds`` (default: the detector's own)."""
        t = dict(thresholds or self.thresholds)
        if self.method == "keywords":
            return self._decide_keywords(evidence, t["keywords"])
        calibrated = []
        for name in METHOD_THRESHOLDS[self.method]:
            values = getattr(evidence, name)
            calibrated.append([calibrate(v, t[name]) for v in values])
        support = np.max(np.array(calibrated), axis=0) if evidence.sentences else np.zeros(0)
        scores = [round(1.0 - float(s), 6) for s in support]
        spans = [Span(a, b, score=score) for (a, b), score in zip(evidence.sentences, scores) if score >= 0.5]
        return Detection(spans=spans, score=max(scores, default=0.0),
                         diagnostics={"sentences": len(evidence.sentences), "flagged_sentences": len(spans)})

    def _decide_keywords(self, evidence: ResponseEvidence, threshold: float) -> Detection:
        match = evidence.keywords or KeywordMatch()
        score = round(calibrate(match.missing_share, threshold), 6)
        spans: list[Span] = []
        if match.missing_share > threshold:
            hits = [occ for kw in match.missing for occ in kw.occurrences]
            spans = [Span(a, b, score=score) for a, b in evidence.sentences
                     if any(s < b and a < e for s, e in hits)]
        return Detection(spans=spans, score=score,
                         diagnostics={"sentences": len(evidence.sentences), "flagged_sentences": len(spans),
                                      "keywords": len(match.keywords), "missing_keywords": len(match.missing)})

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        return [self.decide(found) for found in self.evidence(items)]

    # --- tuning -------------------------------------------------------------------------------------------
    def with_thresholds(self, thresholds: Mapping[str, float], source: dict[str, Any]) -> SimilarityDetector:
        """A copy with other thresholds (sharing the loaded encoder)."""
        copy = SimilarityDetector(self.method, thresholds, encoder=self.encoder_name, device=self.device,
                                  batch_size=self.batch_size, max_ngram=self.max_ngram,
                                  top_keywords=self.top_keywords, source=source)
        copy._encoder, copy.supports = self._encoder, self.supports
        return copy

    def tune(self, records: Sequence[Record], *, criterion: str = DEFAULT_CRITERION, split: str = "dev",
             values: Sequence[float] = PAPER_GRID) -> tuple[SimilarityDetector, TuningResult]:
        """Tune the thresholds on ``records`` over ``values`` (every combination for hybrid); see
        :mod:`ragtruth_spans.training.tuning`."""
        evidence = self.evidence(records)
        result = tune_thresholds(records, grid(METHOD_THRESHOLDS[self.method], values),
                                 lambda t: [self.decide(e, t) for e in evidence], criterion=criterion, split=split)
        source = {"thresholds_from": f"tuned on {split}", "criterion": criterion, "value": result.value}
        return self.with_thresholds(result.thresholds, source), result

    def describe(self) -> dict[str, Any]:
        info: dict[str, Any] = {"kind": self.kind, "method": self.method, "thresholds": self.thresholds,
                                **self.source}
        if self.method == "keywords":
            info.update(keyword_extractor="yake", max_ngram=self.max_ngram, top_keywords=self.top_keywords)
        else:
            info["splitter"] = "pysbd"
            if self.method != "overlap":
                info["encoder"] = self.encoder_name
        return info
