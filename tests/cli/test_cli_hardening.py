"""On the command line: hostile input is one line and exit 2 (never a traceback, never half an output),
user text is never read as rich markup nor sent raw to the terminal, outputs are checked before the work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.detectors.base import Detection, Detector

runner = CliRunner()
GOOD = {"context": "Opened in 1999.", "response": "It opened in 1999.", "task": "QA"}


def _stdin(*rows: dict) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def _one_line_exit_2(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(("stdin", "message"), [
    (_stdin(GOOD).encode() + b'{"context": "caf\xe9", "response": "r", "task": "QA"}\n',
     "<stdin>:2: not valid UTF-8 (byte 17 of the line)"),
    (_stdin(GOOD, GOOD | {"qestion": "When?"}), "<stdin>:2, field 'qestion': unknown field"),
    (_stdin({"context": "c", "response": "r"}), "<stdin>:1, field 'task': missing required field"),
    (_stdin(GOOD, GOOD, GOOD | {"response": "bad \ud800"}), "<stdin>:3, field 'response': not valid Unicode"),
    (_stdin(GOOD | {"question": "\udc80"}), "<stdin>:1, field 'question': not valid Unicode"),
    (_stdin(GOOD | {"id": True}), "<stdin>:1, field 'id': must be a string or an integer"),
    (_stdin(GOOD | {"id": "x\ud800"}), "<stdin>:1, field 'id': not valid Unicode"),
    ('{"context": "c", "response": "r", "task": "QA", "id": ' + "1" * 5000 + "}\n", "<stdin>:1: invalid JSON"),
    ("[" * 50_000 + "\n", "<stdin>:1: invalid JSON: nested too deeply"),
])
def test_detect_refuses_hostile_stdin_before_printing_anything(stdin, message: str) -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers", "--chunk-size", "1"], input=stdin)
    _one_line_exit_2(result, message)
    assert not result.stdout.lstrip().startswith("{")  # no result line was printed before the error


def test_detect_json_lines_are_utf8_whatever_the_locale() -> None:
    result = runner.invoke(app, ["detect", "--model", "numbers", "--output", "json"],
                           input=_stdin(GOOD | {"response": "Café opened in 1998.", "id": "é"}))
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout_bytes.decode("utf-8"))
    assert row["id"] == "é" and row["spans"][0]["text"] == "1998"


def test_detect_view_escapes_terminal_control_sequences() -> None:
    hostile = "Opened in 1998.\x1b[2J\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 \x9b31m"
    result = runner.invoke(app, ["detect", "--model", "numbers", "--output", "view"],
                           input=_stdin(GOOD | {"response": hostile, "id": "x\x1b[31m"}))
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout and "\x9b" not in result.stdout
    assert "\\x1b[2J" in result.stdout and "\\x1b]8;;https://evil.example\\x07" in result.stdout
    assert "id x\\x1b[31m" in result.stdout and "1998" in result.stdout


def _gold_and_pred(tmp_path: Path, model: str) -> tuple[Path, Path]:
    rows = [{"id": f"r{i}", "source_id": f"s{i}", "task_type": "QA", "model": model, "split": "test",
             "quality": "good", "response": "It opened in 1998.", "context": "Opened in 1999.", "question": "When?",
             "spans": [{"start": 13, "end": 17, "type": "Evident Conflict", "text": "1998"}] if i else []}
            for i in range(2)]
    gold, pred = tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"
    gold.write_text(_stdin(*rows), encoding="utf-8")
    pred.write_text(_stdin({"id": "r0", "spans": []}, {"id": "r1", "spans": [{"start": 13, "end": 17}]}),
                    encoding="utf-8")
    return gold, pred


@pytest.mark.parametrize("model", ["llama-2-7b-chat[awq]", "evil[/bold]", "[link=https://evil.example]x"])
def test_model_names_are_shown_as_written_never_as_markup(tmp_path: Path, model: str) -> None:
    gold, pred = _gold_and_pred(tmp_path, model)
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert model in result.stdout


def test_evaluate_and_report_check_their_output_before_the_work(tmp_path: Path) -> None:
    gold, pred = _gold_and_pred(tmp_path, "m")
    evaluated = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred), "--json", str(tmp_path)])
    _one_line_exit_2(evaluated, "is a folder, not a file")
    assert "Overall" not in evaluated.stdout  # refused before evaluating, not after
    reported = runner.invoke(app, ["report", "--gold", str(gold), "--pred", str(pred), "--out",
                                   str(gold / "report.html")])
    _one_line_exit_2(reported, "gold.jsonl is a file, not a folder")
    selected = runner.invoke(app, ["select", "--gold", str(gold), "--pred", str(pred),
                                   "--models", "m,n", "--json", str(tmp_path)])
    _one_line_exit_2(selected, "is a folder, not a file")


class Unjudging(Detector):
    kind = "unjudging"

    def detect_batch(self, items) -> list[Detection]:
        return [Detection(spans=[], score=None, error="endpoint failed") for _ in items]


def test_select_best_with_no_judgeable_candidate_exits_3_and_chooses_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("ragtruth_spans.detectors.loader.load_detector", lambda *a, **k: Unjudging())
    (tmp_path / "ctx.txt").write_text("Opened in 1999.", encoding="utf-8")
    (tmp_path / "cands.jsonl").write_text(_stdin({"response": "a"}, {"response": "b", "id": "[bold]x"}),
                                          encoding="utf-8")
    result = runner.invoke(app, ["select-best", "--model", "numbers", "--context", "@" + str(tmp_path / "ctx.txt"),
                                 "--candidates", str(tmp_path / "cands.jsonl"), "--task", "QA", "--json",
                                 str(tmp_path / "sel.json")])
    assert result.exit_code == 3, result.output
    assert "no judgement" in result.output and "Chosen" not in result.output and "[bold]x" in result.output
    payload = json.loads((tmp_path / "sel.json").read_text())
    assert payload["no_judgement"] is True and payload["index"] is None


def test_select_best_takes_text_or_at_file_like_detect(tmp_path: Path) -> None:
    """One input convention: --context/--question are text, or @FILE for a file's content, in select-best as in
    detect."""
    candidates = _stdin({"response": "It opened in 1998."}, {"response": "It opened in 1999."})
    (tmp_path / "cands.jsonl").write_text(candidates, encoding="utf-8")
    (tmp_path / "ctx.txt").write_text("The hotel opened in 1999.", encoding="utf-8")
    for context in ("The hotel opened in 1999.", f"@{tmp_path / 'ctx.txt'}"):
        result = runner.invoke(app, ["select-best", "--model", "numbers", "--context", context, "--candidates",
                                     str(tmp_path / "cands.jsonl"), "--question", "When did it open?"])
        assert result.exit_code == 0, result.output
        assert "Chosen: candidate 1" in result.output
    result = runner.invoke(app, ["select-best", "--model", "numbers", "--context", f"@{tmp_path / 'nope.txt'}",
                                 "--candidates", str(tmp_path / "cands.jsonl"), "--task", "QA"])
    assert result.exit_code == 2 and "nope.txt" in result.output and "field '--context'" in result.output


def test_help_is_not_cut_at_80_columns(monkeypatch) -> None:
    """Without a terminal to measure (a pipe, a file, the test runner) and no COLUMNS (an xdist worker is given
    COLUMNS=80), --help is laid out wide enough that no option's help is cut ("token-classific…")."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("TERMINAL_WIDTH", raising=False)
    result = runner.invoke(app, ["predict", "--help"])
    assert result.exit_code == 0 and "…" not in result.output
    assert "token-classification:" in result.output


