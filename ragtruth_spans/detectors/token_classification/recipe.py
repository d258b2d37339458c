"""The token-classification family's recipe: an ``AutoModelForTokenClassification`` that labels response tokens.

Two ways to fine-tune (``finetuning``): ``full`` (every weight; encoders such as all-MiniLM-L6-v2, ModernBERT,
DeBERTa-v3) and ``lora`` (PEFT LoRA on a base that is 4-bit NF4 when ``quantization.enabled``, the classification
head trained in full: Llama/Qwen/Mistral ``*ForTokenClassification``). ``windows`` say how a context longer than
``data.max_length`` is cut into windows beside the response; ``detection`` how window probabilities become
spans (see :mod:`.windows` and :mod:`.labels`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from ragtruth_spans.training.recipe import (
    LoraSection,
    ModelSection,
    QuantizationSection,
    Recipe,
    TinyModel,
    TrainingSection,
    check_eval_checkpoints,
    check_no_packing,
)
from ragtruth_spans.training.sections import Section

LabelScheme = Literal["binary", "typed"]
Aggregation = Literal["mean", "max", "min", "best", "by-type"]
SpanEdges = Literal["tokens", "trim-space", "trim-punct", "words"]


class TinyTokenModel(TinyModel):
    """Shape of the built-in tiny random model (``name_or_path: tiny``): a BERT encoder or a Llama decoder."""

    architecture: Literal["bert", "llama"] = "bert"


class TokenModelSection(ModelSection):
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "float32"
    attention_dropout: float | None = Field(None, ge=0.0, lt=1.0, description="Override the model's attention "
                                            "dropout (0 lets CPU attention use the fused SDPA kernel); null: keep.")
    tiny: TinyTokenModel = Field(default_factory=TinyTokenModel)


class LabelsSection(Section):
    scheme: LabelScheme = Field("binary", description="binary: O / hallucinated; typed: O + the four RAGTruth "
                                                       "types (typed spans).")


class WindowsSection(Section):
    """How one response and its context become model inputs of at most ``data.max_length`` tokens."""

    context_overlap: int = Field(0, ge=0, description="Context tokens repeated at the start of the next window.")
    min_context_tokens: int = Field(128, ge=1, description="A response is slid over in segments when fewer "
                                                           "context tokens than this would fit beside it.")
    response_overlap: int = Field(64, ge=0, description="Tokens shared by consecutive response segments.")
    train_windows: Literal["all", "best"] = Field(
        "all", description="all: train on every window; best: only the window whose context shares most tokens "
                           "with the response (fewer, less noisy examples).")


class DetectionSection(Section):
    """From per-window token probabilities to spans (the defaults of a saved run; load options override them)."""

    aggregation: Aggregation = Field("mean", description="How a token's probabilities from several windows "
                                                         "combine (see windows.AGGREGATIONS).")
    span_edges: SpanEdges = Field("trim-space", description="How merged token spans are cut at their edges.")
    threshold: float | None = Field(None, gt=0.0, lt=1.0, description="P(hallucinated) at or above which a token "
                                    "is flagged; null: tuned on data.eval_split (0.5 without one).")


class TokenTrainingSection(TrainingSection):
    learning_rate: float = Field(5e-5, gt=0)
    hallucinated_weight: float = Field(1.0, gt=0, description="Cross-entropy weight of the hallucinated labels "
                                                              "(O has weight 1).")
    group_by_length: bool = Field(True, description="Batch windows of similar length (less padding).")


class TokenClassificationRecipe(Recipe):
    """``kind: token-classification`` — HF ``Trainer`` on response-token labels (see the module docstring)."""

    kind: Literal["token-classification"] = "token-classification"
    model: TokenModelSection
    finetuning: Literal["full", "lora"] = "full"
    quantization: QuantizationSection = Field(default_factory=lambda: QuantizationSection(enabled=False))
    lora: LoraSection = Field(default_factory=LoraSection)
    labels: LabelsSection = Field(default_factory=LabelsSection)
    windows: WindowsSection = Field(default_factory=WindowsSection)
    detection: DetectionSection = Field(default_factory=DetectionSection)
    training: TokenTrainingSection = Field(default_factory=TokenTrainingSection)

    def switched_off(self) -> list[str]:
        """The shared rules, and the ``lora`` section unless ``finetuning`` is ``lora``."""
        return super().switched_off() + (["lora"] if self.finetuning != "lora" else [])

    @model_validator(mode="after")
    def _check_consistency(self) -> TokenClassificationRecipe:
        if self.quantization.enabled and self.finetuning != "lora":
            raise ValueError("quantization.enabled=true needs finetuning=lora (4-bit weights cannot be trained in "
                             "full)")
        if self.detection.aggregation == "by-type" and self.labels.scheme != "typed":
            raise ValueError("detection.aggregation=by-type needs labels.scheme=typed (it treats conflict and "
                             "baseless types differently)")
        check_no_packing(self, self.training)
        if self.training.bf16 and self.model.dtype == "float16":
            raise ValueError("training.bf16=true conflicts with model.dtype=float16")
        if self.windows.min_context_tokens >= self.data.max_length:
            raise ValueError(f"windows.min_context_tokens={self.windows.min_context_tokens} must be below "
                             f"data.max_length={self.data.max_length}")
        check_eval_checkpoints(self, self.training)
        return self
