"""The quickstart pipeline end to end (few training steps, short generations), run from another directory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.pipeline.quickstart import (
    DEFAULT_WORKDIR,
    RECOMMENDED_LABEL,
    TOKEN_CLS_RECIPE,
    TOTAL_STEPS,
    QuickstartPaths,
    run_quickstart,
)


@pytest.mark.slow
def test_quickstart_runs_every_step_then_reuses_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # any working directory: nothing may depend on the repository checkout
    console = Console(record=True, width=140)
    report = run_quickstart(max_steps=3, max_new_tokens=24, console=console, token_max_steps=2)
    out = console.export_text()

    workdir = tmp_path / DEFAULT_WORKDIR
    for number in range(1, TOTAL_STEPS + 1):
        assert f"step {number}/{TOTAL_STEPS}" in out
    test = read_records(workdir / "data" / "test.jsonl")
    assert test and {r.task_type for r in test} == {"QA", "Summary", "Data2txt"}
    assert (workdir / "model" / "adapter_model.safetensors").is_file()
    assert (workdir / "model" / "recipe.yaml").is_file() and (workdir / "model" / "base_model").is_dir()
    rows = [json.loads(line) for line in (workdir / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in test)
    assert all("raw" in r and "parse_ok" in r for r in rows)
    saved = json.loads((workdir / "report.json").read_text(encoding="utf-8"))
    assert saved["overall"]["responses"] == len(test) == report.overall["responses"]
    assert f"{len(test)} responses detected (0 already done)" in out
    html = (workdir / "report.html").read_text(encoding="utf-8")
    assert "HTML report: " in out and str(workdir / "report.html") in out.replace("\n", "")
    assert 'id="report-data"' in html and all(f'"id": "{r.id}"' in html for r in test)
    board = json.loads((workdir / "leaderboard" / "leaderboard.json").read_text(encoding="utf-8"))
    labels = {RECOMMENDED_LABEL, "tiny-cpu", TOKEN_CLS_RECIPE, "numbers", "sim-overlap", "flag-all"}
    assert {e["label"] for e in board["detectors"]} == labels
    assert (workdir / "leaderboard" / "leaderboard.md").is_file() and re.search(r"│ \d │ flag-all +│", out)
    lines = out.splitlines()
    assert len(lines) < 100 and max(map(len, lines)) <= 200 and "\x1b" not in out and "\r" not in out
    info = json.loads((workdir / "token-cls" / "run_info.json").read_text(encoding="utf-8"))
    assert info["kind"] == "token-classification" and info["detection"]["tuned"]
    assert info["data"]["source"].endswith("train.jsonl") and info["data"]["eval"]["split"] == "dev"
    assert info["base_model"]["name_or_path"] == "sentence-transformers/all-MiniLM-L6-v2"
    token_file = workdir / "leaderboard" / "predictions" / "all-minilm-l6-v2_token-cls.jsonl"
    rows = [json.loads(line) for line in token_file.read_text(encoding="utf-8").splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(r.id for r in test)
    assert all(r["windows"] >= 1 and 0.0 <= r["score"] <= 1.0 for r in rows)
    token_entry = next(e for e in board["detectors"] if e["label"] == TOKEN_CLS_RECIPE)
    token_overall = token_entry["report"]["overall"]
    assert token_overall["responses"] == len(test) and token_overall["auroc"] is not None

    assert not list((workdir / "token-cls").glob("checkpoint-*"))  # only the final weights are kept
    assert json.loads((workdir / "recommended-cpu" / "run_info.json").read_text())["kind"] == "stacked"
    recommended = next(e for e in board["detectors"] if e["label"] == RECOMMENDED_LABEL)
    rows = [json.loads(line) for line in Path(recommended["predictions"]).read_text(encoding="utf-8").splitlines()]
    assert sum(len(r["spans"]) for r in rows) > 0  # the report shows a detector that flags something
    assert html.index(RECOMMENDED_LABEL) < html.index(TOKEN_CLS_RECIPE)  # the report shows it first

    predicted = {p.name: p.read_bytes() for p in (workdir / "leaderboard" / "predictions").glob("*.jsonl")}
    assert len(predicted) == len(labels)
    console = Console(record=True, width=140)
    run_quickstart(max_steps=3, max_new_tokens=24, console=console, token_max_steps=2)
    again = console.export_text()
    assert again.count("reusing") == 4 and f"0 responses detected ({len(test)} already done)" in again
    assert json.loads((workdir / "report.json").read_text(encoding="utf-8")) == saved
    assert {p.name: p.read_bytes() for p in (workdir / "leaderboard" / "predictions").glob("*.jsonl")} == predicted


def test_fresh_removes_only_quickstart_outputs(tmp_path: Path) -> None:
    from ragtruth_spans.pipeline.quickstart import _remove_outputs

    paths = QuickstartPaths(tmp_path)
    (paths.data).mkdir()
    (paths.data / "train.jsonl").write_text("", encoding="utf-8")
    paths.predictions.write_text("", encoding="utf-8")
    keep = tmp_path / "notes.txt"
    keep.write_text("mine", encoding="utf-8")
    _remove_outputs(paths, Console(record=True))
    assert not paths.data.exists() and not paths.predictions.exists() and keep.read_text(encoding="utf-8") == "mine"