def test_control_characters_in_file_names_are_escaped_when_printed(tmp_path) -> None:
    """A file name holding ESC or BEL is printed escaped in errors and notes, never raw."""
    hostile = tmp_path / "gold\x1b[2J\x07.jsonl"
    result = runner.invoke(app, ["evaluate", "--gold", str(hostile), "--pred", str(hostile)])
    assert result.exit_code == 2 and "\\x1b[2J\\x07" in result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    result = runner.invoke(app, ["predict", "--model", "flag-none", "--data", str(hostile), "--out",
                                 str(tmp_path / "p\x1b.jsonl")])
    assert result.exit_code == 2 and "\x1b" not in result.output and "\\x1b" in result.output


def test_a_negative_seed_with_bootstrap_is_one_line_not_a_traceback(sample_test_file, tmp_path) -> None:
    """Evaluate, select and benchmark with --bootstrap and a negative --seed."""
    from ragtruth_spans.pipeline.predict import predict_file

    data, _ = sample_test_file
    pred = tmp_path / "pred.jsonl"
    predict_file("flag-all", data, pred, progress=False)
    for args in (["evaluate", "--gold", str(data), "--pred", str(pred)],
                 ["select", "--gold", str(data), "--pred", str(pred), "--models", "gpt-4-0613,llama-2-7b-chat"],
                 ["benchmark", "--gold", str(data), "--detectors", "flag-none", "--out", str(tmp_path / "bench")]):
        result = runner.invoke(app, [*args, "--bootstrap", "5", "--seed", "-1"])
        assert result.exit_code == 2, (args[0], result.output)
        assert "field '--seed'" in result.output and "Traceback" not in result.output, result.output


@pytest.mark.parametrize(("stdin", "message"), [
    ('{"context": "c", "response": "r", "task": "QA", "task": "Summary"}\n',
     "<stdin>:1: invalid JSON: duplicate key 'task'"),
    (_stdin(GOOD | {"task_type": "Summary"}),
     "<stdin>:1, field 'task_type': task 'QA' and task_type 'Summary' disagree"),
])
def test_detect_refuses_duplicate_keys_and_disagreeing_task_names(stdin: str, message: str) -> None:
    """Nothing silently wins — a key given twice, or task and task_type saying different things."""
    result = runner.invoke(app, ["detect", "--model", "numbers"], input=stdin)
    _one_line_exit_2(result, message)


def test_a_recipe_with_a_duplicate_key_is_refused(tmp_path) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("kind: similarity\nmethod: cosine\nmethod: overlap\n", encoding="utf-8")
    result = runner.invoke(app, ["train", str(recipe), "--dry-run"])
    assert result.exit_code == 2 and "found duplicate key 'method'" in result.output, result.output
