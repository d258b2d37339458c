"""Every writer of a prepared directory (``import``, ``prepare``) checks its output
before reading any input, never replaces an input or a folder holding one, builds the directory beside the target
and swaps it in whole (a failed import leaves the old directory as it was), and holds one lock on it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import exclusive_output, lock_path

runner = CliRunner()
CONTEXT = "The museum opened in 1999 in Lyon. It holds 300 paintings."


def _rows(n: int, offset: int = 0) -> list[dict]:
    return [{"context": f"{CONTEXT} Room {i + offset}.", "response": f"It opened in {1990 + i}.",
             "spans": [{"start": 13, "end": 17}], "source_id": f"s{i + offset}"} for i in range(n)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _one_line_exit_2(result, *messages: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1, result.output
    for message in messages:
        assert message in result.output, result.output


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _import(src: Path, out: Path, *extra: str):
    return runner.invoke(app, ["import", "jsonl", "--in", str(src), "--out", str(out), *extra])


def test_an_import_never_replaces_the_folder_that_holds_its_input(tmp_path: Path) -> None:
    """``--in DIR/train.jsonl --out DIR`` must not replace the input (it once did: 20 records became 14, exit 0)."""
    folder = tmp_path / "data"
    folder.mkdir()
    src = _jsonl(folder / "train.jsonl", _rows(20))
    before = src.read_bytes()
    result = _import(src, folder)
    _one_line_exit_2(result, "holds the input given as --in")
    assert src.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["train.jsonl"]
    result = _import(src, Path(f"{folder}/./"))  # the same folder by another spelling
    _one_line_exit_2(result, "holds the input given as --in")
    assert src.read_bytes() == before


@pytest.mark.parametrize("where", ["same", "inside"])
def test_an_import_never_writes_into_an_input_folder(tmp_path: Path, where: str) -> None:
    source = tmp_path / "summedits"
    source.mkdir()
    (source / "summedits_news.json").write_text("[]", encoding="utf-8")
    out = source if where == "same" else source / "prepared"
    result = runner.invoke(app, ["import", "summedits", "--in", str(source), "--out", str(out)])
    _one_line_exit_2(result, "--in")
    assert sorted(p.name for p in source.iterdir()) == ["summedits_news.json"]


def test_a_non_prepared_folder_is_never_replaced(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "mine.jsonl", _rows(6))
    out = tmp_path / "photos"
    out.mkdir()
    (out / "holiday.jpg").write_bytes(b"...")
    result = _import(src, out)
    _one_line_exit_2(result, "holiday.jpg", "not a prepared directory")
    assert _snapshot(out) == {"holiday.jpg": b"..."}


def test_the_output_is_checked_before_the_input_is_read(tmp_path: Path) -> None:
    """A bad ``--out`` is found before reading the input (not after it, as a NotADirectoryError traceback)."""
    bad_input = _jsonl(tmp_path / "bad.jsonl", [{"context": CONTEXT, "response": "x"}])  # no spans: an error
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    result = _import(bad_input, blocker / "out")
    _one_line_exit_2(result, "a-file is a file, not a folder")
    result = _import(bad_input, blocker)
    _one_line_exit_2(result, "the output path exists and is not a directory")


def test_an_unwritable_parent_is_refused_before_reading(tmp_path: Path, monkeypatch) -> None:
    bad_input = _jsonl(tmp_path / "bad.jsonl", [{"context": CONTEXT, "response": "x"}])
    locked = tmp_path / "readonly"
    locked.mkdir()
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root writes anywhere: the folder is read-only as the check sees it
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: (Path(path) != locked or not mode & os.W_OK)
                            and real_access(path, mode, **kw))
    try:
        result = _import(bad_input, locked / "out")
        _one_line_exit_2(result, "not writable")
    finally:
        locked.chmod(0o755)


def test_a_failed_import_leaves_the_previous_directory_whole(tmp_path: Path, monkeypatch) -> None:
    """A disk full while writing test.jsonl must not leave train/dev of the new import beside test.jsonl and
    stats.json of the old one, unmarked."""
    out = tmp_path / "prepared"
    first = _jsonl(tmp_path / "first.jsonl", _rows(20))
    assert _import(first, out).exit_code == 0
    before = _snapshot(out)
    import ragtruth_spans.data.imported as imported

    real_write = imported.write_records

    def disk_full(path, records):
        if Path(path).name == "test.jsonl":
            raise InputError("cannot write: No space left on device", path=path)
        return real_write(path, records)

    monkeypatch.setattr(imported, "write_records", disk_full)
    second = _jsonl(tmp_path / "second.jsonl", _rows(30, offset=100))
    result = _import(second, out)
    _one_line_exit_2(result, "No space left on device")
    assert _snapshot(out) == before  # the old import, whole: nothing of the new one
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.jsonl", "prepared", "second.jsonl"]
    monkeypatch.setattr(imported, "write_records", real_write)
    assert _import(second, out).exit_code == 0  # and the same command again just works
    assert json.loads((out / "stats.json").read_text(encoding="utf-8"))["input"] == 30


def test_a_building_folder_left_by_a_killed_import_is_removed_by_the_next(tmp_path: Path) -> None:
    out = tmp_path / "my [data]"  # a name with glob characters
    left = tmp_path / ".my [data].building-x1y2"
    left.mkdir()
    (left / "train.jsonl").write_text("half", encoding="utf-8")
    assert _import(_jsonl(tmp_path / "mine.jsonl", _rows(6)), out).exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.jsonl", "my [data]"]


def test_a_second_writer_of_a_prepared_directory_is_refused_with_the_holder_named(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "mine.jsonl", _rows(6))
    out = tmp_path / "prepared"
    with exclusive_output(out):
        result = _import(src, out)
        _one_line_exit_2(result, "another process is writing this folder", f"pid {os.getpid()}")
        result = runner.invoke(app, ["prepare", "--sample", "--out", str(out), "--dev-per-task", "1"])
        _one_line_exit_2(result, "another process is writing this folder", f"pid {os.getpid()}")
    assert not out.exists()
    assert _import(src, out).exit_code == 0 and not lock_path(out).exists()


def test_prepare_swaps_in_a_whole_directory_and_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "prepared"
    result = runner.invoke(app, ["prepare", "--sample", "--out", str(out), "--dev-per-task", "1"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["dev.jsonl", "stats.json", "test.jsonl", "train.jsonl"]
    assert out.stat().st_mode & 0o777 == 0o777 & ~_umask()
    result = runner.invoke(app, ["prepare", "--sample", "--out", str(out), "--dev-per-task", "2"])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "stats.json").read_text(encoding="utf-8"))["dev_per_task"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prepared"]  # no building or old folder left


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
