"""The generative family's recipe: a causal LM fine-tuned with (Q)LoRA to write out the hallucinated spans."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ragtruth_spans.training.recipe import (
    LoraSection,
    ModelSection,
    QuantizationSection,
    Recipe,
    TrainingSection,
    check_eval_checkpoints,
)


class GenerativeRecipe(Recipe):
    """``kind: generative`` — TRL ``SFTTrainer`` on prompt → JSON list of span texts (see ``prompts``)."""

    kind: Literal["generative"] = "generative"
    model: ModelSection
    quantization: QuantizationSection = Field(default_factory=QuantizationSection)
    lora: LoraSection = Field(default_factory=LoraSection)
    training: TrainingSection = Field(default_factory=TrainingSection)

    @model_validator(mode="after")
    def _check_consistency(self) -> GenerativeRecipe:
        q = self.quantization
        if q.enabled and q.quant_storage != "uint8" and q.quant_storage != self.model.dtype:
            raise ValueError(f"quantization.quant_storage={q.quant_storage} must equal model.dtype="
                             f"{self.model.dtype} (FSDP-QLoRA shards the packed weights with the other parameters)")
        if self.training.bf16 and self.model.dtype == "float16":
            raise ValueError("training.bf16=true conflicts with model.dtype=float16")
        check_eval_checkpoints(self, self.training)
        return self
