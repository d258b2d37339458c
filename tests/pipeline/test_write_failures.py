"""A failure to write the predictions (a full disk, a file-size limit, a read-only file system,
a permission) is one line naming the file, exit 2, and the run resumes where it stopped once the cause is gone."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import ragtruth_spans.core.files as files
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.pipeline.predict import predict_file

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def many(sample_test_file, tmp_path: Path) -> tuple[Path, set[str]]:
    """60 records (the sample's six, ten times over with new ids)."""
    _, records = sample_test_file
    more = [replace(r, id=f"{r.id}-{k}") for k in range(10) for r in records]
    path = tmp_path / "many.jsonl"
    write_records(path, more)
    return path, {r.id for r in more}


def _predict(data: Path, out: Path, fsize: int | None) -> subprocess.CompletedProcess:
    limit = (f"signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
             f"resource.setrlimit(resource.RLIMIT_FSIZE, ({fsize}, {fsize})); ") if fsize else ""
    code = (f"import resource, signal, sys; {limit}from ragtruth_spans.cli import app; "
            f"sys.argv = ['ragtruth-spans', 'predict', '--model', 'flag-none', '--data', {str(data)!r}, '--out', "
            f"{str(out)!r}, '--chunk-size', '8']; app()")
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)


def test_a_file_size_limit_is_one_line_and_the_run_resumes(many, tmp_path: Path) -> None:
    data, ids = many
    out = tmp_path / "pred.jsonl"
    done = _predict(data, out, fsize=1000)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"{out}: cannot write: File too large" in errors[0] and "run the same command again" in errors[0]
    assert 0 < out.stat().st_size <= 1000
    done = _predict(data, out, fsize=None)
    assert done.returncode == 0, done.stderr
    assert set(read_prediction_file(out).spans) == ids  # every id exactly once (a duplicate would raise)


class _Failing(io.StringIO):
    def __init__(self, code: int) -> None:
        super().__init__()
        self.code = code

    def write(self, text: str) -> int:
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES])
def test_every_write_failure_names_the_file(many, tmp_path: Path, monkeypatch, code: int) -> None:
    data, ids = many
    out = tmp_path / "pred.jsonl"
    real_open = open

    def failing_open(path, mode="r", *args, **kwargs):
        if Path(path) == out and "a" in mode:
            return _Failing(code)
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr(files, "open", failing_open, raising=False)
    with pytest.raises(InputError, match=rf"pred.jsonl: cannot write: {os.strerror(code)}.*resume"):
        predict_file("flag-none", data, out, progress=False)
    monkeypatch.undo()
    predict_file("flag-none", data, out, progress=False)
    assert set(read_prediction_file(out).spans) == ids
    assert json.loads(Path(str(out) + ".meta.json").read_text(encoding="utf-8"))["detector"]
