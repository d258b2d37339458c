"""``--quiet`` on every command: the results on stdout (tables, JSON lines, the train summary), nothing on stderr
(no note, no step line, no progress bar); without it the notes are records on stderr. ``serve`` (a server's
time-stamped log, tests/serving) and ``quickstart`` (a walkthrough, tests/pipeline/test_quickstart.py) have their
own tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.jsonl import read_records

runner = CliRunner()


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("quiet")
    result = runner.invoke(app, ["--quiet", "prepare", "--sample", "--out", str(root / "data"), "--dev-per-task", "1"])
    assert result.exit_code == 0, result.output
    records = read_records(root / "data" / "test.jsonl")
    (root / "mine.jsonl").write_text("".join(json.dumps({"context": r.context, "response": r.response,
                                                         "spans": [{"start": s.start, "end": s.end}
                                                                   for s in r.spans]}) + "\n"
                                             for r in records), encoding="utf-8")
    (root / "candidates.jsonl").write_text('{"response": "It opened in 1998."}\n{"response": "It opened in 1999."}\n',
                                           encoding="utf-8")
    (root / "recipe.yaml").write_text(yaml.safe_dump({
        "kind": "stacked", "features": {"encoder": None}, "members": [{"name": "numbers", "detector": "numbers"}],
        "data": {"prepared_dir": str(root / "data"), "eval_split": "dev"}, "output_dir": str(root / "run")}))
    return root


def commands(root: Path) -> list[tuple[str, list[str]]]:
    """Every command but serve and quickstart, in pipeline order (predict before those that read its file)."""
    data, pred = root / "data", root / "pred.jsonl"
    by_source: dict[str, set[str]] = {}
    for record in read_records(data / "test.jsonl"):
        by_source.setdefault(record.source_id, set()).add(record.model)
    models = ",".join(sorted(max(by_source.values(), key=len))[:2])  # two models that answered one source
    return [
        ("prepare", ["prepare", "--sample", "--out", str(root / "again"), "--dev-per-task", "1"]),
        ("augment", ["augment", "--data", str(data / "train.jsonl"), "--out", str(root / "augmented.jsonl")]),
        ("import", ["import", "jsonl", "--in", str(root / "mine.jsonl"), "--out", str(root / "imported")]),
        ("train", ["train", str(root / "recipe.yaml")]),
        ("predict", ["predict", "--model", "numbers", "--data", str(data / "test.jsonl"), "--out", str(pred)]),
        ("detect", ["detect", "--model", "numbers", "--context", "It opened in 1999.", "--response",
                    "It opened in 1998.", "--task", "Summary"]),
        ("evaluate", ["evaluate", "--gold", str(data / "test.jsonl"), "--pred", str(pred), "--bootstrap", "0"]),
        ("benchmark", ["benchmark", "--gold", str(data / "test.jsonl"), "--detectors", "numbers,flag-all",
                       "--out", str(root / "bench"), "--bootstrap", "0"]),
        ("report", ["report", "--gold", str(data / "test.jsonl"), "--pred", str(pred), "--out",
                    str(root / "report.html"), "--bootstrap", "0"]),
        ("select", ["select", "--gold", str(data / "test.jsonl"), "--pred", str(pred), "--models", models,
                    "--bootstrap", "0"]),
        ("select-best", ["select-best", "--model", "numbers", "--context", "It opened in 1999.", "--candidates",
                         str(root / "candidates.jsonl"), "--task", "Summary"]),
    ]


def test_quiet_prints_results_only_on_every_command(work: Path) -> None:
    for name, args in commands(work):
        result = runner.invoke(app, ["--quiet", *args])
        assert result.exit_code == 0, (name, result.output)
        assert result.stderr == "", (name, result.stderr)
    assert (work / "run" / "run_info.json").is_file() and (work / "report.html").is_file()


def test_without_quiet_the_notes_are_records_on_stderr(work: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["predict", "--model", "flag-none", "--data", str(work / "data" / "test.jsonl"),
                                 "--out", str(tmp_path / "pred.jsonl")])
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and "predicting with flag-none" in result.stderr
    assert all(line and not line.startswith(" ") for line in result.stderr.splitlines())  # whole lines, not wrapped
