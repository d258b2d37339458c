"""`ragtruth-spans benchmark`: every detector's figures equal `ragtruth-spans evaluate`'s, runs resume, and bad
input is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import make_record
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.similarity.detector import SimilarityDetector
from ragtruth_spans.pipeline.benchmark import parse_detectors, run_benchmark

DETECTORS = "numbers,flag-all,flag-none,sim-overlap,keyword-match,keyword-match@dev"


@pytest.fixture()
def dev_file(tmp_path: Path) -> Path:
    context = "The Grand Hotel opened in 1999 on the harbour front. It has 120 rooms and a rooftop pool."
    records = [make_record("d1", "Summary", context, "The Grand Hotel opened in 1999.", [], split="dev"),
               make_record("d2", "Summary", context, "It opened in 2004 with 300 rooms.",
                           [("2004", "Evident Conflict"), ("300 rooms", "Evident Conflict")], split="dev")]
    path = tmp_path / "dev.jsonl"
    write_records(path, records)
    return path


@pytest.mark.slow
def test_benchmark_reproduces_evaluate_exactly_and_resumes(sample_test_file, dev_file, tmp_path, monkeypatch):
    data, records = sample_test_file
    out = tmp_path / "bench"
    runner = CliRunner()
    result = runner.invoke(app, ["benchmark", "--gold", str(data), "--dev", str(dev_file), "--detectors", DETECTORS,
                                 "--out", str(out), "--bootstrap", "50"])
    assert result.exit_code == 0, result.output
    payload = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    labels = [e["label"] for e in payload["detectors"]]
    assert sorted(labels) == sorted(DETECTORS.split(","))
    f1s = [e["report"]["overall"]["span"]["f1"] for e in payload["detectors"]]
    assert f1s == sorted(f1s, reverse=True)
    for entry in payload["detectors"]:
        evaluated = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", entry["predictions"],
                                        "--bootstrap", "50", "--json", str(tmp_path / "report.json")])
        assert evaluated.exit_code == 0, evaluated.output
        evaluated, benchmarked = json.loads((tmp_path / "report.json").read_text(encoding="utf-8")), \
            dict(entry["report"])
        if entry["tuned_on_dev"]:  # the benchmark knows the dev split it tuned on; the predictions do not say
            for report, status in ((evaluated, "unknown"), (benchmarked, "known")):
                overlap = report.pop("overlap")
                assert overlap["status"] == status
                report["notes"] = [n for n in report["notes"] if n != overlap["summary"]]
        assert evaluated == benchmarked
        assert entry["throughput"]["predicted"] == len(records)
    tuned = next(e for e in payload["detectors"] if e["label"] == "keyword-match@dev")
    assert tuned["tuning"]["split"] == "dev" and tuned["detector"]["thresholds_from"] == "tuned on dev"
    assert (out / "tuning" / "keyword-match@dev.json").is_file()
    markdown = (out / "leaderboard.md").read_text(encoding="utf-8")
    assert "| `flag-all` |" in markdown and "## Span F1 by task" in markdown
    assert (out / "leaderboard.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert "| # | detector | span P |" in markdown and "| # |" not in result.stdout  # Markdown to the files
    assert "span F1 [95% CI]" in result.stdout and "│ flag-all" in result.stdout  # a rich table to the terminal

    def no_second_tuning(*args, **kwargs):
        raise AssertionError("the saved tuning should have been reused")

    monkeypatch.setattr(SimilarityDetector, "tune", no_second_tuning)
    again = run_benchmark(data, DETECTORS, out, dev=dev_file, bootstrap=50, progress=False)
    assert [e["report"] for e in again["detectors"]] == [e["report"] for e in payload["detectors"]]
    assert all(e["throughput"]["predicted"] == len(records) for e in again["detectors"])  # nothing re-predicted
    assert next(e for e in again["detectors"] if e["label"] == "keyword-match@dev")["detector"] == tuned["detector"]
    with pytest.raises(AssertionError, match="saved tuning"):  # another criterion is a new tuning
        run_benchmark(data, "keyword-match@dev", out, dev=dev_file, criterion="response_f1", bootstrap=0,
                      progress=False)


def test_detector_specs_are_checked_before_anything_runs(tmp_path):
    specs = parse_detectors("numbers, sim-overlap@dev ,numbers")
    assert [(s.label, s.source, s.tune) for s in specs] == [
        ("numbers", "numbers", False), ("sim-overlap@dev", "sim-overlap", True), ("numbers-2", "numbers", False)]
    with pytest.raises(InputError, match="'nope' is neither a run directory nor a detector name"):
        parse_detectors("numbers,nope")
    with pytest.raises(InputError, match="no detectors given"):
        parse_detectors(" , ")


@pytest.mark.parametrize("args, message", [
    (["--detectors", "numbers,quantum"], "'quantum' is neither a run directory nor a detector name"),
    (["--detectors", "sim-overlap@dev"], "no --dev file was given"),
    (["--detectors", "numbers@dev", "--dev", "DATA"], "numbers has no thresholds to tune"),
    (["--detectors", "numbers", "--criterion", "accuracy"], "unknown criterion 'accuracy'"),
])
def test_cli_errors_are_one_line(sample_test_file, tmp_path, args, message):
    data, _ = sample_test_file
    args = [str(data) if a == "DATA" else a for a in args]
    result = CliRunner().invoke(app, ["benchmark", "--gold", str(data), "--out", str(tmp_path / "b"), *args])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len([line for line in result.output.splitlines() if line.startswith("error:")]) == 1


def test_missing_data_file_is_one_line(tmp_path):
    result = CliRunner().invoke(app, ["benchmark", "--gold", str(tmp_path / "none.jsonl"), "--detectors",
                                      "numbers", "--out", str(tmp_path / "b")])
    assert result.exit_code == 2 and "none.jsonl: file not found" in result.output
