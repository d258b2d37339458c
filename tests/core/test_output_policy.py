"""One output policy for every command that writes — an output never replaces an input, a link is
written through, a FIFO or device is refused and named, the lock is keyed on the resolved path, and an existing
``predict --out`` is checked to be a predictions file of ``predict`` before a byte of it is touched."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import atomic_write_text, check_output_path, exclusive_output
from ragtruth_spans.pipeline.predict import predict_file

runner = CliRunner()


def _one_line_exit_2(result, *messages: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    for message in messages:
        assert message in result.output, result.output


@pytest.fixture()
def scored(sample_test_file, tmp_path: Path):
    """A prepared split and a predictions file of it (the flag-none detector)."""
    data, _ = sample_test_file
    pred = tmp_path / "pred.jsonl"
    predict_file("flag-none", data, pred, progress=False)
    return data, pred


@pytest.mark.parametrize("which", ["gold", "pred", "gold-through-dot", "pred-through-link"])
def test_evaluate_json_never_replaces_an_input(scored, tmp_path: Path, which: str) -> None:
    data, pred = scored
    target = {"gold": data, "pred": pred, "gold-through-dot": Path(f"{data.parent}/./{data.name}")}.get(which)
    if which == "pred-through-link":
        target = tmp_path / "link.json"
        target.symlink_to(pred)
    before = (data.read_bytes(), pred.read_bytes())
    result = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", str(pred), "--json", str(target)])
    _one_line_exit_2(result, "is the input given as --", "an output never replaces an input")
    assert (data.read_bytes(), pred.read_bytes()) == before


def test_report_out_and_select_json_never_replace_an_input(scored) -> None:
    data, pred = scored
    before = data.read_bytes()
    result = runner.invoke(app, ["report", "--gold", str(data), "--pred", str(pred), "--out", str(data)])
    _one_line_exit_2(result, "is the input given as --gold")
    result = runner.invoke(app, ["select", "--gold", str(data), "--pred", str(pred), "--models", "a,b",
                                 "--json", str(data)])
    _one_line_exit_2(result, "is the input given as --gold")
    assert data.read_bytes() == before


def test_augment_and_prepare_refuse_an_output_that_is_an_input(sample_test_file, tmp_path: Path) -> None:
    data, _ = sample_test_file
    link = tmp_path / "alias.jsonl"
    link.symlink_to(data)
    result = runner.invoke(app, ["augment", "--data", str(data), "--out", str(link)])
    _one_line_exit_2(result, "is the input given as --data")
    raw = tmp_path / "raw"
    raw.mkdir()
    from ragtruth_spans.data.ragtruth import sample_data_dir

    for name in ("response.jsonl", "source_info.jsonl"):
        (raw / name).write_bytes((sample_data_dir() / name).read_bytes())
    (raw / "test.jsonl").symlink_to(raw / "response.jsonl")  # prepare would write test.jsonl over response.jsonl
    before = (raw / "response.jsonl").read_bytes()
    result = runner.invoke(app, ["prepare", "--ragtruth-dir", str(raw), "--out", str(raw)])
    _one_line_exit_2(result, "is the input given as --ragtruth-dir")
    assert (raw / "response.jsonl").read_bytes() == before


@pytest.mark.parametrize(("device", "kind"), [("/dev/null", "a character device"),
                                              ("/dev/full", "a character device")])
def test_devices_are_refused_and_named_never_replaced(scored, device: str, kind: str) -> None:
    data, pred = scored
    if not Path(device).exists():
        pytest.skip(f"{device} does not exist here")
    result = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", str(pred), "--json", device])
    _one_line_exit_2(result, f"is {kind}", "not a regular file")
    assert Path(device).is_char_device()
    result = runner.invoke(app, ["-q", "predict", "--model", "flag-none", "--data", str(data), "--out", device])
    assert result.exit_code == 2 and f"is {kind}" in result.output
    assert not Path(device + ".meta.json").exists() and not Path(device + ".lock").exists()


def test_a_fifo_is_refused_before_any_work(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"is a FIFO \(named pipe\), not a regular file"):
        check_output_path(fifo, field="--out")
    with pytest.raises(InputError, match="is a FIFO"):
        atomic_write_text(fifo, "x")  # the writer itself never replaces one either
    assert fifo.is_fifo()


def test_a_symbolic_link_is_written_through_and_kept(scored, tmp_path: Path) -> None:
    data, pred = scored
    target = tmp_path / "real" / "report.json"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "report-link.json"
    link.symlink_to(target)
    result = runner.invoke(app, ["evaluate", "--gold", str(data), "--pred", str(pred), "--json", str(link)])
    assert result.exit_code == 0, result.output
    assert link.is_symlink() and link.resolve() == target.resolve()
    assert json.loads(target.read_text(encoding="utf-8"))["overall"]  # the target got the report, not a stale copy


def test_the_lock_is_keyed_on_the_resolved_path(tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    link = tmp_path / "other-name.jsonl"
    link.symlink_to(out)
    with exclusive_output(out), pytest.raises(InputError, match="another process is writing this file"), \
            exclusive_output(link):
        pass
    with exclusive_output(tmp_path / "." / "pred.jsonl"), pytest.raises(InputError, match="another process"), \
            exclusive_output(out):
        pass


def test_predict_never_touches_a_file_it_did_not_write(sample_test_file, tmp_path: Path) -> None:
    data, _ = sample_test_file
    two_lines = tmp_path / "notes.txt"
    two_lines.write_bytes(b"first line\nsecond line without newline")
    one_line = tmp_path / "one.txt"
    one_line.write_bytes(b'{"id": "not-a-prediction"}')
    for victim in (two_lines, one_line):
        before = victim.read_bytes()
        result = runner.invoke(app, ["-q", "predict", "--model", "flag-none", "--data", str(data), "--out",
                                     str(victim)])
        assert result.exit_code == 2 and "left untouched" in result.output, result.output
        assert victim.read_bytes() == before and not Path(str(victim) + ".meta.json").exists()


def test_predict_out_equal_to_data_leaves_the_data_alone(sample_test_file) -> None:
    data, _ = sample_test_file
    data.write_bytes(data.read_bytes().rstrip(b"\n"))  # no final newline: the old repair appended one
    before = data.read_bytes()
    result = runner.invoke(app, ["-q", "predict", "--model", "flag-none", "--data", str(data), "--out", str(data)])
    _one_line_exit_2(result, "is the input given as --data")
    assert data.read_bytes() == before


def test_predict_meta_with_a_detector_that_is_not_an_object_is_a_clean_error(scored) -> None:
    data, pred = scored
    sidecar = Path(str(pred) + ".meta.json")
    meta = json.loads(sidecar.read_text(encoding="utf-8"))
    before = pred.read_bytes()
    for bogus in (["numbers"], "numbers"):
        sidecar.write_text(json.dumps(meta | {"detector": bogus}), encoding="utf-8")
        result = runner.invoke(app, ["-q", "predict", "--model", "flag-none", "--data", str(data), "--out", str(pred)])
        _one_line_exit_2(result, "field 'detector': must be a JSON object")
        assert pred.read_bytes() == before


def test_the_torn_last_line_is_repaired_only_for_a_predictions_file_of_this_run(scored) -> None:
    data, pred = scored
    lines = pred.read_bytes().splitlines(keepends=True)
    pred.write_bytes(b"".join(lines[:3]) + b'{"id": "x", "spa')
    with pytest.raises(InputError, match="differs in"):  # another detector: refused, and the file is untouched
        predict_file("flag-all", data, pred, progress=False)
    assert pred.read_bytes().endswith(b'"spa')
    summary = predict_file("flag-none", data, pred, progress=False)
    assert summary.repaired_last_line and summary.skipped_done == 3


def test_predict_out_dev_stdout_into_a_pipe_is_refused_at_once(sample_test_file, tmp_path: Path) -> None:
    """``predict --out /dev/stdout | cat`` used to hang and leave a lock behind; now it is refused (a FIFO)."""
    import subprocess
    import sys

    data, _ = sample_test_file
    repo = str(Path(__file__).resolve().parents[2])  # this checkout's code, whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "ragtruth_spans", "-q", "predict", "--model", "flag-none", "--data",
                           str(data), "--out", "/dev/stdout"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env=env)
    assert done.returncode == 2 and "is a FIFO (named pipe)" in done.stderr, done.stderr
    assert done.stdout == "" and not list(tmp_path.glob("*.lock"))


def test_a_ragtruth_folder_input_protects_its_files_not_the_whole_folder(scored, tmp_path: Path) -> None:
    from ragtruth_spans.data.ragtruth import sample_data_dir

    _, pred = scored
    raw = tmp_path / "raw"
    raw.mkdir()
    for name in ("response.jsonl", "source_info.jsonl"):
        (raw / name).write_bytes((sample_data_dir() / name).read_bytes())
    before = (raw / "response.jsonl").read_bytes()
    result = runner.invoke(app, ["evaluate", "--gold", str(raw), "--pred", str(pred), "--allow-missing",
                                 "--json", str(raw / "response.jsonl")])
    _one_line_exit_2(result, "is the input given as --gold")
    assert (raw / "response.jsonl").read_bytes() == before
    for _ in range(2):  # another file in that folder may be written, and rewritten
        result = runner.invoke(app, ["evaluate", "--gold", str(raw), "--pred", str(pred), "--allow-missing",
                                     "--json", str(raw / "report.json")])
        assert result.exit_code == 0, result.output
