"""Without ``--model`` (or with ``--model default``), every command that loads a detector uses the shipped one;
``benchmark --detectors default`` ranks it; a run directory named ``default`` still loads as a run directory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.cli.common import model_label, resolve_model
from ragtruth_spans.detectors.shipped import DEFAULT_DIR

runner = CliRunner()
CONTEXT = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms."
CHANGED = "The Grand Hotel opened in 1998 and has 120 rooms."


@pytest.mark.parametrize("command", ["detect", "predict", "select-best", "serve"])
def test_model_is_optional(command: str) -> None:
    click_command = typer.main.get_command(app).commands[command]
    [option] = [p for p in click_command.params if "--model" in p.opts]
    assert not option.required and option.default is None and "shipped with the package" in option.help


def test_the_model_value_resolves_to_the_shipped_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_model(None) == resolve_model("default") == str(DEFAULT_DIR)
    assert resolve_model("numbers") == "numbers" and model_label(None) == "the shipped detector (default)"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "default").mkdir()
    assert resolve_model("default") == "default"  # the user's directory, as before


def test_benchmark_names_the_shipped_detector_default() -> None:
    from ragtruth_spans.pipeline.benchmark import parse_detectors

    specs = parse_detectors("default,numbers,default[threshold=0.3]")
    assert [(s.label, s.source) for s in specs] == [("default", str(DEFAULT_DIR)), ("numbers", "numbers"),
                                                    ("default[threshold=0.3]", str(DEFAULT_DIR))]


@pytest.mark.parametrize("model", [[], ["--model", "default"]])
def test_detect_without_a_model_flags_the_changed_number(model: list[str]) -> None:
    result = runner.invoke(app, ["detect", *model, "--context", CONTEXT, "--question", "When did it open?",
                                 "--response", CHANGED, "--output", "json"])
    assert result.exit_code == 0, result.output
    [row] = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [s["text"] for s in row["spans"]] == ["1998"] and 0.0 < row["score"] <= 1.0
