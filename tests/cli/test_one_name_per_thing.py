"""One name per thing across commands: the gold file is ``--gold`` in every command that scores (``--data``, its
old name in ``benchmark`` and ``select``, still works for a release, hidden, with a note), and ``--bootstrap`` has
one default and one help."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.cli.common import DEFAULT_BOOTSTRAP
from ragtruth_spans.pipeline.predict import predict_file

SCORING = ("evaluate", "report", "benchmark", "select")


def _params(name: str) -> dict[str, object]:
    command = typer.main.get_command(app).commands[name]
    return {opt: param for param in command.params for opt in param.opts}


def test_every_scoring_command_takes_gold_and_one_bootstrap_default() -> None:
    from ragtruth_spans.pipeline.benchmark import DEFAULT_BOOTSTRAP as PIPELINE_DEFAULT

    params = {name: _params(name) for name in SCORING}
    assert all("--gold" in options for options in params.values())
    assert {options["--bootstrap"].default for options in params.values()} == {DEFAULT_BOOTSTRAP} == {
        PIPELINE_DEFAULT}
    assert len({options["--bootstrap"].help for options in params.values()}) == 1
    for name in ("benchmark", "select"):
        assert params[name]["--data"].hidden
        help_text = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "400"}).output
        assert "--gold" in help_text and "--data" not in help_text


@pytest.fixture
def scored(sample_test_file, tmp_path: Path) -> tuple[Path, Path]:
    data, _ = sample_test_file
    pred = tmp_path / "pred.jsonl"
    predict_file("numbers", data, pred, progress=False)
    return data, pred


def _commands(data: Path, pred: Path, tmp_path: Path, flag: str) -> dict[str, list[str]]:
    return {"select": ["select", flag, str(data), "--pred", str(pred), "--models", "gpt-4-0613,llama-2-7b-chat",
                       "--bootstrap", "0", "--json", str(tmp_path / f"select{flag}.json")],
            "benchmark": ["benchmark", flag, str(data), "--detectors", "numbers", "--bootstrap", "0",
                          "--out", str(tmp_path / f"bench{flag}")]}


def test_gold_and_its_old_name_data_give_the_same_result(scored, tmp_path: Path) -> None:
    data, pred = scored
    runs = {flag: {name: CliRunner().invoke(app, args) for name, args in _commands(data, pred, tmp_path, flag).items()}
            for flag in ("--gold", "--data")}
    for flag, results in runs.items():
        for name, result in results.items():
            assert result.exit_code == 0, (flag, name, result.output)
            assert ("--data is deprecated" in result.output) == (flag == "--data"), (flag, name)
    selections = [json.loads((tmp_path / f"select{flag}.json").read_text()) for flag in ("--gold", "--data")]
    assert selections[0] == selections[1]
    boards = [json.loads((tmp_path / f"bench{flag}" / "leaderboard.json").read_text()) for flag in ("--gold", "--data")]
    reports = [board["detectors"][0]["report"] for board in boards]
    assert reports[0]["overall"] == reports[1]["overall"] and reports[0]["by_task"] == reports[1]["by_task"]


@pytest.mark.parametrize("name", ["select", "benchmark"])
def test_gold_and_data_together_or_neither_is_one_line_exit_2(scored, tmp_path: Path, name: str) -> None:
    data, pred = scored
    both = _commands(data, pred, tmp_path, "--gold")[name] + ["--data", str(data)]
    neither = [arg for arg in _commands(data, pred, tmp_path, "--gold")[name] if arg not in ("--gold", str(data))]
    for args, message in ((both, "field '--data': --data is the old name of --gold: give one"),
                          (neither, "field '--gold': missing: give the labelled file with --gold")):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 2, result.output
        assert result.output.strip().splitlines() == [f"error: {message}"]
