"""Accountable recipes: every key of every shipped recipe either changes what the run does — the resolved recipe
that ``--dry-run`` prints and ``recipe.yaml`` records, and with it the run's fingerprint — or is refused with an
error naming the key and the family, or is one that the recipe's own switch turns off (``lora`` with
``finetuning: full``, ``model.tiny`` for a real model), which the resolved recipe leaves out and ``--dry-run``
names. Nothing a user sets is silently ignored."""

from __future__ import annotations

import copy
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.recipes import apply_overrides, read_run_recipe, validate_recipe
from ragtruth_spans.runs.run_dir import run_fingerprint
from ragtruth_spans.training.recipe import Recipe
from ragtruth_spans.training.recipe_files import RECIPES_DIR, read_recipe_data, resolve_recipe_path, shipped_recipes

REPO_RECIPES = Path(__file__).resolve().parents[2] / "recipes"

SPECIAL = {"members": [{"name": "numbers", "detector": "numbers"}], "data.eval_split": ["dev", "test", None],
           "model.name_or_path": ["tiny", "org/other-model"], "model.gguf_file": ["model.gguf"],
           "model.revision": ["0123abc"], "data.prepared_dir": ["elsewhere"], "data.split": ["other"],
           "logging.run_name": ["other"], "training.max_steps": [3], "data.extra": [["elsewhere"]],
           "target_modules": [["q_proj", "v_proj"], "all-linear"], "optim": ["adamw_torch", "sgd"]}
"""Alternative values where the generic rules below cannot guess a valid one."""


def leaves(model: type[BaseModel], value: Any, prefix: str = "") -> list[tuple[str, Any, Any]]:
    """``(dotted key, annotation, current value)`` of every leaf key of a section (the whole schema, not only the
    keys the recipe file writes)."""
    out = []
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        current = getattr(value, name) if value is not None else None
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel) and current is not None:
            out.extend(leaves(annotation, current, f"{key}."))
        else:
            out.append((key, annotation, current))
    return out


def alternatives(key: str, annotation: Any, current: Any) -> list[Any]:
    """Values other than ``current`` that the schema may accept, most plausible first."""
    if key in SPECIAL or key.rpartition(".")[2] in SPECIAL:
        values = SPECIAL.get(key, SPECIAL.get(key.rpartition(".")[2]))
        return [v for v in values if v != current]
    args = typing.get_args(annotation)
    literals = [a for arg in (annotation, *args) for a in typing.get_args(arg)
                if typing.get_origin(arg) is typing.Literal] + \
               (list(args) if typing.get_origin(annotation) is typing.Literal else [])
    out: list[Any] = [v for v in literals if v != current and not isinstance(v, type)]
    if isinstance(current, bool):
        out.append(not current)
    elif isinstance(current, int):
        out += [current + 1, current * 2, current + 64, current - 1]
    elif isinstance(current, float):
        out += [round(current * 0.5, 6), round(current + 0.01, 6), current + 1.0, 1.0, 0.5]
    elif isinstance(current, str):
        out.append(current + "-other")
    elif isinstance(current, list):
        out += [current[:-1], current[:1], [*current, *current[:1]], current[::-1]] if current else []
        if not current and "list[str]" in str(annotation):
            out.append(["q_proj"])
    elif current is None:
        out += [1, 0.5, "other", [], {}, ["q_proj"]]
    return [v for v in out if v != current] + ([None] if current is not None else [])


