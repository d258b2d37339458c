"""``ragtruth-spans predict`` flags: --threshold must lie strictly between 0 and 1 (one-line error, exit 2, before
any model loads); --batch-size says what it counts in each family."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app

runner = CliRunner()


@pytest.mark.parametrize("threshold", ["0", "1", "1.5", "-0.1", "nan"])
def test_threshold_outside_the_open_interval_is_one_line_exit_2(sample_test_file, tmp_path, threshold):
    path, _ = sample_test_file
    result = runner.invoke(app, ["predict", "--model", str(tmp_path / "no-such-run"), "--data", str(path),
                                 "--out", str(tmp_path / "pred.jsonl"), "--threshold", threshold])
    assert result.exit_code == 2
    [line] = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "field '--threshold': must be in (0, 1)" in line
    assert not (tmp_path / "pred.jsonl").exists()


def test_help_gives_the_threshold_interval_and_the_batch_unit_per_family():
    result = runner.invoke(app, ["predict", "--help"], env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "in (0, 1)" in text
    assert "token-classification: context windows [16]" in text and "generative (hf backend): responses [8]" in text
