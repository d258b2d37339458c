"""One voice: modules log through ``logging.getLogger(__name__)``; the entry point alone sets the level and the
handler (quiet / normal / verbose reach the libraries there), records are plain one-line when piped, consoles
never wrap text when their stream is not a terminal, and the Python API changes nothing of its host."""

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


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def restore_normal():
    yield
    logs.configure("normal")


def test_normal_mutes_the_libraries_and_drops_their_warnings(capsys):
    handler = logs.configure("normal", rich=False)
    assert logs.verbosity() == "normal" and not logs.verbose()
    assert logging.getLogger("transformers").level == logging.ERROR and logging.getLogger("peft").level == logging.ERROR
    assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") and os.environ.get("TRANSFORMERS_VERBOSITY")
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = logging._showwarning  # type: ignore[attr-defined]  # captureWarnings' hook
        warnings.warn_explicit("`is_gradient_checkpointing` is deprecated", FutureWarning,
                               "/site-packages/transformers/modeling_utils.py", 3303)
        warnings.warn_explicit("ours", UserWarning, logs._PACKAGE_DIRS[0] + "/detectors/x.py", 1)
    [filtered] = [f for f in handler.filters if isinstance(f, logs.LibraryWarnings)]
    err = capsys.readouterr().err
    assert filtered.hidden == 1 and "ours" in err and "is_gradient_checkpointing" not in err
    assert err.startswith("warning: ") and err.count("\n") == 1  # one plain line: the warning's source line dropped
    assert not logs.progress_enabled(io.StringIO())  # not a terminal: no bar
    assert logs.progress_enabled(Terminal())


def test_verbose_hands_the_libraries_their_voice_back_and_quiet_silences_progress():
    handler = logs.configure("verbose", rich=False)
    assert logs.verbose() and logs.verbosity() == "verbose"
    assert logging.getLogger("transformers").level == logging.NOTSET
    assert not any(isinstance(f, logs.LibraryWarnings) for f in handler.filters)  # every warning shown
    logs.configure("quiet")
    assert logs.verbosity() == "quiet"
    assert not logs.progress_enabled(Terminal())
    assert not logging.getLogger("ragtruth_spans.detectors.stacked.train").isEnabledFor(logging.INFO)
    assert logging.getLogger("ragtruth_spans.detectors.stacked.train").isEnabledFor(logging.WARNING)
    with pytest.raises(ValueError):
        logs.configure("loud")  # type: ignore[arg-type]


def test_piped_records_are_plain_single_lines_with_control_characters_escaped(capsys):
    logs.configure("normal", rich=False)
    log = logging.getLogger("ragtruth_spans.some.module")
    long = "path " + "/very/long/directory" * 20
    log.info(long)
    log.info("two\nlines from a file named \x1b[2J")
    log.warning("a problem")
    logging.getLogger("transformers.modeling_utils").warning("the library's load report")  # muted: ERROR
    assert capsys.readouterr().err.splitlines() == [long, "two | lines from a file named \\x1b[2J",
                                                    "warning: a problem"]
    logs.configure("normal", rich=False)  # a second set-up replaces the first handler, never adds one
    assert sum(getattr(h, "_ragtruth_spans", False) for h in logging.getLogger().handlers) == 1


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
    assert quiet.stderr == ""
    normal = runner.invoke(app, ["prepare", "--sample", "--out", str(tmp_path / "n")])
    assert normal.exit_code == 0 and f"wrote {tmp_path / 'n'}" in normal.stderr  # a note: a record on stderr
    both = runner.invoke(app, ["--quiet", "--verbose", "prepare", "--sample", "--out", str(tmp_path / "b")])
    assert both.exit_code == 2 and "exclude each other" in both.output


@pytest.mark.slow
def test_the_python_api_leaves_its_host_as_it_found_it(tmp_path):
    """In a fresh interpreter (no command line imported): importing the package, loading, detecting, training and
    evaluating change neither ``os.environ`` nor any logger's level, handlers or filters (the package's own
    included), nor the warnings hook; the package's records reach a handler the program sets up."""
    import subprocess
    import sys

    code = f"""
import logging, os, warnings

def snapshot():
    loggers = {{name: (lg.level, list(lg.handlers), list(lg.filters), lg.propagate)
               for name, lg in logging.root.manager.loggerDict.items() if isinstance(lg, logging.Logger)}}
    root = logging.getLogger()
    return dict(os.environ), loggers, (root.level, list(root.handlers)), warnings.showwarning

import lightgbm, transformers, torch  # noqa: the libraries' own set-up on import is theirs, not the package's
environment = dict(os.environ)
import ragtruth_spans
assert dict(os.environ) == environment  # importing the package changes nothing either
before = snapshot()
from ragtruth_spans.data.prepare import prepare
from ragtruth_spans.data.ragtruth import sample_data_dir
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.detectors.train import train
from ragtruth_spans.evaluation.files import evaluate_files
from ragtruth_spans.pipeline.predict import predict_file
detector = ragtruth_spans.load_detector("numbers")
detector.detect(context="It opened in 1999.", response="It opened in 1998.", task="Summary")
prepare(sample_data_dir(), {str(tmp_path / 'data')!r}, dev_per_task=1)
result = train(load_recipe("recommended-cpu", ["features.encoder=null", "data.synth=null",
                                               "data.prepared_dir={tmp_path / 'data'}",
                                               "output_dir={tmp_path / 'run'}"]))
assert result.summary and "span F1" in result.summary, result.summary
predict_file({str(tmp_path / 'run')!r}, {str(tmp_path / 'data' / 'test.jsonl')!r}, {str(tmp_path / 'p.jsonl')!r},
             progress=False)
evaluate_files({str(tmp_path / 'data' / 'test.jsonl')!r}, {str(tmp_path / 'p.jsonl')!r}, bootstrap=0)
after = snapshot()
new = {{k: v for k, v in after[1].items() if k not in before[1]}}
assert after[0] == before[0], set(after[0].items()) ^ set(before[0].items())
assert all(after[1][k] == v for k, v in before[1].items()), "a logger the program had was changed"
changed = {{k: v for k, v in new.items() if v != (logging.NOTSET, [], [], True)}}
assert not changed, changed  # loggers created since: untouched (the libraries' own set-up aside, below)
assert after[2] == before[2] and after[3] is before[3]
print("ok")
"""
    env = {k: v for k, v in os.environ.items() if k not in logs.QUIET_ENV}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]


def test_in_chunks_joins_the_chunks_in_order_and_logs_each_tenth_off_a_terminal(caplog) -> None:
    from ragtruth_spans.core.logs import in_chunks

    seen: list[tuple[int, int]] = []

    def work(at, part):
        seen.append((at, len(part)))
        return [x * 2 for x in part]

    log = logging.getLogger("ragtruth_spans.tests.chunks")
    with caplog.at_level(logging.INFO, logger="ragtruth_spans.tests.chunks"):
        out = in_chunks(list(range(25)), work, desc="stage", log=log, chunk=10)
    assert out == [x * 2 for x in range(25)] and seen == [(0, 10), (10, 10), (20, 5)]
    assert [r.getMessage() for r in caplog.records if r.name == log.name] == \
        ["stage 10 / 25 responses", "stage 20 / 25 responses", "stage 25 / 25 responses"]
