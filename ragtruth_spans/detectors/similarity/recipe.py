"""The similarity family's recipe: which DelucionQA method, and how its thresholds are tuned on the dev split."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ragtruth_spans.training.recipe import Recipe, check_eval_split
from ragtruth_spans.training.sections import Section
from ragtruth_spans.training.tuning import TuningSection


class KeywordSection(Section):
    max_ngram: int = Field(2, ge=1, le=5, description="Longest YAKE keyphrase, in words.")
    top: int = Field(10, ge=1, description="YAKE keyphrases per response (numbers are added to these).")


class SimilarityRecipe(Recipe):
    """``kind: similarity`` — no weights are trained; "training" tunes the method's thresholds on the dev split."""

    reads: ClassVar[Mapping[str, frozenset[str]]] = {"data": frozenset({"prepared_dir", "eval_split", "tasks"})}
    """Nothing is trained: the eval split's responses of ``data.tasks`` are all it reads (``data.split``,
    ``max_length``, ``clean_fraction``, ``max_examples``, ``augment`` and ``seed`` are refused)."""

    kind: Literal["similarity"] = "similarity"
    method: Literal["cosine", "overlap", "hybrid", "keywords"]
    encoder: str = Field("sentence-transformers/all-MiniLM-L6-v2",
                         description="Sentence-transformers model of the cosine and hybrid methods.")
    keywords: KeywordSection = Field(default_factory=KeywordSection)
    tuning: TuningSection = Field(default_factory=TuningSection)

    @model_validator(mode="after")
    def _needs_eval_split(self) -> SimilarityRecipe:
        check_eval_split(self, "the thresholds are tuned on")
        return self
