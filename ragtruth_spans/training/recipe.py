"""Training recipes: the pydantic sections every family builds on and the :class:`Recipe` base.

Where a recipe's parts live (imports flow one way, so the part that knows the families sits above this one):
this module (shared sections, the base class), :mod:`.sections` (the base of every section) and :mod:`.data_recipe`
(the ``data:`` section); each family's ``detectors/<family>/recipe.py`` (its own
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

from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ragtruth_spans.models.tiny import TINY
from ragtruth_spans.runs.run_dir import DEFAULT_KIND
from ragtruth_spans.training.data_recipe import DataSection
from ragtruth_spans.training.sections import Section, Strict

Dtype = Literal["auto", "bfloat16", "float16", "float32"]


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