def dotted_set(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    node = data
    *path, last = key.split(".")
    for part in path:
        node = node.setdefault(part, {}) if isinstance(node.get(part), dict) or part not in node else node[part]
    node[last] = value
    return data


@cache
def recipe_data(name: str) -> dict[str, Any]:
    return read_recipe_data(resolve_recipe_path(name))


def resolved(name: str, change: tuple[str, Any] | None = None) -> Recipe:
    """The shipped recipe ``name``, with ``change = (dotted key, value)`` made to its file (a section the file
    leaves out starts as the resolved one, as a user copying ``--dry-run``'s output would write it)."""
    data = copy.deepcopy(recipe_data(name))
    if change is not None:
        section = change[0].split(".")[0]
        if "." in change[0] and section not in data:
            data[section] = copy.deepcopy(plan(name).get(section, {}))
        data = dotted_set(data, *change)
    return validate_recipe(data, source=name)


@cache
def plan(name: str) -> dict[str, Any]:
    return resolved(name).model_dump(mode="json")


SHIPPED = shipped_recipes()


def test_the_repository_recipes_are_the_packaged_ones() -> None:
    if not REPO_RECIPES.is_dir():
        pytest.skip("no recipes/ folder beside the package")
    for name in SHIPPED:
        assert (REPO_RECIPES / f"{name}.yaml").read_text() == (RECIPES_DIR / f"{name}.yaml").read_text(), name


@pytest.mark.parametrize("name", SHIPPED)
def test_every_key_changes_the_run_or_is_refused(name: str) -> None:
    base = resolved(name)
    base_fp, base_plan = run_fingerprint(base, [])["fingerprint"], plan(name)
    problems = []
    for key, annotation, current in leaves(type(base), base):
        if key in ("kind", "output_dir") or key.startswith("logging."):
            continue  # where and how the run reports (not fingerprinted by design), and the family itself
        outcome, errors = None, []
        for value in alternatives(key, annotation, current):
            try:
                changed = resolved(name, (key, value))
            except InputError as exc:
                if "not read by" in str(exc):
                    outcome = "refused"
                    assert f"not read by {base.kind} recipes" in str(exc), str(exc)
                    break
                errors.append(str(exc))
                continue  # not a valid value for this key: try the next one
            fp_changed = run_fingerprint(changed, [])["fingerprint"] != base_fp
            plan_changed = changed.model_dump(mode="json") != base_plan  # what --dry-run prints (to_yaml)
            outcome = "read" if fp_changed and plan_changed else "ignored"
            break
        if outcome is None and errors and all(key in e for e in errors):
            outcome = "coupled"  # every other value is refused by a rule naming the key (e.g. save_steps % eval_steps)
        if outcome is None:
            problems.append(f"{key}: no alternative value validates (add one to SPECIAL)")
        elif outcome == "ignored" and base.reads_key(key):
            problems.append(f"{key}: accepted, changes neither the fingerprint nor the resolved recipe")
    assert not problems, f"{name}:\n" + "\n".join(problems)


def test_the_stacked_family_declares_its_token_budget_unread() -> None:
    """The stacked family reads no token budget, so ``data.max_length`` is refused rather than silently kept."""
    assert not resolved("recommended-cpu").reads_key("data.max_length")


@pytest.mark.parametrize(("name", "override"), [
    ("all-minilm-l6-v2/similarity-overlap", "data.augment={}"),
    ("all-minilm-l6-v2/similarity-overlap", "data.max_length=512"),
    ("all-minilm-l6-v2/similarity-cosine", "data.split=train"),
    ("all-minilm-l6-v2/similarity-keywords", "data.clean_fraction=0.5"),
    ("all-minilm-l6-v2/similarity-hybrid", "data.max_examples=10"),
    ("all-minilm-l6-v2/two-tier", "model.dtype=bfloat16"),
    ("all-minilm-l6-v2/two-tier", "model.attn_implementation=eager"),
])
def test_an_unread_key_is_an_error_naming_key_and_family_in_dry_run(name: str, override: str) -> None:
    result = CliRunner().invoke(app, ["train", name, "--dry-run", "--set", override])
    assert result.exit_code == 2, result.output
    key = override.split("=")[0].rsplit(".", 1)[0] if override.startswith("model.tiny") else override.split("=")[0]
    kind = resolved(name).kind
    assert key in result.output and f"not read by {kind} recipes" in result.output
    assert "Traceback" not in result.output


def test_the_dry_run_plan_holds_only_keys_the_family_reads() -> None:
    result = CliRunner().invoke(app, ["train", "all-minilm-l6-v2/similarity-overlap", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "max_length" not in result.output and "augment" not in result.output and "prepared_dir" in result.output
    result = CliRunner().invoke(app, ["train", "tiny-cpu", "--dry-run", "--set", "model.name_or_path=org/model"])
    assert result.exit_code == 0, result.output
    assert "hidden_size" not in result.output.split("# not read")[0]
    assert "# not read with these settings (left out above): model.tiny" in result.output
    recipe = resolved("all-minilm-l6-v2/two-tier")
    dumped = recipe.model_dump()
    assert "dtype" not in dumped["model"] and "tiny" not in dumped["model"] and "augment" in dumped["data"]


def test_a_run_directory_written_before_keys_were_accountable_still_loads(tmp_path: Path) -> None:
    """Older versions wrote every key of the shared sections into recipe.yaml; they were never read, so a saved
    run still loads (and its resolved recipe drops them)."""
    data = apply_overrides(read_recipe_data(resolve_recipe_path("all-minilm-l6-v2/similarity-overlap")), [])
    data["data"] |= {"split": "train", "max_length": 4096, "clean_fraction": 1.0, "max_examples": None,
                     "augment": None, "seed": 0}
    (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(data))
    recipe = read_run_recipe(tmp_path)
    assert recipe.kind == "similarity" and "max_length" not in recipe.model_dump()["data"]
    with pytest.raises(InputError, match="data.max_length.*not read by similarity"):
        validate_recipe(data)
