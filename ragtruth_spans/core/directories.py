"""Writing a whole folder (``import``'s and ``prepare``'s prepared directory): the one policy of every command that
writes a directory of files that belong together.

:func:`replace_directory` checks the output before the command reads any input (:func:`check_output_dir`),
holds the folder's lock for the whole command (one writer at a time, a second one refused at once with the holder
named: :func:`~ragtruth_spans.core.locks.exclusive_output`), lets the command write into a new folder built beside
the target (``.NAME.building-*``, same file system) and swaps it in whole when the command succeeds. A failure at
any point (a full disk while writing the last file, bad input, a kill) leaves the previous folder exactly as it
was; a building folder left by a killed writer is removed by the next one.

The output policy (:func:`check_output_dir`): the path is resolved (links followed); it may not be an input of
the command, lie inside an input folder, or hold an input (the folder is replaced whole: an input inside it would
be lost); an existing folder is replaced only when it holds nothing but the files the command writes (a folder
with other files is refused, never emptied); its parent must be a writable folder.

``train``'s run directory is the other kind of written folder: it is marked unfinished (``fingerprint.json``
without ``run_info.json``) until done and locked the same way (:mod:`ragtruth_spans.runs.run_dir`).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.locks import LOCK_SUFFIX, exclusive_output, real_path

BUILDING = ".building-"
OLD = ".old-"


def _inside(inner: Path, outer: Path) -> bool:
    return inner != outer and outer in inner.parents


def _check_inputs(given: Path, real: Path, inputs: Iterable[tuple[str, str | Path | None]],
                  field: str | None, inside_ok: bool) -> None:
    for flag, source in inputs:
        if source is None:
            continue
        source_real = real_path(source)
        if source_real == real or (real.exists() and os.path.exists(source) and os.path.samefile(real, source)):
            raise InputError(f"is the input given as {flag}: an output never replaces an input; choose another "
                             "folder", path=given, field=field)
        if _inside(real, source_real) and not inside_ok:
            raise InputError(f"is inside the input given as {flag} ({source_real}): an output is never written into "
                             "an input folder; choose a folder outside it", path=given, field=field)
        if _inside(source_real, real):
            raise InputError(f"holds the input given as {flag} ({source_real}): the folder is replaced whole, so the "
                             "input would be lost; choose another folder", path=given, field=field)


def check_output_dir(path: str | Path, *, field: str | None = None,
                     inputs: Iterable[tuple[str, str | Path | None]] = (),
                     writes: Collection[str] | None = (), inside_inputs: bool = False) -> Path:
    """The output policy of a folder written whole (module docstring): the resolved path of ``path``, or an
    :class:`InputError` saying why not. ``inputs``: ``(flag, path)`` of what the command reads (files or
    folders); ``writes``: the names of the files the command writes in it (an existing folder holding anything
    else is refused; None: the writer has its own rules for what it finds, as ``train``'s run directory)."""
    given = Path(path)
    real = real_path(given)
    if real.exists() and not real.is_dir():
        raise InputError("the output path exists and is not a directory", path=given, field=field)
    _check_inputs(given, real, inputs, field, inside_inputs)
    if real.is_dir() and writes is not None:
        try:
            names = sorted(p.name for p in real.iterdir())
        except OSError as exc:
            raise InputError(f"cannot read the folder: {exc.strerror or exc}", path=given, field=field) from None
        foreign = [name for name in names if name not in writes]
        if foreign:
            shown = ", ".join(foreign[:5]) + (" …" if len(foreign) > 5 else "")
            raise InputError(f"holds files that are not a prepared directory's ({shown}): the folder is replaced "
                             "whole, so they would be lost; choose a new or empty folder", path=given, field=field)
    ancestor = real.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise InputError(f"cannot write here: {ancestor} is a file, not a folder", path=given, field=field)
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"cannot write here: the folder {ancestor} is not writable", path=given, field=field)
    return real


@contextlib.contextmanager
def replace_directory(path: str | Path, *, field: str | None = None,
                      inputs: Iterable[tuple[str, str | Path | None]] = (),
                      writes: Collection[str] = ()) -> Iterator[Path]:
    """Check ``path`` (:func:`check_output_dir`), lock it, and yield a new empty folder beside it to write into;
    when the block ends without an exception, that folder replaces ``path`` whole (atomically where the system
    can exchange two folders); otherwise it is removed and ``path`` is untouched. A failure to write or swap is an
    :class:`InputError` naming the folder."""
    inputs = list(inputs)
    target = check_output_dir(path, field=field, inputs=inputs, writes=writes)
    with exclusive_output(target, what="folder"):
        target = check_output_dir(target, field=field, inputs=inputs, writes=writes)  # as it is now we hold it
        _remove_leftovers(target)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            building = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}{BUILDING}"))
            os.chmod(building, target.stat().st_mode & 0o7777 if target.is_dir() else 0o777 & ~_umask())
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", path=target, field=field) from None
        try:
            yield building
            _sync(building)
            _swap_in(building, target)
        finally:
            shutil.rmtree(building, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _remove_leftovers(target: Path) -> None:
    """Building and old folders of ``target`` left by a killed writer (we hold the lock: no one else uses them)."""
    if not target.parent.is_dir():
        return
    prefixes = tuple(f".{target.name}{prefix}" for prefix in (BUILDING, OLD))
    for stale in target.parent.iterdir():
        if stale.name.startswith(prefixes) and stale.is_dir() and not stale.is_symlink() \
                and not stale.name.endswith(LOCK_SUFFIX):
            shutil.rmtree(stale, ignore_errors=True)


def _sync(folder: Path) -> None:
    """Flush the folder's entries to disk (its files were flushed by their atomic writers)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _swap_in(building: Path, target: Path) -> None:
    """Put ``building`` at ``target``; the previous ``target`` (if any) ends up at ``building`` (removed by the
    caller). Atomic with ``renameat2(RENAME_EXCHANGE)`` (Linux); elsewhere two renames, with the old folder kept
    aside until the new one is in place."""
    try:
        if not target.exists():
            os.rename(building, target)
            return
        if _exchange(building, target):
            return
        aside = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}{OLD}"))
        os.rmdir(aside)
        os.rename(target, aside)
        os.rename(building, target)
        shutil.rmtree(aside, ignore_errors=True)
    except OSError as exc:
        raise InputError(f"cannot replace the folder: {exc.strerror or exc}", path=target) from None


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2``); False where the system cannot."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: this file system cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(b))
