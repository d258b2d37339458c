"""Training recipes: the pydantic sections every family builds on and the :class:`Recipe` base.

Where a recipe's parts live (imports flow one way, so the part that knows the families sits above this one):
this module (shared sections, the base class); each family's ``detectors/<family>/recipe.py`` (its own
sections); :mod:`ragtruth_spans.detectors.recipes` (the union over the families: validation, ``--set`` checked
against a family's schema, loading a recipe file or a run's ``recipe.yaml``); :mod:`.recipe_files` (shipped
recipes by name, strict YAML, ``key=value`` parsing). A detector's load options are not a recipe:
:mod:`ragtruth_spans.detectors.options`.

A recipe names its detector family with a top-level ``kind:`` key (``generative`` when absent, so older files keep
working). Every family shares the ``data:`` section (which prepared file, which tasks, the token budget, the seed),
``output_dir`` and ``logging``; each adds its own ``model``/``training`` sections, built from the reusable
sections below. The union over the families' recipe classes (validation, overrides checked against a family's
schema, :func:`load_recipe <ragtruth_spans.detectors.recipes.load_recipe>`) lives next to the family table in
:mod:`ragtruth_spans.detectors.recipes`, so that imports flow one way (detectors → training).

Every model forbids unknown keys, so a typo or a wrong type fails with an error that names the key path (e.g.
``training.max_steps: Input should be a valid integer``). Reading recipe files and ``--set`` overrides:
:mod:`ragtruth_spans.training.recipe_files`.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.data.augment import ALL_KINDS
from ragtruth_spans.models.tiny import TINY
from ragtruth_spans.runs.run_dir import DEFAULT_KIND

SAMPLE = "sample"
"""``data.prepared_dir`` value that reads the embedded RAGTruth sample on the fly."""

Dtype = Literal["auto", "bfloat16", "float16", "float32"]
TaskType = Literal["QA", "Summary", "Data2txt"]


def _accepts_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    if get_origin(annotation) in (Union, types.UnionType, Annotated):
        return any(_accepts_bool(arg) for arg in get_args(annotation))
    return False


class Strict(BaseModel):
    """Unknown keys are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Section(Strict):
    """Base of every recipe section: :class:`Strict`, and ``true``/``false`` are never read as numbers
    (``num_epochs: true`` is an error, not 1.0) while flags take only ``true``/``false``."""

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and not _accepts_bool(annotation):
            raise ValueError(f"expected {getattr(annotation, '__name__', annotation)}, got the boolean {value}")
        if annotation is bool and not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value


@cache
def optimizer_names() -> tuple[str, ...]:
    """The optimizer names ``transformers.TrainingArguments`` accepts."""
    from transformers.training_args import OptimizerNames

    return tuple(o.value for o in OptimizerNames)


