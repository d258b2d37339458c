"""One writer per run directory — a second ``train`` into a directory that a running
``train`` holds is refused at once with the holder named, whatever its settings; a killed run still resumes; and a
run is read under the same lock, so that loading a run while ``train --overwrite`` replaces it is either a clear
error or a consistent read, never a raw ``FileNotFoundError``."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

import ragtruth_spans.detectors.train as train_module
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import exclusive_output, lock_path
from ragtruth_spans.detectors.family import Family, register_family
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.rules import FlagNoneDetector
from ragtruth_spans.runs.run_dir import write_run_files

KIND = "lock-test"


def recipe(out: Path, **training):
    return validate_recipe({"model": {"name_or_path": "tiny"}, "output_dir": str(out),
                            "training": {"max_steps": 3, **training}})


class FakeFamily:
    """A family whose training writes a weights file and its run files, optionally waiting on a gate first."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.resumed: list[bool] = []

    def train(self, recipe, *, resume, fingerprint):
        self.resumed.append(resume)
        out = Path(recipe.output_dir)
        self.started.set()  # the directory holds only fingerprint.json while it trains
        assert self.gate.wait(30)
        (out / "weights.bin").write_bytes(str(recipe.training.learning_rate).encode())
        return write_run_files(out, recipe, {"kind": KIND}, fingerprint=fingerprint, trained_on=None)

    def family(self) -> Family:
        return Family(kind="generative", summary="test", train=self.train, extra=None)


@pytest.fixture()
def fake(monkeypatch) -> FakeFamily:
    fake = FakeFamily()
    monkeypatch.setattr(train_module, "get_family", lambda kind: fake.family())
    monkeypatch.setattr(train_module, "require", lambda *a, **k: None)
    return fake


def _in_thread(target, *args, **kwargs) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target(*args, **kwargs)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, errors


def test_a_second_train_into_a_running_run_is_refused_with_the_holder_named(tmp_path: Path, fake) -> None:
    """While one train runs, a second of other settings may not start in the same directory."""
    out = tmp_path / "run"
    fake.gate.clear()
    thread, errors = _in_thread(train_module.train, recipe(out), overwrite=False)
    assert fake.started.wait(30)
    for kwargs in ({}, {"overwrite": True}, {"resume": True}):
        with pytest.raises(InputError, match=rf"run: another process is writing this folder \(pid {os.getpid()}"):
            train_module.train(recipe(out, learning_rate=1e-3), **kwargs)
    fake.gate.set()
    thread.join(30)
    assert not errors
    assert (out / "weights.bin").read_bytes() == str(recipe(out).training.learning_rate).encode()
    assert (out / "run_info.json").is_file() and not lock_path(out).exists()


def test_a_killed_run_still_resumes_and_overwrite_still_starts_over(tmp_path: Path, fake, monkeypatch) -> None:
    out = tmp_path / "run"

    def killed(recipe, *, resume, fingerprint):
        fake.resumed.append(resume)
        (Path(recipe.output_dir) / "checkpoint-1").mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(train_module, "get_family", lambda kind: Family(kind="generative", summary="t",
                                                                         train=killed, extra=None))
    with pytest.raises(KeyboardInterrupt):
        train_module.train(recipe(out))
    assert not lock_path(out).exists()  # a killed writer leaves no lock that refuses the next one
    monkeypatch.setattr(train_module, "get_family", lambda kind: fake.family())
    train_module.train(recipe(out))
    assert fake.resumed == [False, True] and (out / "run_info.json").is_file()
    train_module.train(recipe(out, learning_rate=1e-3), overwrite=True)
    assert fake.resumed == [False, True, False] and (out / "weights.bin").read_bytes() == b"0.001"


@pytest.fixture()
def lock_family():
    """A family whose load reads every file of its run (slowly, between a gate), registered for the test."""
    family = SlowLoad()
    register_family(Family(kind=KIND, summary="test", load=family.load, extra=None))
    yield family
    from ragtruth_spans.detectors.family import _registered

    _registered.pop(KIND, None)


class SlowLoad:
    def __init__(self) -> None:
        self.reading = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def load(self, run_dir, **options):
        self.reading.set()
        assert self.gate.wait(30)
        (Path(run_dir) / "weights.bin").read_bytes()
        return FlagNoneDetector()


