"""What a generative run directory says about rebuilding its model: the base model, its revision and the recipe."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.generative.recipe import GenerativeRecipe
from ragtruth_spans.detectors.recipes import read_run_recipe
from ragtruth_spans.models.hf_models import (
    check_safetensors,
    check_tokenizer_folder,
    is_local_reference,
    read_json_object,
    run_base_model,
)
from ragtruth_spans.models.tiny import BASE_MODEL_DIR
from ragtruth_spans.runs.run_info import read_run_info


@dataclass(frozen=True)
class ModelDir:
    """A generative run directory: the LoRA adapter, the tokenizer, ``recipe.yaml`` and ``run_info.json``."""

    path: Path
    base_model: str  # a local directory (``path/base_model`` for the tiny model) or a hub name / path
    revision: str | None
    recipe: GenerativeRecipe
    fingerprint: str | None = None  # of the run (run_info.json); None for runs written before fingerprints

    @property
    def load_in_4bit(self) -> bool:
        return self.recipe.quantization.enabled

    @property
    def max_length(self) -> int:
        return self.recipe.data.max_length

    @property
    def base_is_local(self) -> bool:
        """Whether the base model is a local folder (then nothing is fetched from the hub)."""
        return is_local_reference(self.base_model)

    @classmethod
    def read(cls, path: str | Path) -> ModelDir:
        """Read and check a run directory: ``recipe.yaml``, ``adapter_config.json``, the adapter weights, the
        tokenizer files and a local base model; anything missing or broken raises :class:`InputError` naming the
        file (no traceback, no hub lookup)."""
        path = Path(path)
        adapter_config = path / "adapter_config.json"
        if not adapter_config.is_file():
            raise InputError("not a trained detector directory (no adapter_config.json)", path=path)
        recipe = read_run_recipe(path)
        if not isinstance(recipe, GenerativeRecipe):
            raise InputError(f"the recipe is of kind {recipe.kind!r}, not a generative one", path=path)
        _check_adapter(path, read_json_object(adapter_config))
        check_tokenizer_folder(path)
        info = read_run_info(path)
        recorded = info.get("base_model") or {}
        base, revision = run_base_model(path / BASE_MODEL_DIR, recipe.model.name_or_path,
                                        recorded.get("resolved_revision") or recipe.model.revision,
                                        recipe.model.gguf_file, recorded.get("gguf"))
        return cls(path=path, base_model=base, revision=revision, recipe=recipe, fingerprint=info.get("fingerprint"))


def _check_adapter(path: Path, config: dict) -> None:
    where = path / "adapter_config.json"
    if not isinstance(config.get("peft_type"), str):
        raise InputError("missing or not a string", path=where, field="peft_type")
    if isinstance(config.get("r"), bool) or not isinstance(config.get("r"), int) or config["r"] < 1:
        raise InputError(f"must be a positive integer, got {config.get('r')!r}", path=where, field="r")
    weights = path / "adapter_model.safetensors"
    if not weights.is_file():
        raise InputError("the adapter weights are missing (adapter_model.safetensors)", path=path)
    check_safetensors(weights)
