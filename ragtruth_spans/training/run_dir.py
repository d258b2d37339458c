"""The run directory that ``ragtruth-spans train`` writes, as every family shares it.

``<output_dir>/recipe.yaml`` is the resolved recipe and ``<output_dir>/run_info.json`` the run's metadata: its
``kind`` (the detector family, which :func:`ragtruth_spans.load_detector` dispatches on), the base model, the
training data and its hashes, library versions and training metrics. Families add their own files (weights,
tokenizer, thresholds).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import yaml

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.training.recipe import DEFAULT_KIND, Recipe, validate_recipe

RUN_INFO_FILE = "run_info.json"
RECIPE_FILE = "recipe.yaml"
LIBRARIES = ("torch", "transformers", "peft", "trl", "bitsandbytes", "accelerate", "datasets", "tokenizers",
             "sentence-transformers", "ragtruth-spans")


def read_run_info(run_dir: str | Path) -> dict[str, Any]:
    """``run_info.json`` of a run directory (``{}`` when the file does not exist); bad JSON is an
    :class:`InputError` naming the file."""
    path = Path(run_dir) / RUN_INFO_FILE
    if not path.is_file():
        return {}
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid JSON ({exc})", path=path) from None
    if not isinstance(info, dict):
        raise InputError("expected a JSON object", path=path)
    return info


def run_kind(run_dir: str | Path) -> str:
    """The detector family of a run directory: ``run_info.json``'s ``kind``, else the recipe's, else
    ``generative`` (runs written before detectors had kinds)."""
    info = read_run_info(run_dir)
    if isinstance(info.get("kind"), str):
        return info["kind"]
    recipe = Path(run_dir) / RECIPE_FILE
    if recipe.is_file():
        try:
            data = yaml.safe_load(recipe.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("kind"), str):
            return data["kind"]
    return DEFAULT_KIND


def read_run_recipe(run_dir: str | Path) -> Recipe:
    """The resolved recipe saved in a run directory; a missing or invalid file is an :class:`InputError`."""
    path = Path(run_dir) / RECIPE_FILE
    if not path.is_file():
        raise InputError("file not found (the training run writes it into its output directory)", path=path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    return validate_recipe(data, source=str(path))


def library_versions() -> dict[str, str]:
    """Installed versions of the libraries that shape a run ("not installed" when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str] = {}
    for name in LIBRARIES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def write_run_files(output_dir: str | Path, recipe: Recipe, info: dict[str, Any]) -> dict[str, Any]:
    """Write ``recipe.yaml`` (the resolved recipe) and ``run_info.json`` (``kind``, ``created``, the family's
    ``info`` and the library versions) into ``output_dir``; return the run info written."""
    from ragtruth_spans.core.jsonl import write_json

    output_dir = Path(output_dir)
    (output_dir / RECIPE_FILE).write_text(recipe.to_yaml(), encoding="utf-8")
    run_info = {"kind": recipe.kind, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **info,
                "libraries": library_versions()}
    write_json(output_dir / RUN_INFO_FILE, run_info)
    return run_info
