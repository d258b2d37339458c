"""What a generative run directory says about rebuilding its model: the base model, its revision and the recipe."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.generative.recipe import GenerativeRecipe
from ragtruth_spans.training.recipe import TINY
from ragtruth_spans.training.run_dir import read_run_recipe

BASE_MODEL_DIR = "base_model"
"""Where a run built on the tiny random model keeps that model (it exists nowhere else)."""


@dataclass(frozen=True)
class ModelDir:
    """A generative run directory: the LoRA adapter, the tokenizer, ``recipe.yaml`` and ``run_info.json``."""

    path: Path
    base_model: str  # a local directory (``path/base_model`` for the tiny model) or a hub name / path
    revision: str | None
    recipe: GenerativeRecipe

    @property
    def load_in_4bit(self) -> bool:
        return self.recipe.quantization.enabled

    @property
    def max_length(self) -> int:
        return self.recipe.data.max_length

    @classmethod
    def read(cls, path: str | Path) -> ModelDir:
        """Read and validate ``path/recipe.yaml``; a missing file or bad key raises :class:`InputError`."""
        path = Path(path)
        if not (path / "adapter_config.json").is_file():
            raise InputError("not a trained detector directory (no adapter_config.json)", path=path)
        recipe = read_run_recipe(path)
        if not isinstance(recipe, GenerativeRecipe):
            raise InputError(f"the recipe is of kind {recipe.kind!r}, not a generative one", path=path)
        if (path / BASE_MODEL_DIR / "config.json").is_file():
            return cls(path=path, base_model=str(path / BASE_MODEL_DIR), revision=None, recipe=recipe)
        if recipe.model.name_or_path == TINY:
            raise InputError("the tiny base model should be saved under base_model/ but is missing",
                             path=path / BASE_MODEL_DIR)
        return cls(path=path, base_model=recipe.model.name_or_path, revision=recipe.model.revision, recipe=recipe)
