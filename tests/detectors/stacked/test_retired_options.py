"""Options removed from the stacked recipe because they measured no gain (``features.lm``, ``combiner.monotone``,
``combiner.supported_positive_weight``, ``combiner.additive_priors``, ``decision.balanced``): a recipe or a run that
sets one to the behaviour kept loads as before (same resolved recipe, same fingerprint); any other value is refused
in one line naming the option."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256
from ragtruth_spans.detectors.recipes import read_finished_run, validate_recipe
from ragtruth_spans.detectors.shipped import DEFAULT_DIR
from ragtruth_spans.detectors.stacked.recipe import RETIRED, StackedRecipe
from ragtruth_spans.runs.manifest import content_fingerprint
from ragtruth_spans.runs.run_dir import run_fingerprint

OTHER = {"lm": {"model": "smollm2-135m-instruct"}, "monotone": True, "supported_positive_weight": 0.25,
         "additive_priors": True, "balanced": True}
"""A value of each retired option that the code no longer has."""
CASES = [(section, key) for section, keys in RETIRED.items() for key in keys]


def _shipped() -> dict:
    return yaml.safe_load((DEFAULT_DIR / "recipe.yaml").read_text(encoding="utf-8"))


def _with(section: str, key: str, value: object) -> dict:
    data = _shipped()
    data[section][key] = value
    return data


@pytest.mark.parametrize(("section", "key"), CASES)
def test_a_retired_option_at_the_kept_behaviour_loads_as_before(section: str, key: str) -> None:
    before = validate_recipe(_shipped(), saved_run=True)
    old = validate_recipe(_with(section, key, RETIRED[section][key]), saved_run=True)
    assert old.to_yaml() == before.to_yaml()
    assert run_fingerprint(old, []) == run_fingerprint(before, [])
    assert key not in old.model_dump(mode="json")[section]


@pytest.mark.parametrize(("section", "key"), CASES)
def test_a_retired_option_at_another_value_is_refused_naming_it(section: str, key: str) -> None:
    with pytest.raises(InputError) as error:
        validate_recipe(_with(section, key, OTHER[key]), source="old.yaml")
    message = str(error.value)
    assert f"{section}: {key} was removed (it measured no gain)" in message and "\n" not in message
    assert "old.yaml" in message and "retrain without it" in message


def test_a_boolean_is_not_the_kept_weight() -> None:
    with pytest.raises(InputError, match="supported_positive_weight was removed"):
        validate_recipe(_with("combiner", "supported_positive_weight", True))


def _run_with(tmp_path: Path, section: str, key: str, value: object) -> Path:
    """A copy of the shipped run whose recipe.yaml sets ``section.key`` (its manifest and fingerprint updated, as
    a run written by a version that had the option)."""
    run = tmp_path / "run"
    shutil.copytree(DEFAULT_DIR, run)
    recipe = yaml.safe_load((run / "recipe.yaml").read_text(encoding="utf-8"))
    recipe[section][key] = value
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
    info = json.loads((run / "run_info.json").read_text(encoding="utf-8"))
    info["files_sha256"]["recipe.yaml"] = file_sha256(run / "recipe.yaml")
    info["fingerprint"] = content_fingerprint(info)
    (run / "run_info.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
    return run


def test_a_run_written_with_the_kept_value_loads(tmp_path: Path) -> None:
    run = _run_with(tmp_path, "combiner", "monotone", False)
    recipe, info = read_finished_run(run, StackedRecipe, "decision", dict)
    shipped, _ = read_finished_run(DEFAULT_DIR, StackedRecipe, "decision", dict)
    assert recipe.to_yaml() == shipped.to_yaml() and info["decision"]


def test_a_run_trained_with_a_removed_option_is_refused_on_load(tmp_path: Path) -> None:
    from ragtruth_spans.detectors.loader import load_detector

    run = _run_with(tmp_path, "combiner", "monotone", True)
    with pytest.raises(InputError, match=r"combiner: monotone was removed .*retrain without it"):
        load_detector(run)
