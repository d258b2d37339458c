"""A user's own data end to end: a 20-line JSONL with only context, response and spans → import → train
recommended-cpu (encoder-free) → predict → evaluate, with no field guessed; a train that failed on bad data is
retried after the fix without --overwrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app

CITIES = ["Lyon", "Paris", "Nice", "Lille", "Nantes", "Rennes", "Dijon", "Metz", "Brest", "Tours"]


def twenty_lines(path: Path) -> Path:
    """Ten faithful responses and ten whose year is changed (the year is the gold span); nothing but context,
    response and spans."""
    rows = []
    for i in range(20):
        city, year, n = CITIES[i % 10], 1950 + i, 100 + 7 * i
        context = f"The museum of {city} opened in {year}. It holds {n} paintings and a library."
        if i % 2:
            response = f"The museum of {city} opened in {year + 1} and holds {n} paintings."
            start = response.index(str(year + 1))
            spans = [{"start": start, "end": start + 4}]
        else:
            response, spans = f"The {city} museum opened in {year}; it holds {n} paintings.", []
        rows.append({"context": context, "response": response, "spans": spans})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.slow
def test_own_data_from_import_to_evaluation_with_a_retry_after_bad_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cli = CliRunner()
    mine = twenty_lines(tmp_path / "mine.jsonl")
    result = cli.invoke(app, ["import", "jsonl", "--in", str(mine), "--out", "data"])
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "data" / "stats.json").read_text())
    assert stats["defaulted"]["id"] == stats["defaulted"]["source_id"] == 20  # every default counted
    assert stats["written"] == 20 and all(s["responses"] for s in stats["splits"].values())

    train_args = ["train", "recommended-cpu", "--set", "data.prepared_dir=data", "--set", "features.encoder=null",
                  "--set", "data.synth.count=40", "--set", "data.synth.eval_count=10",
                  "--set", "output_dir=run"]
    good = (tmp_path / "data" / "train.jsonl").read_text(encoding="utf-8")
    (tmp_path / "data" / "train.jsonl").write_text(good + '{"id": "broken"\n', encoding="utf-8")
    result = cli.invoke(app, train_args)
    assert result.exit_code == 2 and "train.jsonl" in result.output and "Traceback" not in result.output
    (tmp_path / "data" / "train.jsonl").write_text(good, encoding="utf-8")  # fixed: retried, no --overwrite
    result = cli.invoke(app, train_args)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "run" / "run_info.json").is_file()

    result = cli.invoke(app, ["predict", "--model", "run", "--data", "data/test.jsonl", "--out", "pred.jsonl"])
    assert result.exit_code == 0, result.output
    result = cli.invoke(app, ["evaluate", "--gold", "data/test.jsonl", "--pred", "pred.jsonl", "--json",
                              "report.json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["counts"]["responses"] == stats["splits"]["test"]["responses"]
    assert report["counts"]["missing_predictions"] == 0 and "f1" in report["overall"]["span"]
