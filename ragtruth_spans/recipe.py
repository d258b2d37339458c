"""Training recipes: a pydantic schema, YAML loading and torchtune-style ``key=value`` overrides.

Every model forbids unknown keys, so a typo or a wrong type fails with an error that names the key path
(e.g. ``training.max_steps: Input should be a valid integer``). Recipes are YAML files; shipped ones live in
``ragtruth_spans/recipes/`` and can be named without the ``.yaml`` suffix (``tiny-cpu``,
``llama-3.1-8b-instruct/qlora``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .schema import TASK_TYPES, InputError

RECIPES_DIR = Path(__file__).resolve().parent / "recipes"
TINY = "tiny"
"""``model.name_or_path`` value that builds the tiny random Llama in code (see :mod:`ragtruth_spans.tiny`)."""
SAMPLE = "sample"
"""``data.prepared_dir`` value that prepares the embedded RAGTruth sample on the fly."""

Dtype = Literal["auto", "bfloat16", "float16", "float32"]


def torch_dtype(name: str) -> Any:
    """The torch dtype for a recipe dtype name; ``"auto"`` is passed through for ``from_pretrained``."""
    import torch

    return "auto" if name == "auto" else getattr(torch, name)
TaskType = Literal["QA", "Summary", "Data2txt"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TinyModel(_Strict):
    """Shape of the built-in tiny random Llama (used when ``name_or_path: tiny``)."""

    vocab_size: int = Field(1024, ge=300)
    hidden_size: int = Field(64, ge=64, multiple_of=64)
    num_hidden_layers: int = Field(2, ge=1)
    num_attention_heads: int = Field(4, ge=1)
    intermediate_size: int = Field(128, ge=64, multiple_of=64)
    seed: int = 0


class ModelSection(_Strict):
    name_or_path: str = Field(description="Hub id, local path, or 'tiny' for the built-in tiny random Llama.")
    revision: str | None = None
    dtype: Dtype = "bfloat16"
    attn_implementation: Literal["eager", "sdpa", "flash_attention_2"] | None = "sdpa"
    tiny: TinyModel = Field(default_factory=TinyModel)


class QuantizationSection(_Strict):
    enabled: bool = Field(True, description="4-bit bitsandbytes quantization (QLoRA); false = plain LoRA.")
    quant_type: Literal["nf4", "fp4"] = "nf4"
    double_quant: bool = True
    compute_dtype: Literal["bfloat16", "float16", "float32"] = "bfloat16"
    quant_storage: Literal["uint8", "bfloat16", "float16", "float32"] = Field(
        "uint8", description="Storage dtype of packed 4-bit weights; FSDP-QLoRA needs it equal to model.dtype.")


class LoraSection(_Strict):
    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: list[str] | Literal["all-linear"] = "all-linear"
    modules_to_save: list[str] | None = Field(
        None, description="Modules trained in full and saved with the adapter (PEFT `modules_to_save`), e.g. "
                          "[embed_tokens, lm_head] for a randomly initialised base; none for pretrained bases.")


class DataSection(_Strict):
    prepared_dir: str = Field(SAMPLE, description="Directory of `ragtruth-spans prepare` output, or 'sample'.")
    split: str = Field("train", description="Which prepared file to train on: <prepared_dir>/<split>.jsonl.")
    tasks: list[TaskType] = Field(default_factory=lambda: list(TASK_TYPES))
    max_length: int = Field(4096, ge=64, description="Tokens of prompt + target; longer contexts are shortened.")
    clean_fraction: float = Field(1.0, ge=0.0, le=1.0, description="Share of clean (span-free) examples kept.")
    max_examples: int | None = Field(None, ge=1, description="Keep at most this many examples (after sampling).")
    seed: int = 0


class TrainingSection(_Strict):
    num_epochs: float = Field(1.0, gt=0)
    max_steps: int | None = Field(None, ge=1, description="If set, overrides num_epochs.")
    learning_rate: float = Field(2e-4, gt=0)
    lr_scheduler: Literal["linear", "cosine", "constant", "constant_with_warmup", "cosine_with_min_lr"] = "cosine"
    warmup_ratio: float = Field(0.03, ge=0.0, lt=1.0)
    weight_decay: float = Field(0.0, ge=0.0)
    max_grad_norm: float = Field(0.3, gt=0)
    optim: str = Field("adamw_torch", description="transformers optimizer name, e.g. paged_adamw_8bit on GPU.")
    per_device_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int = Field(16, ge=1)
    gradient_checkpointing: bool = True
    packing: bool = False
    seed: int = 42
    bf16: bool = True
    tf32: bool = False
    logging_steps: int = Field(10, ge=1)
    save_steps: int = Field(200, ge=1)
    save_total_limit: int | None = Field(2, ge=1)


class LoggingSection(_Strict):
    report_to: Literal["none", "tensorboard", "wandb"] = "none"
    run_name: str | None = None


class Recipe(_Strict):
    model: ModelSection
    quantization: QuantizationSection = Field(default_factory=QuantizationSection)
    lora: LoraSection = Field(default_factory=LoraSection)
    data: DataSection = Field(default_factory=DataSection)
    training: TrainingSection = Field(default_factory=TrainingSection)
    output_dir: str
    logging: LoggingSection = Field(default_factory=LoggingSection)

    @model_validator(mode="after")
    def _check_consistency(self) -> Recipe:
        q = self.quantization
        if q.enabled and q.quant_storage != "uint8" and q.quant_storage != self.model.dtype:
            raise ValueError(f"quantization.quant_storage={q.quant_storage} must equal model.dtype="
                             f"{self.model.dtype} (FSDP-QLoRA shards the packed weights with the other parameters)")
        if self.training.bf16 and self.model.dtype == "float16":
            raise ValueError("training.bf16=true conflicts with model.dtype=float16")
        return self

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def resolve_recipe_path(name_or_path: str | Path) -> Path:
    """A recipe file path: an existing file, or a shipped recipe name (``tiny-cpu``, ``llama-2-13b/qlora``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = RECIPES_DIR / (str(name_or_path) if str(name_or_path).endswith(".yaml") else f"{name_or_path}.yaml")
    if shipped.is_file():
        return shipped
    raise InputError(f"recipe not found: {name_or_path!r} is neither a file nor a shipped recipe "
                     f"({', '.join(shipped_recipes())})")


def shipped_recipes() -> list[str]:
    """Names of the recipes shipped with the package."""
    return sorted(str(p.relative_to(RECIPES_DIR).with_suffix("")) for p in RECIPES_DIR.rglob("*.yaml")
                  if "accelerate" not in p.parts)


def parse_override(item: str) -> tuple[list[str], Any]:
    """``"training.max_steps=20"`` → ``(["training", "max_steps"], 20)``; the value is parsed as a YAML scalar."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise InputError(f"override {item!r} is not of the form key=value", field="--set")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise InputError(f"override {item!r}: value is not valid YAML ({exc})", field="--set") from None
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set each ``dotted.key=value`` in ``data`` (a recipe dict); a key the schema does not have is an error."""
    for item in overrides:
        keys, value = parse_override(item)
        model: type[BaseModel] | None = Recipe
        node = data
        for depth, key in enumerate(keys):
            fields = model.model_fields if model is not None else {}
            if key not in fields:
                dotted = ".".join(keys[: depth + 1])
                raise InputError(f"unknown recipe key {dotted!r} (valid here: {', '.join(fields)})", field="--set")
            annotation = fields[key].annotation
            model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None
            if depth == len(keys) - 1:
                node[key] = value
            else:
                if model is None:
                    raise InputError(f"recipe key {'.'.join(keys[: depth + 1])!r} has no sub-keys", field="--set")
                node = node.setdefault(key, {})
                if not isinstance(node, dict):
                    raise InputError(f"recipe key {'.'.join(keys[: depth + 1])!r} is not a section", field="--set")
    return data


def _format_validation_error(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(part) for part in err["loc"]) or "(recipe)"
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{loc}: {msg}")
    return f"invalid recipe {source}: " + "; ".join(lines)


def validate_recipe(data: Any, source: str = "<dict>") -> Recipe:
    """Validate a recipe dict; errors become one :class:`InputError` naming every bad key path."""
    if not isinstance(data, dict):
        raise InputError(f"invalid recipe {source}: expected a mapping at the top level")
    try:
        return Recipe.model_validate(data)
    except ValidationError as exc:
        raise InputError(_format_validation_error(exc, source)) from None


def load_recipe(name_or_path: str | Path, overrides: list[str] | None = None) -> Recipe:
    """Load a recipe file (or shipped name), apply ``key=value`` overrides, validate."""
    path = resolve_recipe_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("expected a mapping at the top level", path=path)
    data = apply_overrides(data, list(overrides or []))
    return validate_recipe(data, source=str(path))
