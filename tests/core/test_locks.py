"""The locks every writer and every run reader share — a writer in another process is named (pid,
host, command) and refused at once; a lock file left by a killed writer locks nothing; readers share the lock,
a writer waits for them (up to a deadline) and a reader is refused while a writer holds it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.locks import exclusive_output, lock_path, shared_reading

REPO = Path(__file__).resolve().parents[2]


def test_a_writer_in_another_process_is_named_and_refused_at_once(tmp_path: Path) -> None:
    out = tmp_path / "prepared"
    code = ("import sys, time; from ragtruth_spans.core.locks import exclusive_output\n"
            f"with exclusive_output({str(out)!r}):\n    print('held', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, "--my-flag"], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(InputError) as info, exclusive_output(out):
            pass
        assert time.monotonic() - started < 2  # at once, not after the readers' deadline
        message = str(info.value)
        assert f"pid {holder.pid} on {socket.gethostname()}" in message and "--my-flag" in message, message
        with pytest.raises(InputError, match=f"another process is writing this .*pid {holder.pid}"), \
                shared_reading(out):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(30)
    recorded = json.loads(lock_path(out).read_text(encoding="utf-8"))
    assert recorded["pid"] == holder.pid  # killed: its lock file stays, and locks nothing
    with exclusive_output(out):
        assert json.loads(lock_path(out).read_text(encoding="utf-8"))["pid"] == os.getpid()
    assert not lock_path(out).exists()


def test_readers_share_and_a_writer_waits_for_them(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    order: list[str] = []
    reading, release = threading.Event(), threading.Event()

    def reader() -> None:
        with shared_reading(run):
            reading.set()
            release.wait(30)
            order.append("read")

    thread = threading.Thread(target=reader)
    thread.start()
    assert reading.wait(30)
    with shared_reading(run):  # a second reader is not refused
        pass
    threading.Timer(0.3, release.set).start()
    with exclusive_output(run, wait_for_readers=30):
        order.append("write")
    thread.join(30)
    assert order == ["read", "write"] and not lock_path(run).exists()
    reading.clear()
    release.clear()
    thread = threading.Thread(target=reader)
    thread.start()
    assert reading.wait(30)
    try:
        with pytest.raises(InputError, match=r"other processes are still reading this folder after 0.2 s"), \
                exclusive_output(run, wait_for_readers=0.2):
            pass
    finally:
        release.set()
        thread.join(30)


def test_a_thread_never_waits_for_its_own_lock_on_a_folder_above(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "members" / "m").mkdir(parents=True)
    with exclusive_output(run), shared_reading(run / "members" / "m"):
        assert not lock_path(run / "members" / "m").exists()  # covered by the lock this thread holds


def test_many_readers_at_once_are_never_refused(tmp_path: Path) -> None:
    """Readers that come and go together (Ray actors loading one run): one leaving removes the lock file under an
    exclusive lock for a moment, which the others wait out instead of reading it as a writer."""
    run = tmp_path / "run"
    run.mkdir()
    errors: list[BaseException] = []

    def read_many() -> None:
        try:
            for _ in range(200):
                with shared_reading(run):
                    pass
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=read_many) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors[:2]
    assert not lock_path(run).exists()
