"""``ragtruth-spans detect``: arguments, @files and JSON lines on stdin → JSON lines; the terminal view; one-line
errors with exit status 2; the tiny generative run end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app

runner = CliRunner()
CONTEXT = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms."


def _lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_arguments_give_one_json_line() -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers", "--context", CONTEXT, "--question", "When?",
                                 "--response", "It opened in 1998 and has 120 rooms.", "--output", "json"])
    assert result.exit_code == 0, result.output
    [row] = _lines(result.stdout)
    assert row == {"spans": [{"start": 13, "end": 17, "type": "Evident Conflict", "score": 1.0, "text": "1998"}],
                   "score": 1.0}


def test_files_given_with_at(tmp_path: Path) -> None:
    (tmp_path / "ctx.txt").write_text(CONTEXT, encoding="utf-8")
    (tmp_path / "resp.txt").write_text("🍣 It has 150 rooms.", encoding="utf-8")
    result = runner.invoke(app, ["detect", "--model", "numbers", "--context", f"@{tmp_path / 'ctx.txt'}",
                                 "--response", f"@{tmp_path / 'resp.txt'}", "--task", "Summary"])
    assert result.exit_code == 0, result.output
    [row] = _lines(result.stdout)
    assert [(s["start"], s["end"], s["text"]) for s in row["spans"]] == [(9, 12, "150")]  # code points: 🍣 is one
    missing = runner.invoke(app, ["detect", "--model", "numbers", "--context", "@/nonexistent.txt",
                                  "--response", "x", "--task", "QA"])
    assert missing.exit_code == 2 and "/nonexistent.txt" in missing.output and "field '--context'" in missing.output


def test_stdin_json_lines_keep_order_and_ids() -> None:
    lines = [{"id": "a", "context": CONTEXT, "response": "Opened in 1999.", "task": "QA", "question": "When?"},
             {"id": 7, "context": CONTEXT, "response": "Opened in 2001 with 120 rooms.", "task_type": "Summary"},
             {"context": "{}", "response": "Rated 4.5 stars.", "task": "Data2txt"}]
    stdin = "\n".join(json.dumps(x) for x in lines[:2]) + "\n\n" + json.dumps(lines[2]) + "\n"
    result = runner.invoke(app, ["detect", "--model", "numbers", "--chunk-size", "2"], input=stdin)
    assert result.exit_code == 0, result.output
    rows = _lines(result.stdout)
    assert [r.get("id") for r in rows] == ["a", 7, None]
    assert [[s["text"] for s in r["spans"]] for r in rows] == [[], ["2001"], ["4.5"]]
    assert [r["score"] for r in rows] == [0.0, 1.0, 1.0]


@pytest.mark.parametrize(("stdin", "message"), [
    ('{"context": "c", "response": "r", "task": "QA"}\n{"context": "c",\n', "<stdin>:2: invalid JSON"),
    ('{"context": "c", "task": "QA"}\n', "<stdin>:1, field 'response': must be a string"),
    ('\n{"context": "c", "response": "r", "task": "Q"}\n', "<stdin>:2, field 'task': unknown task 'Q'"),
    ('{"context": "c", "response": "r", "task": "QA", "id": [1]}\n', "<stdin>:1, field 'id'"),
    ('[1, 2]\n', "<stdin>:1: expected a JSON object"),
    ("", "no input"),
])
def test_bad_stdin_is_one_line_and_exit_2(stdin: str, message: str) -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers"], input=stdin)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and not result.stdout.strip().startswith("{")


@pytest.mark.parametrize(("args", "message"), [
    (["--response", "r", "--task", "QA"], "field '--context': missing"),
    (["--context", "c", "--response", "r", "--task", "qa"], "unknown task 'qa'"),
    (["--context", "c", "--response", "r", "--task", "QA", "--output", "html"], "unknown output 'html'"),
])
def test_bad_arguments_exit_2(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers", *args])
    assert result.exit_code == 2 and message in result.output


def test_unknown_model_exits_2() -> None:
    result = runner.invoke(app, ["detect", "--model", "no-such-detector", "--context", "c", "--response", "r",
                                 "--task", "QA"])
    assert result.exit_code == 2 and "neither a run directory nor a detector name" in result.output


def test_view_highlights_the_spans() -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers", "--context", CONTEXT, "--question", "When?",
                                 "--response", "It opened in 1998.", "--output", "view"])
    assert result.exit_code == 0
    assert "response score 1.000 · 1 span(s)" in result.stdout
    assert "[13, 17)" in result.stdout and "Evident Conflict" in result.stdout and not result.stdout.startswith("{")


def test_generative_run_through_stdin(overfit_run) -> None:
    records = [r for r in overfit_run.records if r.id in ("qa-1", "qa-2")]  # one with a span, one clean
    stdin = "".join(json.dumps({"id": r.id, "context": r.context, "question": r.question, "response": r.response,
                                "task": r.task_type}) + "\n" for r in records)
    result = runner.invoke(app, ["detect", "--model", str(overfit_run.output_dir), "--device", "cpu",
                                 "--max-new-tokens", "128"], input=stdin)
    assert result.exit_code == 0, result.output
    rows = _lines(result.stdout)
    assert [r["id"] for r in rows] == [r.id for r in records]
    for row, record in zip(rows, records):
        assert [(s["start"], s["end"], s["text"]) for s in row["spans"]] == \
               [(s.start, s.end, s.text) for s in record.spans], record.id
        assert 0.0 <= row["score"] <= 1.0 and row["parse_ok"] is True


def test_without_task_or_question_the_answer_is_read_as_a_summary() -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers", "--context", "It opened in 1932.",
                                 "--response", "It opened in 1923.", "--output", "json"])
    assert result.exit_code == 0, result.output
    assert [json.loads(result.stdout)["spans"][0]["text"]] == ["1923"]