def _finished_run(out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "fingerprint.json").write_text('{"fingerprint": "x"}', encoding="utf-8")
    (out / "weights.bin").write_bytes(b"w" * 100)
    write_run_files(out, recipe(out), {"kind": KIND}, trained_on=None)
    return out


def test_a_run_being_written_is_a_clear_error_naming_the_writer(tmp_path: Path, lock_family) -> None:
    """Loading a run while train --overwrite replaces it is a clear error, never a raw FileNotFoundError."""
    run = _finished_run(tmp_path / "run")
    held, release = threading.Event(), threading.Event()

    def writer() -> None:
        with exclusive_output(run):
            held.set()
            release.wait(30)

    thread, errors = _in_thread(writer)
    assert held.wait(30)
    try:
        with pytest.raises(InputError, match=rf"run: another process is writing this \(pid {os.getpid()}.*wait for "
                                             "it and try again"):
            load_detector(run)
    finally:
        release.set()
        thread.join(30)
    assert not errors and load_detector(run).kind == FlagNoneDetector.kind
    assert not lock_path(run).exists()  # the reader removed the lock file it made


def test_overwrite_waits_for_a_load_in_progress(tmp_path: Path, lock_family, fake) -> None:
    run = _finished_run(tmp_path / "run")
    lock_family.gate.clear()
    thread, errors = _in_thread(load_detector, run)
    assert lock_family.reading.wait(30)
    trainer, train_errors = _in_thread(train_module.train, recipe(run, learning_rate=1e-3), overwrite=True)
    time.sleep(0.5)
    assert (run / "weights.bin").read_bytes() == b"w" * 100 and not fake.started.is_set()  # the writer waits
    lock_family.gate.set()
    thread.join(30)
    trainer.join(30)
    assert not errors and not train_errors  # the load read the whole old run; then the run was replaced
    assert (run / "weights.bin").read_bytes() == b"0.001"


def test_loads_racing_overwrites_never_see_a_missing_file(tmp_path: Path, lock_family, fake) -> None:
    run = _finished_run(tmp_path / "run")
    stop = threading.Event()
    raw: list[BaseException] = []

    def overwrite_forever() -> None:
        while not stop.is_set():
            train_module.train(recipe(run, learning_rate=1e-3), overwrite=True)

    trainer, train_errors = _in_thread(overwrite_forever)
    loads = clear = 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            load_detector(run)
            loads += 1
        except InputError:
            clear += 1  # being written, or an unfinished run: said in one line
        except Exception as exc:  # a raw FileNotFoundError (the defect)
            raw.append(exc)
        time.sleep(0.01)  # let the writer in between loads
    stop.set()
    trainer.join(30)
    assert not raw, raw[:3]
    assert not [e for e in train_errors if not isinstance(e, InputError)]
    assert loads + clear > 0


def _prepared(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for split in ("train", "dev", "test"):
        (folder / f"{split}.jsonl").write_text("", encoding="utf-8")
    return folder


def test_a_run_directory_never_holds_or_is_its_training_data(tmp_path: Path, fake) -> None:
    """The output policy of every directory writer, for train: checked before the data is read (hashed)."""
    data = _prepared(tmp_path / "run" / "data")  # inside a run that --overwrite would delete
    run = tmp_path / "run"
    (run / "fingerprint.json").write_text('{"fingerprint": "old"}', encoding="utf-8")

    def with_data(out: Path, prepared: Path):
        return validate_recipe({"model": {"name_or_path": "tiny"}, "output_dir": str(out),
                                "data": {"prepared_dir": str(prepared)}})

    with pytest.raises(InputError, match=r"output_dir'?: holds the input given as data.prepared_dir"):
        train_module.train(with_data(run, data), overwrite=True)
    assert (data / "train.jsonl").is_file()
    with pytest.raises(InputError, match="is the input given as data.prepared_dir"):
        train_module.train(with_data(data, data))
    with pytest.raises(InputError, match="is the input given as data.prepared_dir"):
        train_module.train(with_data(Path(f"{data}/./"), data))
    blocker = tmp_path / "a-file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="a-file is a file, not a folder"):
        train_module.train(with_data(blocker / "run", data))
    assert not fake.resumed  # refused before training
