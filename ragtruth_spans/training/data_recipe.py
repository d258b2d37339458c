"""The ``data:`` section every family's recipe shares (:class:`DataSection`): which prepared file and tasks, the
token budget, and what is added to the training records only — synthetic edits (:class:`AugmentSection`),
generated records (:class:`SynthSection`) and training-only sources (:class:`ExtraSource`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer

from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.data.augment import ALL_KINDS
from ragtruth_spans.training.sections import Section

SAMPLE = "sample"
"""``data.prepared_dir`` value that reads the embedded RAGTruth sample on the fly."""
TaskType = Literal["QA", "Summary", "Data2txt"]


class AugmentSection(Section):
    """Synthetic hallucinations injected into clean training responses (:mod:`ragtruth_spans.data.augment`);
    never applied to the eval split."""

    kinds: list[Literal["number", "entity", "negation", "clause", "qualifier"]] = Field(
        default_factory=lambda: ["number", "entity", "negation", "clause", "qualifier"], min_length=1)
    share: float = Field(1.0, gt=0.0, le=1.0, description="Share of clean training responses edited (one new "
                                                           "record each, the original is kept).")
    rounds: int = Field(1, ge=1, le=10, description="Passes over the clean responses (each makes new edits).")
    seed: int = 0


class SynthSection(Section):
    """Generated records over many kinds of text (:mod:`ragtruth_spans.data.synth`): faithful answers and typed
    hallucinations cut from the contexts of the training split and of ``documents`` (their ``train`` files) for
    training, and from the eval split's and ``documents``' ``dev`` files for the eval split (early stopping and
    tuning: the decision is chosen on real and generated held-out data together). Only contexts are read from
    ``documents``, never their labels."""

    documents: list[str] = Field(default_factory=list, description="Prepared directories whose contexts are "
                                 "generated from (train.jsonl for training, dev.jsonl for the eval split).")
    count: int = Field(2000, ge=1, description="Generated training records.")
    eval_count: int = Field(0, ge=0, description="Generated records added to the eval split (0: none).")
    kinds: list[str] = Field(default_factory=lambda: list(ALL_KINDS), min_length=1)
    edited_share: float = Field(0.6, ge=0.0, le=1.0, description="Share of generated records with an edit.")
    aligned_share: float = Field(0.0, ge=0.0, le=1.0, description="Share of answers that are a sentence of a "
                                 "clean answer of the document in a window cut to support it (real paraphrases "
                                 "over short contexts); the rest copy and transform the window's sentences.")
    weight: float = Field(1.0, gt=0.0, description="Training weight of each generated training record's words "
                          "(real and augmented records weigh 1).")
    seed: int = 0

    @field_validator("kinds")
    @classmethod
    def _known_kinds(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(ALL_KINDS))
        if unknown:
            raise ValueError(f"unknown kind(s) {unknown}; known: {list(ALL_KINDS)}")
        return value


class ExtraSource(Section):
    """One extra **training-only** source (``data.extra``): prepared files (``ragtruth-spans import ...`` or
    ``prepare`` output) appended to the training records only — never to the eval split, never to tuning or
    out-of-fold decisions. A bare string in the recipe is read as ``{dir: STRING}``."""

    dir: str = Field(description="A prepared directory (train/dev/test.jsonl), e.g. written by "
                                 "`ragtruth-spans import xsum-hallucinations`.")
    split: str | list[str] = Field("train", description="Which of its files to read: one name or a list, e.g. "
                                                        "[train, dev, test] for all of an imported set.")
    weight: float = Field(1.0, gt=0.0, description="Weight of its records relative to the real ones (families "
                                                   "that cannot weight records refuse a weight other than 1).")
    tasks: list[TaskType] | None = Field(None, description="Its tasks kept (null: data.tasks).")
    unlocated_words: Literal["left_out", "absent"] = Field(
        "left_out", description="What a response labelled hallucinated without spans (an `unlocated` record, e.g. "
        "`import begin`'s) teaches a word model: left_out: nothing (its words are left out; it teaches the "
        "response head only); absent: its content words whose stem the context lacks are its hallucinated words.")

    @property
    def splits(self) -> list[str]:
        """``split`` as a list."""
        return [self.split] if isinstance(self.split, str) else list(self.split)

    @model_serializer(mode="wrap")
    def _default_choice_unwritten(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """``unlocated_words`` is written only when not its default, so that runs from before it keep their
        recipe and fingerprint."""
        data = handler(self)
        if self.unlocated_words == "left_out":
            data.pop("unlocated_words", None)
        return data

    @field_validator("split")
    @classmethod
    def _known_split(cls, value: str | list[str]) -> str | list[str]:
        names = [value] if isinstance(value, str) else value
        if not names or len(set(names)) != len(names) or any(not n.strip() for n in names):
            raise ValueError(f"must name one split or a list of distinct splits, got {value!r}")
        return value


class DataSection(Section):
    """What every family trains on: ``<prepared_dir>/<split>.jsonl`` (or the embedded sample), some tasks."""

    prepared_dir: str = Field(SAMPLE, description="Directory of `ragtruth-spans prepare` output, or 'sample'.")
    split: str = Field("train", description="Which prepared file to train on: <prepared_dir>/<split>.jsonl "
                                            "(with prepared_dir 'sample': the sample's train or test split).")
    eval_split: str | None = Field(None, description="Prepared file evaluated during training (dev loss, best "
                                                     "checkpoint, threshold tuning), e.g. dev; null: none.")
    tasks: list[TaskType] = Field(default_factory=lambda: list(TASK_TYPES))
    max_length: int = Field(4096, ge=64, description="Token budget of one model input; longer contexts are "
                                                     "shortened (generative) or windowed (token classification).")
    clean_fraction: float = Field(1.0, ge=0.0, le=1.0, description="Share of clean (span-free) examples kept.")
    max_examples: int | None = Field(None, ge=1, description="Keep at most this many examples (after sampling).")
    augment: AugmentSection | None = Field(None, description="Synthetic hallucinations added to the training "
                                                             "split (null: none).")
    extra: list[ExtraSource] = Field(default_factory=list, description="Extra training-only sources appended "
                                     "after augmentation (ragtruth_spans.training.data); [] none.")
    synth: SynthSection | None = Field(None, description="Generated records over many kinds of text, for "
                                       "training and the eval split (null: none).")
    seed: int = 0

    @field_validator("extra", mode="before")
    @classmethod
    def _bare_directories(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, (str, dict)):
            value = [value]
        if isinstance(value, list):
            return [{"dir": item} if isinstance(item, str) else item for item in value]
        return value
