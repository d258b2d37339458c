"""The entailment family's recipe (``kind: entailment``): a sequence classifier with three labels (entailment,
neutral, contradiction) fine-tuned from a BERT-type encoder on prepared NLI pairs (``ragtruth-spans import nli``),
in ``stages`` trained one after the other, each from the weights the previous one ended with.

The shared ``data`` section is not read (every key of it is refused): each stage names its own prepared NLI
directories (``train.jsonl`` is trained on, ``dev.jsonl`` measured after the stage), a ``sources`` filter and a
``max_pairs`` cap. ``detection`` holds the detector's settings saved with the run (load options override them).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from ragtruth_spans.models.pretrained import MINILM
from ragtruth_spans.training.recipe import Recipe, TinyModel
from ragtruth_spans.training.sections import Section

NLI_FILES = ("train.jsonl", "dev.jsonl")
"""The files of a prepared NLI directory a run trains and early-measures on (fingerprinted)."""


class EntailmentModelSection(Section):
    name_or_path: str = Field(MINILM, description="Base encoder: a packaged model (all-MiniLM-L6-v2, verified by "
                                                  "SHA-256), a local folder, a hub id, or 'tiny' (a random BERT).")
    revision: str | None = None
    max_length: int = Field(256, ge=16, le=512, description="Token budget of one (premise, hypothesis) pair; the "
                                                            "premise is cut first.")
    tiny: TinyModel = Field(default_factory=TinyModel)


class StageSection(Section):
    """One pass of training over some prepared NLI pairs."""

    name: str = Field("nli", min_length=1, description="What the stage is called in logs and run_info.json.")
    data: list[str] = Field(min_length=1, description="Prepared NLI directories (train.jsonl, dev.jsonl, "
                                                      "test.jsonl), e.g. written by `ragtruth-spans import nli`.")
    sources: list[str] | None = Field(None, description="Keep only pairs of these sources (null: all).")
    epochs: float = Field(1.0, gt=0.0, description="Passes over the stage's training pairs.")
    learning_rate: float = Field(3e-5, gt=0.0)
    max_pairs: int | None = Field(None, ge=1, description="Train on at most this many pairs (a seeded sample).")

    @field_validator("data", mode="before")
    @classmethod
    def _bare_directory(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


class EntailmentTrainingSection(Section):
    """What maps onto ``transformers.TrainingArguments`` (the same for every stage; a stage sets its epochs and
    learning rate)."""

    per_device_batch_size: int = Field(16, ge=1)
    gradient_accumulation_steps: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1, description="If set, every stage stops after this many steps "
                                                          "(overrides its epochs).")
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup"] = "linear"
    warmup_ratio: float = Field(0.1, ge=0.0, lt=1.0)
    weight_decay: float = Field(0.01, ge=0.0)
    max_grad_norm: float = Field(1.0, gt=0.0)
    group_by_length: bool = Field(True, description="Batch pairs of similar length (less padding).")
    bf16: bool = Field(False, description="bfloat16 mixed precision (a GPU that has it).")
    seed: int = 42
    logging_steps: int = Field(50, ge=1, description="A progress line (pairs/s, ETA) every this many steps.")
    save_steps: int = Field(500, ge=1, description="A checkpoint every this many steps (a killed run resumes "
                                                   "from the last one).")
    save_total_limit: int = Field(2, ge=1)


class EvaluationSection(Section):
    """What the finished run is measured on (``metrics.json``): per source, three-way and binary accuracy."""

    splits: list[Literal["dev", "test"]] = Field(default_factory=lambda: ["dev", "test"], min_length=1)
    max_pairs_per_source: int | None = Field(None, ge=1, description="Measure at most this many pairs of each "
                                             "source and split, a seeded sample (null: all).")
    batch_size: int = Field(64, ge=1)


class DetectionSection(Section):
    """How the detector reads a response (saved with the run; load options override ``threshold``)."""

    encoder: str = Field(MINILM, description="Sentence encoder that picks each sentence's context windows.")
    windows: int = Field(3, ge=1, le=32, description="Context windows judged per response sentence (best by "
                                                      "cosine similarity).")
    window_sentences: int = Field(2, ge=1, le=8, description="Consecutive context sentences in one window.")
    window_fields: int = Field(6, ge=1, le=64, description="Consecutive fields of a Data2txt JSON context in "
                                                           "one window.")
    threshold: float = Field(0.5, gt=0.0, lt=1.0, description="A sentence is flagged when no window entails it "
                                                              "with P(entailment) at or above this.")


class EntailmentRecipe(Recipe):
    """``kind: entailment`` — an NLI cross-encoder trained in stages (see the module docstring)."""

    reads: ClassVar[Mapping[str, frozenset[str]]] = {"data": frozenset()}
    """Stages name their own NLI directories: no key of the shared ``data`` section is read."""

    kind: Literal["entailment"] = "entailment"
    model: EntailmentModelSection = Field(default_factory=EntailmentModelSection)
    stages: list[StageSection] = Field(min_length=1)
    training: EntailmentTrainingSection = Field(default_factory=EntailmentTrainingSection)
    evaluation: EvaluationSection = Field(default_factory=EvaluationSection)
    detection: DetectionSection = Field(default_factory=DetectionSection)

    def data_dirs(self) -> list[str]:
        """Every prepared NLI directory the stages name, once each, in order."""
        return list(dict.fromkeys(d for stage in self.stages for d in stage.data))

    def extra_inputs(self) -> list[tuple[str, str | Path]]:
        """The stages' directories (the run directory may not be or hold one)."""
        return [(f"stages[{k}].data[{j}]", d) for k, stage in enumerate(self.stages)
                for j, d in enumerate(stage.data)]

    def extra_data_files(self) -> list[Path]:
        """The training and dev files of every stage directory (fingerprinted: a changed file is another run)."""
        return [Path(d) / name for d in self.data_dirs() for name in NLI_FILES]
