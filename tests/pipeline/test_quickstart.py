"""The quickstart: the shipped detector on the README's examples, its evaluation on the sample, the training path,
the leaderboard — end to end from another directory, as a user runs it (piped, 80 columns), then reused."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.pipeline.quickstart import (
    DEFAULT_WORKDIR,
    LEADERBOARD_DETECTORS,
    README_EXAMPLES,
    RECOMMENDED_LABEL,
    SHIPPED_LABEL,
    TOTAL_STEPS,
    QuickstartPaths,
    leaderboard_table,
    quickstart_console,
    run_quickstart,
)

REPO = Path(__file__).resolve().parents[2]


def test_the_examples_are_the_readmes() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for example in README_EXAMPLES:
        for key in ("context", "response", "question"):
            if key in example:
                assert example[key] in readme, (key, example[key])


def test_piped_output_takes_the_width_of_COLUMNS(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert quickstart_console(file=io.StringIO()).width == 80
    monkeypatch.delenv("COLUMNS")
    assert quickstart_console(file=io.StringIO()).width == 80  # the default through a pipe
    monkeypatch.setenv("COLUMNS", "132")
    assert quickstart_console(file=io.StringIO()).width == 132


def _payload() -> dict:
    report = {"overall": {"span": {"precision": 0.5, "recall": 0.5, "f1": 0.5}, "response": {"f1": 0.6},
                          "response_macro": {"f1": 0.55}, "auroc": 0.7},
              "ci": {"overall": {"span": {"f1": [0.2, 0.7]}, "response": {"f1": [0.4, 0.8]}}}}
    detector = {"thresholds": {"*": 0.0625, "QA": 0.1125, "Summary": 0.025, "Data2txt": 0.05}}
    return {"responses": 22, "detectors": [
        {"label": label, "detector": detector, "report": report, "throughput": {"responses_per_second": 90.6}}
        for label in (SHIPPED_LABEL, RECOMMENDED_LABEL, *LEADERBOARD_DETECTORS)]}


def test_the_leaderboard_fits_80_columns() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=80)
    console.print(leaderboard_table(_payload(), compact=True))
    lines = buffer.getvalue().splitlines()
    assert max(map(len, lines)) <= 80 and any(SHIPPED_LABEL in line for line in lines)
    assert any("0.500 [0.200, 0.700]" in line for line in lines)  # span F1 and its interval, never cut


@pytest.mark.slow
def test_quickstart_end_to_end_piped_at_80_columns_then_reused(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                                                      os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "ragtruth_spans", "quickstart"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout + result.stderr
    lines = out.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)  # no line wider than the "terminal"
    assert "\x1b" not in out and "\r" not in out and len(lines) < 120
    for number in range(1, TOTAL_STEPS + 1):
        assert f"step {number}/{TOTAL_STEPS}" in out

    workdir = tmp_path / DEFAULT_WORKDIR
    examples = [json.loads(line) for line in (workdir / "examples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["response"] for e in examples] == [e["response"] for e in README_EXAMPLES]
    assert [s["text"] for s in examples[0]["spans"]] == ["1998"]  # the changed year, by the shipped detector
    test = read_records(workdir / "data" / "test.jsonl")
    assert test and {r.task_type for r in test} == {"QA", "Summary", "Data2txt"}
    rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in test)
    saved = json.loads((workdir / "report.json").read_text(encoding="utf-8"))
    assert saved["overall"]["responses"] == len(test)
    assert json.loads((workdir / "recommended-cpu" / "run_info.json").read_text())["kind"] == "stacked"
    board = json.loads((workdir / "leaderboard" / "leaderboard.json").read_text(encoding="utf-8"))
    assert {e["label"] for e in board["detectors"]} == {SHIPPED_LABEL, RECOMMENDED_LABEL, *LEADERBOARD_DETECTORS}
    shipped = next(e for e in board["detectors"] if e["label"] == SHIPPED_LABEL)
    assert shipped["report"]["overall"] == saved["overall"]  # the same detector, the same figures
    html = (workdir / "report.html").read_text(encoding="utf-8")
    assert 'id="report-data"' in html and html.index(SHIPPED_LABEL) < html.index(RECOMMENDED_LABEL)
    predicted = {p.name: p.read_bytes() for p in (workdir / "leaderboard" / "predictions").glob("*.jsonl")}
    assert len(predicted) == 2 + len(LEADERBOARD_DETECTORS)

    console = Console(record=True, width=80)
    run_quickstart(workdir, console=console)
    again = console.export_text()
    assert again.count("reusing") == 2 and f"0 responses detected ({len(test)} already done)" in again
    assert json.loads((workdir / "report.json").read_text(encoding="utf-8")) == saved
    assert {p.name: p.read_bytes() for p in (workdir / "leaderboard" / "predictions").glob("*.jsonl")} == predicted


def test_fresh_removes_only_quickstart_outputs(tmp_path: Path) -> None:
    from ragtruth_spans.pipeline.quickstart import _remove_outputs

    paths = QuickstartPaths(tmp_path)
    (paths.data).mkdir()
    (paths.data / "train.jsonl").write_text("", encoding="utf-8")
    paths.predictions.write_text("", encoding="utf-8")
    paths.examples.write_text("", encoding="utf-8")
    keep = tmp_path / "notes.txt"
    keep.write_text("mine", encoding="utf-8")
    _remove_outputs(paths, Console(record=True))
    assert not paths.data.exists() and not paths.predictions.exists() and not paths.examples.exists()
    assert keep.read_text(encoding="utf-8") == "mine"
