"""Adding a detector family takes its module and one registration: the loader, `train` and `predict` → `evaluate`
then work with it like with the shipped families."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors import family as registry
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.family import Family, register_family
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.detectors.rules import numbers_in
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.recipe import Recipe
from ragtruth_spans.training.run import TrainResult


class LongNumberRecipe(Recipe):
    """A 'trainable' rule: flag numbers of at least ``min_digits`` digits that the context lacks."""

    kind: Literal["long-numbers"] = "long-numbers"
    min_digits: int = 2


class LongNumberDetector(Detector):
    kind = "long-numbers"

    def __init__(self, min_digits: int) -> None:
        self.min_digits = min_digits

    def detect_batch(self, items):
        results = []
        for item in map(DetectItem.of, items):
            known = {value for _, _, value in numbers_in(item.context)}
            spans = [Span(a, b, type="Evident Conflict", score=1.0) for a, b, value in numbers_in(item.response)
                     if value not in known and len(value.replace(".", "")) >= self.min_digits]
            results.append(Detection(spans=spans, score=float(bool(spans))))
        return results

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "min_digits": self.min_digits}


def _train(recipe: LongNumberRecipe, *, resume=False, fingerprint=None) -> TrainResult:
    out = Path(recipe.output_dir)
    write_run_files(out, recipe, {"min_digits": recipe.min_digits}, fingerprint=fingerprint, trained_on=None)
    return TrainResult(output_dir=out, stats=None, metrics={}, resumed_from=None)


def _load(run_dir: Path, **options) -> Detector:
    info = json.loads((Path(run_dir) / "run_info.json").read_text())
    return LongNumberDetector(info["min_digits"])


@pytest.fixture()
def long_numbers_family(monkeypatch):
    monkeypatch.setattr(registry, "_registered", {})
    register_family(Family(kind="long-numbers", summary="test family", load=_load, recipe=LongNumberRecipe,
                           train=_train, named={"long-numbers": lambda **o: LongNumberDetector(2)}))
    yield


def test_a_registered_family_trains_loads_predicts_and_evaluates(long_numbers_family, sample_test_file, tmp_path):
    data, records = sample_test_file
    recipe_file = tmp_path / "long.yaml"
    recipe_file.write_text(f"kind: long-numbers\nmin_digits: 4\noutput_dir: {tmp_path / 'run'}\n")
    runner = CliRunner()
    trained = runner.invoke(app, ["train", str(recipe_file)])
    assert trained.exit_code == 0, trained.output
    assert json.loads((tmp_path / "run" / "run_info.json").read_text())["kind"] == "long-numbers"
    detector = load_detector(tmp_path / "run")
    assert isinstance(detector, LongNumberDetector) and detector.min_digits == 4

    out = tmp_path / "pred.jsonl"
    predicted = runner.invoke(app, ["predict", "--model", str(tmp_path / "run"), "--data", str(data), "--out",
                                    str(out)])
    assert predicted.exit_code == 0, predicted.output
    report = tmp_path / "report.json"
    evaluated = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", str(out), "--json", str(report)])
    assert evaluated.exit_code == 0, evaluated.output
    result = json.loads(report.read_text())
    expected = detector.detect_batch(records)
    assert result["counts"]["predicted_spans"] == sum(len(d.spans) for d in expected)
    assert result["settings"]["auroc_scores"] == "response"
    # the recipe schema now knows the kind; its keys are checked like any other
    assert load_recipe(recipe_file, ["min_digits=3"]).min_digits == 3
    with pytest.raises(InputError, match="unknown recipe key 'max_digits'"):
        load_recipe(recipe_file, ["max_digits=3"])


def test_the_loader_names_what_it_knows(tmp_path):
    assert {"numbers", "flag-all", "flag-none"} <= set(registry.named_detectors())
    with pytest.raises(InputError, match=r"neither a run directory nor a detector name \(names: .*numbers"):
        load_detector(tmp_path / "nothing-here")
    run = tmp_path / "run"
    run.mkdir()
    (run / "run_info.json").write_text('{"kind": "quantum"}')
    with pytest.raises(InputError, match="unknown detector kind 'quantum'"):
        load_detector(run)
    with pytest.raises(InputError, match="option.*device.*do not apply to a rule-based detector"):
        load_detector("numbers", device="cpu")
