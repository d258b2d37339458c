"""Advisory locks on outputs: one writer at a time, readers never see a half-replaced output.

The lock of ``PATH`` (a file or a folder) is ``PATH.lock`` beside it, keyed on the resolved path (two names of one
output, through a symbolic link or ``./``, exclude each other), taken with ``flock`` where the platform has it.

- :func:`exclusive_output` (a **writer**: ``predict``'s ``--out``, ``import``/``prepare``'s folder, ``train``'s
  run directory) holds the lock exclusively for the whole write and records who it is (pid, host, command) in the
  lock file. A second writer is refused at once with an :class:`InputError` naming that holder. Readers in the
  middle of a read (below) are waited for, up to ``wait_for_readers`` seconds: a read takes seconds, a write hours.
- :func:`shared_reading` (a **reader**: loading a run directory) holds the lock shared while it reads, so that a
  writer (``train --overwrite``) never deletes files under it; while a writer holds the lock, the reader is refused
  at once with the holder named, instead of failing later on a missing file. A reader creates no lock file where
  it cannot write (a run in a read-only place, which no writer there can replace either) and removes the lock file
  it created when no one else holds it.

A process never waits for itself: a lock this thread already holds on a folder covers what it reads inside it
(a stacked run's members while it trains or loads).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from ragtruth_spans.core.errors import InputError

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: the lock file is created exclusively instead
    fcntl = None  # type: ignore[assignment]

LOCK_SUFFIX = ".lock"
_held = threading.local()


def real_path(path: str | Path) -> Path:
    """``path`` with every symbolic link, ``.`` and ``..`` resolved (a dangling link resolves to its target)."""
    return Path(os.path.realpath(Path(path).expanduser()))


def lock_path(path: str | Path) -> Path:
    """The advisory lock file of an output: ``PATH.lock``."""
    return Path(str(path) + LOCK_SUFFIX)


def _held_paths() -> dict[Path, str]:
    if not hasattr(_held, "paths"):
        _held.paths = {}
    return _held.paths


def _covered(path: Path) -> bool:
    """Whether this thread already holds a lock on ``path`` or a folder above it."""
    return any(path == held or held in path.parents for held in _held_paths())


def _program() -> str:
    """How this process was started, as a person would type it (``ragtruth-spans``, ``python -m ragtruth_spans``)."""
    first = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path("python")
    return f"python -m {first.parent.name}" if first.name == "__main__.py" else first.name


def _me() -> str:
    command = " ".join([_program(), *sys.argv[1:]])
    return json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "command": command[:300]})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _holder(lock: Path) -> dict | None:
    """The writer recorded in a lock file, or None (no writer: readers only, an empty file, or a writer of this
    host whose process is gone)."""
    try:
        holder = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(holder, dict) or not isinstance(holder.get("pid"), int):
        return None
    if holder.get("host") == socket.gethostname() and not _alive(holder["pid"]):
        return None
    return holder


def _who(holder: dict | None) -> str:
    """``pid N on HOST, command: ...`` of a recorded writer (empty when none is recorded)."""
    if holder is None:
        return ""
    return f"pid {holder['pid']} on {holder.get('host', '?')}, command: {holder.get('command', '?')}; "


def _busy(path: Path, holder: dict | None, what: str) -> InputError:
    return InputError(f"another process is writing this {what} ({_who(holder)}lock {lock_path(path).name}); wait "
                      "for it to finish or choose another output", path=path)


def _open(lock: Path, path: Path, flags: int) -> int:
    try:
        return os.open(lock, flags, 0o644)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None


def _current(lock: Path, fd: int) -> bool:
    """Whether ``fd`` (locked) is still the file at ``lock``: a holder removes it on release, and an opener that
    got the old one must lock the new one."""
    try:
        return os.stat(lock).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def exclusive_output(path: str | Path, *, wait_for_readers: float = 60.0, what: str | None = None) -> Iterator[Path]:
    """Hold the exclusive lock of output ``path`` (a file or a folder) while the block runs: one writer per output
    (module docstring). A second writer (another process, or another block of this one) gets :class:`InputError`
    at once, naming the holder; readers are waited for up to ``wait_for_readers`` seconds. The lock file is
    removed on release. ``what`` names the output in messages ("file", "folder"; default: what is there now).
    Yields the resolved path."""
    path = real_path(path)
    lock = lock_path(path)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    what = what or ("folder" if path.is_dir() else "file")
    fd = _acquire_exclusive(path, lock, wait_for_readers, what)
    _held_paths()[path] = "write"
    try:
        yield path
    finally:
        _held_paths().pop(path, None)
        with contextlib.suppress(OSError):
            os.unlink(lock)  # still holding the lock: a waiting opener re-checks the inode (_current)
        os.close(fd)


def _acquire_exclusive(path: Path, lock: Path, wait_for_readers: float, what: str) -> int:
    if fcntl is None:  # pragma: no cover
        try:
            return os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            raise _busy(path, None, what) from None
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    deadline = time.monotonic() + wait_for_readers
    while True:
        fd = _open(lock, path, os.O_CREAT | os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = _holder(lock)
            if holder is not None:
                raise _busy(path, holder, what) from None  # a writer: refused at once
            if time.monotonic() >= deadline:  # readers: waited for, up to the deadline
                raise InputError(f"other processes are still reading this {what} after {wait_for_readers:g} s (lock "
                                 f"{lock.name} is held shared, e.g. by a predict loading it); wait for them to "
                                 "finish", path=path) from None
            time.sleep(0.05)
            continue
        if _current(lock, fd):
            os.ftruncate(fd, 0)
            os.write(fd, (_me() + "\n").encode())
            return fd
        os.close(fd)


@contextlib.contextmanager
def shared_reading(path: str | Path) -> Iterator[Path]:
    """Hold the shared lock of ``path`` while the block reads it (module docstring): a writer holding the lock is
    one :class:`InputError` naming it; a writer that comes later waits for this block to end. Yields the resolved
    path."""
    path = real_path(path)
    if fcntl is None or _covered(path):
        yield path
        return
    lock = lock_path(path)
    fd = _acquire_shared(path, lock)
    if fd is None:  # nowhere to put a lock: no writer can replace the folder either
        yield path
        return
    _held_paths()[path] = "read"
    try:
        yield path
    finally:
        _held_paths().pop(path, None)
        try:  # the last reader out removes the lock file (an exclusive lock proves no one else holds it)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if _current(lock, fd):
                os.unlink(lock)
        except OSError:
            pass
        os.close(fd)


def _acquire_shared(path: Path, lock: Path, patience: float = 5.0) -> int | None:
    """A file descriptor holding ``lock`` shared (None: no lock file can be made or opened). Refused at once while
    a writer recorded in the file holds it; a moment without a recorded writer (another reader removing the file
    as it leaves, a writer between its lock and its record) is waited out, up to ``patience`` seconds."""
    deadline = time.monotonic() + patience
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
                raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None
            try:
                fd = os.open(lock, os.O_RDONLY)
            except OSError:
                return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            holder = _holder(lock)
            if holder is not None or time.monotonic() >= deadline:
                raise InputError(f"another process is writing this ({_who(holder)}lock {lock.name}): it cannot be "
                                 "read until that ends; wait for it and try again", path=path) from None
            time.sleep(0.02)
            continue
        if _current(lock, fd):
            return fd
        os.close(fd)
