"""Writing files safely: atomic replacement, one writer per output, and output paths checked before any work.

- :func:`atomic_write_text` / :func:`atomic_write_bytes` / :func:`atomic_write_json` write to a temporary file in
  the same folder, flush it to disk, then ``os.replace`` it over the target: a reader (or a crash) sees the old
  file or the new one, never a torn mix.
- :func:`exclusive_output` holds an advisory lock (``PATH.lock``, ``flock`` where the platform has it) for as long as
  one process writes ``PATH``; a second writer is refused at once with an :class:`InputError` naming the holder
  (:mod:`ragtruth_spans.core.locks`, which also has the readers' lock).
- :func:`check_output_path` is the one output policy of every command that writes, applied before any work: the
  path is resolved (symbolic links followed: a link is written *through*, its target replaced and the link kept);
  an output that resolves to an input of the command (also through ``./``, links or hard links) is refused; so is
  anything that is not a regular file (a FIFO, a character or block device such as ``/dev/null``, ``/dev/full``
  or ``/dev/stdout``, a socket), a folder, or a place where no file can be created. It returns the resolved path,
  which is what the writer then locks and replaces.

Every failure to write is an :class:`InputError` (one line naming the file), never an ``OSError`` traceback; a
writer that appends (``predict``) does so through :func:`append_text`.
Folders written whole (a prepared directory) follow :mod:`ragtruth_spans.core.directories`.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.locks import LOCK_SUFFIX, exclusive_output, lock_path, real_path, shared_reading

__all__ = [
    "LOCK_SUFFIX",
    "append_text",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "atomic_writer",
    "check_output_path",
    "exclusive_output",
    "lock_path",
    "real_path",
    "same_file",
    "shared_reading",
]


def _kind_of(mode: int) -> str | None:
    """What a non-regular file is (None for a regular file)."""
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return None if stat.S_ISREG(mode) else "not a regular file"


def _mode(path: Path) -> int | None:
    """The mode of what ``path`` names, links followed (``/dev/stdout`` → the pipe or terminal behind it); None
    when nothing is there."""
    try:
        return os.stat(path).st_mode
    except OSError:
        return None


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name the same file: the same resolved path, or the same inode (a hard link)."""
    if real_path(a) == real_path(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def check_output_path(path: str | Path, *, field: str | None = None,
                      inputs: Mapping[str, str | Path | None] | Iterable[tuple[str, str | Path | None]] | None = None
                      ) -> Path:
    """The output policy (module docstring): the resolved path of ``path`` if a file can be written there, else
    :class:`InputError` saying why. ``inputs``: ``{flag: path}`` (or ``(flag, path)`` pairs) of the files the command
    reads (for a folder input, pass the files read from it); an output resolving to one of them is refused."""
    given = Path(path)
    real = real_path(given)
    through = f" (through the symbolic link {given})" if real != Path(os.path.abspath(given)) and given.is_symlink() \
        else ""
    mode = _mode(given)
    if mode is not None and stat.S_ISDIR(mode):
        raise InputError("is a folder, not a file", path=given, field=field)
    if mode is not None and (kind := _kind_of(mode)) is not None:
        raise InputError(f"is {kind}{through}, not a regular file: outputs are written only to regular files "
                         "(they are replaced atomically); give a file path", path=given, field=field)
    pairs = inputs.items() if isinstance(inputs, Mapping) else (inputs or ())
    for flag, source in pairs:
        if source is None:
            continue
        if same_file(real, source):
            raise InputError(f"is the input given as {flag}{through}: an output never replaces an input; choose "
                             "another path", path=given, field=field)
    ancestor = real.parent
    while not ancestor.exists():
        if ancestor == ancestor.parent:
            break
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        raise InputError(f"cannot write here: {ancestor} is a file, not a folder", path=given, field=field)
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise InputError(f"cannot write here: the folder {ancestor} is not writable", path=given, field=field)
    if real.exists() and not os.access(real, os.W_OK):
        raise InputError("cannot write here: the file is not writable", path=given, field=field)
    return real


def _target(path: str | Path) -> Path:
    """Where a writer puts ``path``: its resolved path (a link is written through); anything there that is not a
    regular file is refused (never replaced by one)."""
    real = real_path(path)
    mode = _mode(Path(path))
    kind = _kind_of(mode) if mode is not None else None
    if kind is not None:
        raise InputError(f"is {kind}, not a regular file: outputs are written only to regular files", path=path)
    return real


@contextlib.contextmanager
def atomic_writer(path: str | Path, mode: str = "w") -> Iterator[IO[Any]]:
    """A file handle (``"w"``: UTF-8 text, ``"wb"``: bytes) on a temporary file beside ``path``; when the block
    ends without an exception the file is flushed to disk and renamed over ``path`` (keeping the mode of an existing
    file), otherwise it is removed and ``path`` is untouched. A symbolic link is written through (its target is
    replaced, the link kept); a FIFO, device or folder is refused, never replaced. An OS failure raises
    :class:`InputError`."""
    path = _target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    done = False
    try:
        with os.fdopen(fd, mode, **({"encoding": "utf-8"} if "b" not in mode else {})) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.is_file() else 0o666 & ~_umask())
        os.replace(tmp, path)
        done = True
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path=path) from None
    except UnicodeEncodeError as exc:
        raise InputError(f"cannot write: the text holds a lone surrogate (character {exc.start})",
                         path=path) from None
    finally:
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (:func:`atomic_writer`), creating parent folders."""
    with atomic_writer(path, "wb") as fh:
        fh.write(data)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_text(path: str | Path, text: str) -> None:
    """Replace ``path`` by ``text`` (UTF-8) atomically; see :func:`atomic_write_bytes`."""
    with atomic_writer(path) as fh:
        fh.write(text)


def atomic_write_json(path: str | Path, obj: Any) -> None:
    """Replace ``path`` by ``obj`` as indented UTF-8 JSON (non-ASCII kept as is) atomically."""
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")




def append_text(path: str | Path, text: str, *, hint: str = "") -> None:
    """Append ``text`` (UTF-8) to ``path`` and flush it. A failure to write (a full disk, a file-size limit, a
    read-only file system, a permission) is one :class:`InputError` naming the file, followed by ``hint`` (what to
    do then, e.g. how to resume); what was appended before the failure stays, at most its last line cut."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}{hint}", path=path) from None
