"""One logging set-up: quiet / normal / verbose reach the libraries (loggers, progress switches, warnings), and
consoles never wrap text when their stream is not a terminal."""

from __future__ import annotations

import io
import logging
import os
import warnings

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core import logs
from ragtruth_spans.training.progress import format_metrics


@pytest.fixture(autouse=True)
def restore_normal():
    yield
    logs.configure("normal")


def test_normal_silences_the_libraries_and_counts_their_warnings():
    logs.configure("normal")
    assert logs.verbosity() == "normal"
    assert logging.getLogger("transformers").level == logging.ERROR and logging.getLogger("peft").level == logging.ERROR
    assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") and os.environ.get("TRANSFORMERS_VERBOSITY")
    shown = []
    original = logs._state["showwarning"]
    logs._state["showwarning"] = lambda *args: shown.append(args[0])
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = logs._show_warning
        warnings.warn_explicit("`is_gradient_checkpointing` is deprecated", FutureWarning,
                               "/site-packages/transformers/modeling_utils.py", 3303)
        warnings.warn_explicit("ours", UserWarning, logs._PACKAGE_DIR + "/detectors/x.py", 1)
    logs._state["showwarning"] = original
    assert logs.hidden_warnings() == 1 and [str(m) for m in shown] == ["ours"]  # the library's hidden, ours shown
    assert not logs.progress_enabled(io.StringIO())  # not a terminal: no bar


def test_verbose_hands_the_libraries_their_voice_back_and_quiet_silences_progress():
    logs.configure("verbose")
    assert logging.getLogger("transformers").level <= logging.WARNING  # its own default when already imported
    shown = []
    original = logs._state["showwarning"]
    logs._state["showwarning"] = lambda *args: shown.append(args[0])
    try:
        logs._show_warning("library says", FutureWarning, "/site-packages/peft/x.py", 1)
    finally:
        logs._state["showwarning"] = original
    assert shown == ["library says"] and logs.hidden_warnings() == 0

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    logs.configure("quiet")
    assert not logs.progress_enabled(Terminal())
    logs.configure("normal")
    assert logs.progress_enabled(Terminal())
    with pytest.raises(ValueError):
        logs.configure("loud")  # type: ignore[arg-type]


def test_a_console_on_a_file_never_wraps_a_long_line():
    console = logs.make_console(file=io.StringIO())
    long = "path " + "/very/long/directory" * 20
    console.print(long)
    assert console.file.getvalue().rstrip("\n") == long and len(long) > logs.FILE_WIDTH


def test_trainer_logs_become_short_lines():
    assert format_metrics(10, 36, {"loss": 1.23456, "learning_rate": 9.6e-05, "grad_norm": 0.5, "epoch": 0.5}) == \
        "step 10/36  loss 1.2346  lr 9.6e-05  grad_norm 0.5000  epoch 0.50"
    assert format_metrics(36, 36, {"eval_loss": 0.7, "eval_token_f1": 0.53, "eval_runtime": 2.0, "epoch": 6.0}) == \
        "step 36/36  eval_loss 0.7000  epoch 6.00  eval_token_f1 0.5300"
    assert format_metrics(36, 36, {"train_runtime": 40.2, "train_loss": 0.59}) == \
        "trained 36 steps in 40 s (mean loss 0.5900)"


def test_global_quiet_and_verbose_options(tmp_path):
    runner = CliRunner()
    quiet = runner.invoke(app, ["--quiet", "prepare", "--sample", "--out", str(tmp_path / "q")])
    assert quiet.exit_code == 0 and (tmp_path / "q" / "test.jsonl").is_file()
    assert "Prepared splits" in quiet.output and "wrote" not in quiet.output  # results only, no notes
    normal = runner.invoke(app, ["prepare", "--sample", "--out", str(tmp_path / "n")])
    assert normal.exit_code == 0 and f"wrote {tmp_path / 'n'}" in normal.output
    both = runner.invoke(app, ["--quiet", "--verbose", "prepare", "--sample", "--out", str(tmp_path / "b")])
    assert both.exit_code == 2 and "exclude each other" in both.output


def test_the_python_api_is_as_quiet_as_the_command_line():
    """In a fresh interpreter (no command line imported), load_detector silences the libraries' loggers, progress
    bars and bitsandbytes' "pip install kernels" notice, leaves the program's warnings alone, and respects a
    level the program chose first."""
    import subprocess
    import sys

    code = """
import logging, warnings
original = warnings.showwarning
import ragtruth_spans
assert "load_detector" in dir(ragtruth_spans) and "load_detector" in ragtruth_spans.__all__
ragtruth_spans.load_detector("numbers")
from ragtruth_spans.core import logs
assert logging.getLogger("transformers").level == logging.ERROR
assert logs.verbosity() == "normal" and warnings.showwarning is original
ops = logging.getLogger("bitsandbytes.backends.cpu.ops")
record = logging.LogRecord("x", logging.WARNING, "f", 1, "install kernels-community for faster ops", None, None)
assert not all(f.filter(record) for f in ops.filters)
logs.configure("verbose", capture_warnings=False)
ragtruth_spans.load_detector("numbers")
assert logging.getLogger("transformers").level == logging.NOTSET
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in logs.QUIET_ENV}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
