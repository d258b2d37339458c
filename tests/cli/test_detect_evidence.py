"""``detect --evidence`` and ``predict --evidence``: every span of the output carries a verdict and passages at
exact context offsets (Unicode, ``\\r\\n``, a Data2txt JSON context); bad evidence options exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragtruth_spans.cli import app

runner = CliRunner()
CONTEXT = "Passage 1: Le Café Zoë 🍣 opened in 1999.\r\nIt has 120 rooms.\r\n"
BUSINESS = json.dumps({"name": "Zoë \"Deli\"", "hours": {"Monday": "7:0-14:0"},
                       "attributes": {"RestaurantsTakeOut": False}, "business_stars": 4.0}, ensure_ascii=False)


def _rows(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_detect_evidence_for_every_span_at_exact_context_offsets() -> None:
    items = [{"id": "qa", "context": CONTEXT, "question": "When?", "response": "Zoë's café 🍣 opened in 2003.",
              "task": "QA"},
             {"id": "d2t", "context": BUSINESS, "response": "Zoë rates 4.5 stars. It offers takeout.",
              "task": "Data2txt"}]
    stdin = "\n".join(json.dumps(x, ensure_ascii=False) for x in items) + "\n"
    for model in ("numbers", "flag-all"):
        result = runner.invoke(app, ["detect", "--model", model, "--evidence", "--output", "json"], input=stdin)
        assert result.exit_code == 0, result.output
        for row, item in zip(_rows(result.stdout), items):
            assert row["spans"]
            for span in row["spans"]:
                assert span["verdict"] in ("contradicted", "unsupported", "uncertain") and span["reason"]
                for passage in span["evidence"]:
                    assert 0 <= passage["start"] < passage["end"] <= len(item["context"])
    numbers = _rows(runner.invoke(app, ["detect", "--model", "numbers", "--evidence"], input=stdin).stdout)
    [qa_span] = numbers[0]["spans"]
    assert qa_span["text"] == "2003" and qa_span["verdict"] == "contradicted"
    conflicts = [CONTEXT[a:b] for p in qa_span["evidence"] for a, b in p.get("conflicts", [])]
    assert conflicts == ["1999"]
    [stars] = numbers[1]["spans"]
    assert stars["text"] == "4.5" and stars["verdict"] == "contradicted"
    assert '"business_stars": 4.0' in [BUSINESS[p["start"]:p["end"]] for p in stars["evidence"]]
    plain = _rows(runner.invoke(app, ["detect", "--model", "numbers"], input=stdin).stdout)
    assert "verdict" not in plain[0]["spans"][0]


def test_detect_evidence_view_and_bad_mode() -> None:
    args = ["detect", "--model", "numbers", "--context", CONTEXT, "--question", "When?", "--response",
            "It opened in 2003.", "--evidence"]
    view = runner.invoke(app, args + ["--output", "view"])
    assert view.exit_code == 0 and "contradicted" in view.output and "verdict" in view.output
    bad = runner.invoke(app, args + ["--evidence-mode", "magic"])
    assert bad.exit_code == 2 and "--evidence-mode" in bad.output and "magic" in bad.output


def test_predict_evidence_writes_it_and_refuses_a_resume_in_another_mode(tmp_path: Path) -> None:
    data = tmp_path / "test.jsonl"
    record = {"id": "1", "source_id": "s", "task_type": "QA", "model": "m", "split": "test", "quality": "good",
              "question": "When?", "context": CONTEXT, "response": "It opened in 2003.", "spans": []}
    data.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["predict", "--model", "numbers", "--data", str(data), "--out", str(out),
                                 "--evidence"])
    assert result.exit_code == 0, result.output
    [row] = _rows(out.read_text(encoding="utf-8"))
    assert row["spans"][0]["verdict"] == "contradicted"
    again = runner.invoke(app, ["predict", "--model", "numbers", "--data", str(data), "--out", str(out),
                                "--evidence", "--evidence-mode", "encoder"])
    assert again.exit_code == 2 and "evidence" in again.output
