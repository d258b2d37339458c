"""The HTML report without a browser: self-contained, built from the evaluation payloads, the browser's data
agrees with the evaluator, and the ``report`` command's errors."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from report_data import read_files, sample_prediction_files, sample_test_records
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.predictions import PredictionFile
from ragtruth_spans.reporting.html import (
    ReportInput,
    evaluate_detector,
    render_report,
    report_from_files,
    response_rows,
)

runner = CliRunner()


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    records = sample_test_records()
    write_records(folder / "test.jsonl", records)
    return folder, records, sample_prediction_files(folder, records)


def _embedded_data(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    assert match, "the page embeds its data"
    return json.loads(match.group(1))


def test_page_is_self_contained_and_shows_the_report_numbers(sample) -> None:
    _folder, records, files = sample
    data = report_from_files(records, read_files(files, records), bootstrap=50)
    html = render_report(data)
    assert not re.search(r"""(src|href|url)\s*[=(]\s*["']?(https?:)?//""", html), "nothing is fetched"
    assert "<link" not in html and "@import" not in html
    assert html.count("<svg") >= 3  # type recall, precision-recall, span lengths
    for result in data.detectors:
        overall = result.report["overall"]
        assert f"{overall['span']['f1']:.3f}" in html
        low, high = result.report["ci"]["overall"]["span"]["f1"]
        assert f"[{low:.3f}, {high:.3f}]" in html
    embedded = _embedded_data(html)
    assert [r["id"] for r in embedded["responses"]] == [r.id for r in records]
    assert embedded["detectors"] == ["numbers", "flag-all", "random"]


def test_browser_data_counts_equal_the_evaluator_counts(sample) -> None:
    _folder, records, files = sample
    data = report_from_files(records, read_files(files, records))
    rows = response_rows(data)
    for d, result in enumerate(data.detectors):
        counts = result.report["counts"]
        correct, missed, false = (sum(r["det"][d]["chars"][k] for r in rows["responses"]) for k in range(3))
        assert correct == counts["overlap_chars"]
        assert correct + missed == counts["gold_chars"]
        assert correct + false == counts["predicted_chars"]
        for run_list in (r["det"][d]["runs"] for r in rows["responses"]):
            for start, end, kind, *_ in run_list:
                assert 0 <= start < end and kind in (0, 1, 2)


def test_html_escapes_text_from_the_data(sample) -> None:
    _, records, _ = sample
    hostile = replace(records[0], id="x</script><b>", model="<i>m</i>")
    pred = PredictionFile(spans={hostile.id: []}, response_scores={})
    html = render_report(ReportInput(gold=[hostile], detectors=[evaluate_detector("<det>", "p", [hostile], pred)]))
    assert "<i>m</i>" not in html and "<det>" not in html and "x</script>" not in html
    assert _embedded_data(html)["responses"][0]["id"] == "x</script><b>"


def test_report_command_writes_the_page(sample, tmp_path: Path) -> None:
    folder, _records, files = sample
    out = tmp_path / "sub" / "r.html"
    result = runner.invoke(app, ["report", "--gold", str(folder / "test.jsonl"), "--pred", str(files["numbers"]),
                                 "--pred", str(files["random"]), "--out", str(out), "--bootstrap", "20"])
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    embedded = _embedded_data(out.read_text(encoding="utf-8"))
    assert embedded["detectors"] == ["numbers", "random"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--name", "only-one"], "give one --name per --pred"),
    (["--name", "a", "--name", "a"], "same name 'a'"),
])
def test_report_command_rejects_bad_names(sample, tmp_path: Path, extra: list[str], message: str) -> None:
    folder, _records, files = sample
    result = runner.invoke(app, ["report", "--gold", str(folder / "test.jsonl"), "--pred", str(files["numbers"]),
                                 "--pred", str(files["random"]), "--out", str(tmp_path / "r.html"), *extra])
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "r.html").exists()


def test_report_command_names_the_predictions_file_of_a_missing_id(sample, tmp_path: Path) -> None:
    folder, _records, files = sample
    partial = tmp_path / "partial.jsonl"
    partial.write_text(files["numbers"].read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")
    result = runner.invoke(app, ["report", "--gold", str(folder / "test.jsonl"), "--pred", str(partial),
                                 "--out", str(tmp_path / "r.html")])
    assert result.exit_code == 2
    assert str(partial) in result.output and "no prediction" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_each_context_is_embedded_once_per_source_not_once_per_response(tmp_path) -> None:
    """Five responses to one source carry its context once, not five times."""
    from ragtruth_spans.core.types import Record
    from ragtruth_spans.reporting.html import ReportInput, response_rows

    context = "A long shared context. " * 200
    records = [Record(id=f"r{i}", source_id="s1", task_type="Summary", model=f"m{i}", split="test", quality="good",
                      response=f"Response {i}.", context=context) for i in range(5)]
    rows = response_rows(ReportInput(gold=records, detectors=[], gold_source="x"))
    assert rows["contexts"] == [context] and {r["ctx"] for r in rows["responses"]} == {0}
    assert json.dumps(rows).count("A long shared context.") == 200
