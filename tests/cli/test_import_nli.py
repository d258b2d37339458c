"""``ragtruth-spans import nli``: the summary table printed, ``--only`` picks sets (an absent set's folder then does
not matter), bad input and a refused output are one line and exit 2, an existing prepared NLI directory is
replaced whole and anything else is never replaced."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ragtruth_spans.cli import app

runner = CliRunner()


def _cad(root: Path, label: str = "neutral") -> Path:
    base = root / "cad" / "NLI" / "all_combined"
    base.mkdir(parents=True, exist_ok=True)
    for split, text in (("train", "A man sleeps."), ("dev", "A dog runs."), ("test", "A cat sits.")):
        (base / f"{split}.tsv").write_text(f"sentence1\tsentence2\tgold_label\n{text}\tIt rests.\t{label}\n",
                                           encoding="utf-8")
    return root


def _invoke(*args: str):
    return runner.invoke(app, ["import", "nli", *args])


def _one_line_exit_2(result, message: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert message in result.output, result.output


def test_import_prints_the_counts_and_writes_the_directory(tmp_path):
    nli = _cad(tmp_path / "nli")
    result = _invoke("--nli-dir", str(nli), "--out", str(tmp_path / "out"), "--only", "cad")
    assert result.exit_code == 0, result.output
    assert "pairs per source, split and label" in result.output and "cad" in result.output
    stats = json.loads((tmp_path / "out" / "stats.json").read_text(encoding="utf-8"))
    assert stats["counts"] == {"cad": {"train": {"neutral": 1}, "dev": {"neutral": 1}, "test": {"neutral": 1}}}
    _cad(tmp_path / "nli", "entailment")  # imported again: the prepared directory is replaced whole
    assert _invoke("--nli-dir", str(nli), "--out", str(tmp_path / "out"), "--only", "cad").exit_code == 0
    assert '"entailment"' in (tmp_path / "out" / "dev.jsonl").read_text(encoding="utf-8")


def test_a_missing_set_folder_is_one_line_unless_not_picked(tmp_path):
    nli = _cad(tmp_path / "nli")
    result = _invoke("--nli-dir", str(nli), "--out", str(tmp_path / "out"))
    _one_line_exit_2(result, "no folder for the set 'snli'")
    assert not (tmp_path / "out").exists()
    _one_line_exit_2(_invoke("--nli-dir", str(nli), "--out", str(tmp_path / "out"), "--only", "cad,squad"),
                     "unknown set 'squad'")
    _one_line_exit_2(_invoke("--nli-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")),
                     "not a folder")


def test_a_bad_label_is_one_line_naming_file_and_line(tmp_path):
    nli = _cad(tmp_path / "nli", "maybe")
    result = _invoke("--nli-dir", str(nli), "--out", str(tmp_path / "out"), "--only", "cad")
    _one_line_exit_2(result, "train.tsv:2, field 'gold_label': unknown label 'maybe'")
    assert not (tmp_path / "out").exists()


def test_an_output_that_is_not_a_prepared_directory_or_holds_the_input_is_refused(tmp_path):
    nli = _cad(tmp_path / "nli")
    other = tmp_path / "notes"
    other.mkdir()
    (other / "mine.txt").write_text("keep me", encoding="utf-8")
    result = _invoke("--nli-dir", str(nli), "--out", str(other), "--only", "cad")
    _one_line_exit_2(result, "not a prepared directory's (mine.txt)")
    assert (other / "mine.txt").read_text(encoding="utf-8") == "keep me"
    result = _invoke("--nli-dir", str(nli), "--out", str(tmp_path), "--only", "cad")
    _one_line_exit_2(result, "holds the input given as --nli-dir")
    assert (nli / "cad" / "NLI" / "all_combined" / "dev.tsv").is_file()
