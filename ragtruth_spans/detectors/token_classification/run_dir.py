"""Reading a token-classification run directory back into a detector (the family's ``load``).

``run_info.json`` carries ``detection``: the threshold (tuned on the eval split, or the recipe's, or 0.5), the
aggregation and the edge rule the run was tuned with. Load options override them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.recipes import read_run_recipe
from ragtruth_spans.detectors.token_classification.detector import DEFAULT_THRESHOLD, TokenClassificationDetector
from ragtruth_spans.detectors.token_classification.model import load_tokenizer, load_trained
from ragtruth_spans.detectors.token_classification.recipe import TokenClassificationRecipe
from ragtruth_spans.detectors.token_classification.windows import WindowSettings
from ragtruth_spans.models.hf_models import (
    check_model_folder,
    check_safetensors,
    check_tokenizer_folder,
    run_base_model,
)
from ragtruth_spans.models.tiny import BASE_MODEL_DIR
from ragtruth_spans.runs.run_info import FINGERPRINT_FILE, read_run_info


def window_settings(recipe: TokenClassificationRecipe) -> WindowSettings:
    w = recipe.windows
    return WindowSettings(max_length=recipe.data.max_length, context_overlap=w.context_overlap,
                          min_context_tokens=w.min_context_tokens, response_overlap=w.response_overlap)


def read_recipe(path: Path) -> TokenClassificationRecipe:
    recipe = read_run_recipe(path)
    if not isinstance(recipe, TokenClassificationRecipe):
        raise InputError(f"the recipe is of kind {recipe.kind!r}, not a token-classification one", path=path)
    return recipe


def _check_weights(path: Path, recipe: TokenClassificationRecipe) -> None:
    if recipe.finetuning == "full":
        if not (path / "config.json").is_file():
            raise InputError("not a trained token classifier (no config.json)", path=path)
        check_model_folder(path, what="trained model")
        if not any(path.glob("*.safetensors")):
            raise InputError("the model weights are missing (no *.safetensors)", path=path)
    else:
        if not (path / "adapter_config.json").is_file():
            raise InputError("not a trained token classifier (no adapter_config.json)", path=path)
        weights = path / "adapter_model.safetensors"
        if not weights.is_file():
            raise InputError("the adapter weights are missing (adapter_model.safetensors)", path=path)
        check_safetensors(weights)
    check_tokenizer_folder(path)


def base_model_of(path: Path, recipe: TokenClassificationRecipe, info: dict[str, Any]) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the base a LoRA run was trained on."""
    recorded = info.get("base_model") or {}
    return run_base_model(path / BASE_MODEL_DIR, recipe.model.name_or_path,
                          recorded.get("resolved_revision") or recipe.model.revision, recipe.model.gguf_file,
                          recorded.get("gguf"))


def load_run(path: str | Path, *, device: str | None = None, batch_size: int = 16, threshold: float | None = None,
             aggregation: str | None = None, span_edges: str | None = None,
             load_in_4bit: bool | None = None) -> TokenClassificationDetector:
    """The detector of a finished run directory; options override the run's detection settings."""
    import torch

    path = Path(path)
    info = read_run_info(path)
    if not info:
        if (path / FINGERPRINT_FILE).is_file():
            raise InputError("the run is not finished (no run_info.json); train it to the end first", path=path)
        raise InputError("not a trained detector directory (no run_info.json)", path=path)
    recipe = read_recipe(path)
    _check_weights(path, recipe)
    base, revision = (str(path), None) if recipe.finetuning == "full" else base_model_of(path, recipe, info)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    tokenizer = load_tokenizer(str(path))
    model = load_trained(path, recipe, base, revision, device=device, load_in_4bit=load_in_4bit)
    saved = info.get("detection") or {}
    return TokenClassificationDetector(
        model, tokenizer, scheme=recipe.labels.scheme, windows=window_settings(recipe),
        threshold=threshold if threshold is not None else saved.get("threshold", DEFAULT_THRESHOLD),
        aggregation=aggregation or saved.get("aggregation", recipe.detection.aggregation),
        span_edges=span_edges or saved.get("span_edges", recipe.detection.span_edges), batch_size=batch_size,
        run_info={"run_dir": str(path), "fingerprint": info.get("fingerprint")})
