"""The similarity family's recipe: which DelucionQA method, and how its thresholds are tuned on the dev split."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ragtruth_spans.training.recipe import Recipe, Section
from ragtruth_spans.training.tuning import PAPER_GRID


class TuningSection(Section):
    """Thresholds are tuned on ``data.eval_split``: every value of ``grid`` (every combination for two
    thresholds), keeping the best ``criterion`` as the evaluator computes it (ties: the first, ascending)."""

    criterion: Literal["span_f1", "response_macro_f1", "response_f1"] = Field(
        "span_f1", description="span_f1: the project's primary metric (characters); response_macro_f1: "
                               "DelucionQA's response-level macro F1 over both classes.")
    grid: list[float] = Field(default_factory=lambda: list(PAPER_GRID), min_length=1,
                              description="Candidate values of each threshold, each in (0, 1).")

    @model_validator(mode="after")
    def _in_range(self) -> TuningSection:
        bad = [v for v in self.grid if not 0.0 < v < 1.0]
        if bad:
            raise ValueError(f"grid values must be strictly between 0 and 1, got {bad}")
        return self


class KeywordSection(Section):
    max_ngram: int = Field(2, ge=1, le=5, description="Longest YAKE keyphrase, in words.")
    top: int = Field(10, ge=1, description="YAKE keyphrases per response (numbers are added to these).")


class SimilarityRecipe(Recipe):
    """``kind: similarity`` — no weights are trained; "training" tunes the method's thresholds on the dev split."""

    kind: Literal["similarity"] = "similarity"
    method: Literal["cosine", "overlap", "hybrid", "keywords"]
    encoder: str = Field("sentence-transformers/all-MiniLM-L6-v2",
                         description="Sentence-transformers model of the cosine and hybrid methods.")
    keywords: KeywordSection = Field(default_factory=KeywordSection)
    tuning: TuningSection = Field(default_factory=TuningSection)

    @model_validator(mode="after")
    def _needs_eval_split(self) -> SimilarityRecipe:
        if self.data.eval_split is None:
            raise ValueError("data.eval_split must name the split the thresholds are tuned on (e.g. dev)")
        return self