class TinyModel(Section):
    """Shape of the built-in tiny random Llama (used when ``name_or_path: tiny``)."""

    vocab_size: int = Field(1024, ge=300)
    hidden_size: int = Field(64, ge=64, multiple_of=64)
    num_hidden_layers: int = Field(2, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    intermediate_size: int = Field(128, ge=64, multiple_of=64)
    seed: int = 0


class ModelSection(Section):
    name_or_path: str = Field(description="Hub id, local path, a packaged model (e.g. smollm2-135m-instruct, a "
                                          "GGUF), or 'tiny' for the built-in tiny random Llama.")
    revision: str | None = None
    gguf_file: str | None = Field(None, description="A GGUF file as the base: a path relative to the folder "
                                                    "name_or_path, or absolute; converted once to a cached "
                                                    "safetensors folder (pip install gguf).")
    dtype: Dtype = "bfloat16"
    attn_implementation: Literal["eager", "sdpa", "flash_attention_2"] | None = "sdpa"
    tiny: TinyModel = Field(default_factory=TinyModel)


class QuantizationSection(Section):
    enabled: bool = Field(True, description="4-bit bitsandbytes quantization (QLoRA); false = plain LoRA.")
    quant_type: Literal["nf4", "fp4"] = "nf4"
    double_quant: bool = True
    compute_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    quant_storage: Literal["uint8", "bfloat16", "float16", "float32"] = Field(
        "uint8", description="Storage dtype of packed 4-bit weights; FSDP-QLoRA needs it equal to model.dtype.")


class LoraSection(Section):
    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    modules_to_save: list[str] | None = Field(
        None, description="Modules trained in full and saved with the adapter (PEFT `modules_to_save`), e.g. "
                          "[embed_tokens, lm_head] for a randomly initialised base; none for pretrained bases.")


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


class TrainingSection(Section):
    """Optimisation settings that map onto ``transformers.TrainingArguments`` (TRL's configs extend it)."""

    num_epochs: float = Field(1.0, gt=0)
    max_steps: int | None = Field(None, ge=1, description="If set, overrides num_epochs.")
    learning_rate: float = Field(2e-4, gt=0)
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup", "cosine_with_min_lr"] = "cosine"
    warmup_ratio: float = Field(0.03, ge=0.0, lt=1.0)
    weight_decay: float = Field(0.0, ge=0.0)
    max_grad_norm: float = Field(0.3, gt=0)
    optim: str = Field("adamw_torch", description="transformers optimizer name, e.g. paged_adamw_8bit on GPU.")
    eval_steps: int = Field(80, ge=1, description="Evaluate on data.eval_split every this many steps (and keep "
                                                  "the best checkpoint); unused without an eval split.")
    per_device_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int = Field(16, ge=1)
    gradient_checkpointing: bool = True
    packing: bool = Field(False, description="Generative family: TRL packing of several examples into one "
                                             "sequence (token-classification recipes refuse true).")
    seed: int = 42
    bf16: bool = True
    tf32: bool = False
    logging_steps: int = Field(10, ge=1)
    save_steps: int = Field(200, ge=1)
    save_total_limit: int | None = Field(2, ge=1)

    @field_validator("optim")
    @classmethod
    def _known_optimizer(cls, value: str) -> str:
        if value not in optimizer_names():
            raise ValueError(f"unknown optimizer {value!r} (transformers knows: {', '.join(optimizer_names())})")
        return value


def check_eval_checkpoints(recipe: Recipe, training: TrainingSection) -> None:
    """With an eval split the best checkpoint is kept, so checkpoints must fall on evaluation steps."""
    if recipe.data.eval_split is not None and training.save_steps % training.eval_steps:
        raise ValueError(f"training.save_steps={training.save_steps} must be a multiple of training.eval_steps="
                         f"{training.eval_steps} when data.eval_split is set (the best checkpoint is kept)")


def check_eval_split(recipe: Recipe, purpose: str) -> None:
    """Families whose training tunes or stops on held-out data refuse a recipe without ``data.eval_split``."""
    if recipe.data.eval_split is None:
        raise ValueError(f"data.eval_split must name the split {purpose} (e.g. dev)")


def check_no_packing(recipe: Recipe, training: TrainingSection) -> None:
    """``training.packing`` is a generative-family setting (TRL packs examples into one sequence); a family whose
    examples are batched one per row refuses it rather than ignoring it."""
    if training.packing:
        raise ValueError(f"training.packing=true is not supported by {recipe.kind} recipes (one example per row, "
                         "batched with padding; packing is a generative-family setting): set it to false")


class LoggingSection(Section):
    report_to: Literal["none", "tensorboard", "wandb"] = "none"
    run_name: str | None = None


SAVED_RUN = "saved_run"
"""Validation context key: the recipe is read back from a run directory (see :meth:`Recipe._reads_every_key`)."""


class Recipe(Strict):
    """What every family's recipe has; a family's recipe class subclasses it with ``kind: Literal["<kind>"]``
    and its own sections (the discriminator ``kind`` rules out the sections' field-level checks here).

    **Accountable keys.** A family that reads only part of a shared section (``data``, ``model``) says which keys
    it reads in :attr:`reads`; every other key of that section is *unread* (:meth:`unread_keys`): setting it is an
    error naming the key and the family (in ``--dry-run`` too). Keys that the recipe's own switches turn off
    (:meth:`switched_off`: ``model.tiny`` for a real model, ``lora`` with full fine-tuning) stay accepted, so that
    ``--set model.name_or_path=...`` works on a recipe that shapes a tiny model, and ``--dry-run`` names them.
    Both are left out of the resolved recipe (``recipe.yaml``, the fingerprint, ``--dry-run``), so that everything
    a run records is something it used.
    """

    reads: ClassVar[Mapping[str, frozenset[str]]] = {}
    """``{section: keys read}`` for the shared sections this family reads only in part; sections not named are
    read whole."""

    kind: str = DEFAULT_KIND
    data: DataSection = Field(default_factory=DataSection)
    output_dir: str = Field(description="Where the run directory is written.")
    logging: LoggingSection = Field(default_factory=LoggingSection)

    @field_validator("output_dir")
    @classmethod
    def _names_a_directory(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must name a directory, got an empty value")
        return value

    def unread_keys(self) -> list[str]:
        """Dotted keys (``data.max_length``) of the shared sections that this family never reads (:attr:`reads`)."""
        return [f"{section}.{name}" for section, read in self.reads.items()
                for name in type(getattr(self, section)).model_fields if name not in read]

    def switched_off(self) -> list[str]:
        """Dotted keys (a whole section: ``lora``) that this recipe's own settings leave unread: ``model.tiny``
        unless ``model.name_or_path`` is ``tiny``. Families add their own. (The 4-bit settings are read even with
        ``quantization.enabled: false``: ``--load-in-4bit`` at inference builds its config from them.)"""
        keys = []
        model = getattr(self, "model", None)
        if isinstance(model, BaseModel) and "tiny" in type(model).model_fields and \
                getattr(model, "name_or_path", TINY) != TINY:
            keys.append("model.tiny")
        return keys

    def extra_inputs(self) -> list[tuple[str, str | Path]]:
        """``(recipe key, directory)`` of what a family reads beyond the shared ``data`` section (the run
        directory may not be or hold one); none by default."""
        return []

    def extra_data_files(self) -> list[Path]:
        """Data files beyond the shared ``data`` section whose contents the run's fingerprint holds; none by
        default."""
        return []

    def reads_key(self, key: str) -> bool:
        """Whether this recipe's run reads the dotted ``key`` (``data.split``)."""
        parts = key.split(".")
        prefixes = {".".join(parts[:n]) for n in range(1, len(parts) + 1)}
        return not (prefixes & {*self.unread_keys(), *self.switched_off()})

    @model_validator(mode="after")
    def _reads_every_key(self, info: ValidationInfo) -> Recipe:
        """Refuse an unread key that the recipe sets. A recipe read back from a run directory (validation
        context ``{"saved_run": True}``) may hold keys that older versions wrote for every family: they were
        never read, so they are left out."""
        if info.context and info.context.get(SAVED_RUN):
            return self
        given = [key for key in self.unread_keys() if _is_set(self, key)]
        if given:
            raise ValueError(f"{', '.join(given)}: not read by {self.kind} recipes (a key a family does not read "
                             "is refused rather than ignored); remove " + ("it" if len(given) == 1 else "them"))
        return self

    @model_serializer(mode="wrap")
    def _only_read_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        for key in [*self.unread_keys(), *self.switched_off()]:
            section, _, name = key.partition(".")
            if not name:
                data.pop(section, None)
            elif isinstance(data.get(section), dict):
                data[section].pop(name, None)
        return data

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def _is_set(recipe: Recipe, key: str) -> bool:
    """Whether the recipe (its file or ``--set``) gave the dotted ``key`` explicitly (not by default)."""
    section, _, name = key.partition(".")
    if not name:
        return section in recipe.model_fields_set
    return section in recipe.model_fields_set and name in getattr(recipe, section).model_fields_set
