"""The two-tier family's recipe: the cross-encoder to fine-tune (tier 2), how its premise is retrieved, its
training settings and how the decision threshold is tuned on the eval split."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from ragtruth_spans.models.pretrained import MINILM
from ragtruth_spans.training.recipe import (
    ModelSection,
    Recipe,
    TrainingSection,
    check_eval_checkpoints,
    check_no_packing,
)
from ragtruth_spans.training.sections import Section
from ragtruth_spans.training.tuning import TuningSection


class EncoderModelSection(ModelSection):
    name_or_path: str = Field(MINILM, description="Encoder fine-tuned as the tier-2 cross-encoder: a hub id (at "
                                                  "``revision``), a local path, a GGUF (``gguf_file``), or 'tiny' "
                                                  "for a tiny random BERT built in code.")
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "float32"


class PremiseSection(Section):
    """What a response sentence is judged against: the ``top_k`` evidence units (question, context sentences or
    JSON fields) most similar to it by the ``retriever``'s embeddings, in context order."""

    retriever: str = Field(MINILM, description="Sentence-transformers model that picks the premise units.")
    top_k: int = Field(4, ge=1, le=32)


class PairsSection(Section):
    """Which tier-2 training pairs are kept: supported sentences far outnumber unsupported ones in RAGTruth, so at
    most ``supported_per_unsupported`` supported pairs are kept per unsupported pair (a seeded sample, ``data.seed``;
    null keeps all)."""

    supported_per_unsupported: float | None = Field(None, gt=0)


class EncoderTrainingSection(TrainingSection):
    """:class:`TrainingSection` with defaults for fine-tuning a small encoder on CPU."""

    num_epochs: float = Field(1.0, gt=0)
    learning_rate: float = Field(5e-5, gt=0)
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup", "cosine_with_min_lr"] = "linear"
    warmup_ratio: float = Field(0.1, ge=0.0, lt=1.0)
    weight_decay: float = Field(0.01, ge=0.0)
    max_grad_norm: float = Field(1.0, gt=0)
    per_device_batch_size: int = Field(16, ge=1)
    gradient_accumulation_steps: int = Field(1, ge=1)
    gradient_checkpointing: bool = False
    bf16: bool = False
    eval_steps: int = Field(100, ge=1)
    save_steps: int = Field(100, ge=1)
    logging_steps: int = Field(20, ge=1)
    pos_weight: float | Literal["balanced"] | None = Field(
        "balanced", description="Weight of the unsupported class in the binary cross-entropy: 'balanced' = "
                                "supported / unsupported training pairs; null = 1.")


class TwoTierRecipe(Recipe):
    """``kind: two-tier`` — tier 1 rules, tier 2 a cross-encoder fine-tuned on sentence labels from gold spans."""

    reads: ClassVar[Mapping[str, frozenset[str]]] = {
        "model": frozenset({"name_or_path", "revision", "gguf_file", "tiny"})}
    """The cross-encoder is loaded and trained in float32 with the library's attention: ``model.dtype`` and
    ``model.attn_implementation`` are refused."""

    kind: Literal["two-tier"] = "two-tier"
    model: EncoderModelSection = Field(default_factory=EncoderModelSection)
    premise: PremiseSection = Field(default_factory=PremiseSection)
    pairs: PairsSection = Field(default_factory=PairsSection)
    training: EncoderTrainingSection = Field(default_factory=EncoderTrainingSection)
    tuning: TuningSection = Field(default_factory=TuningSection)

    @model_validator(mode="after")
    def _check(self) -> TwoTierRecipe:
        if self.data.max_length > 512:
            raise ValueError(f"data.max_length={self.data.max_length}: a BERT-style cross-encoder reads at most 512 "
                             "tokens (premise + sentence)")
        check_no_packing(self, self.training)
        check_eval_checkpoints(self, self.training)
        return self
