"""A finished run's manifest: the SHA-256 of its files in ``run_info.json``, checked when it is loaded.

A finished run is what it claims to be. :func:`~ragtruth_spans.runs.run_dir.write_run_files` (the writer every family
ends with) records in ``run_info.json`` the SHA-256 of every file of the run directory (``files_sha256``: weights,
adapters, ``combiner.txt``, tokenizer files, ``recipe.yaml``, whatever a family writes now or later), except the
metadata files themselves (``run_info.json``, ``fingerprint.json``), the trainer's ``checkpoint-*`` folders (training
state, never loaded) and lock or temporary files; a nested run directory (a stacked run's members) is covered by its
own ``run_info.json``, which covers its files. ``run_info.json``'s ``fingerprint`` is the SHA-256 of everything else
in ``run_info.json`` (the training fingerprint, now ``training_fingerprint``, the manifest, the tuned decision, ...),
so it changes with any file of the run or any value read from it; it is the fingerprint ``predict``'s ``.meta.json``
and ``serve``'s ``/v1/model`` report. :func:`verify_run` checks it all when a run is loaded
(:func:`ragtruth_spans.load_detector`): a changed or missing file, or an edited ``run_info.json``, is one
:class:`InputError` naming the file. A run written before manifests existed has none: it is loaded with a warning
(its files cannot be checked; re-train it with ``--overwrite`` to get one) rather than refused, so trained runs keep
working.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.runs.run_info import FINGERPRINT_FILE, RUN_INFO_FILE, read_run_info

MANIFEST_KEY = "files_sha256"
METADATA_FILES = (RUN_INFO_FILE, FINGERPRINT_FILE)
"""Files of a run directory that describe it and so are not in its manifest (run_info.json is covered by the
fingerprint it holds)."""
NOT_IN_MANIFEST_DIRS = ("checkpoint-",)
"""Folders (by prefix) of training state that no detector loads."""


def _manifest_skips(relative: Path) -> bool:
    name = relative.name
    return name.endswith(".lock") or (name.startswith(".") and name.endswith(".tmp"))


def run_files(run_dir: str | Path) -> list[str]:
    """The files of a run directory its manifest covers (paths relative to it, ``/``-separated, sorted): every
    file except :data:`METADATA_FILES`, ``checkpoint-*`` folders, lock and temporary files; of a nested run
    directory (a folder holding its own ``run_info.json``) only that ``run_info.json``, whose fingerprint covers
    the rest."""
    root = Path(run_dir)
    found: list[str] = []
    for folder, dirs, files in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if not d.startswith(NOT_IN_MANIFEST_DIRS))
        nested = here != root and RUN_INFO_FILE in files
        for name in sorted(files):
            relative = (here / name).relative_to(root)
            if nested and name != RUN_INFO_FILE:
                continue
            if (here == root and name in METADATA_FILES) or _manifest_skips(relative):
                continue
            found.append(relative.as_posix())
        if nested:
            dirs[:] = []
    return sorted(found)


@cache
def _memoised_sha256(path: str, size: int, mtime_ns: int, inode: int) -> str | None:
    from ragtruth_spans.core.jsonl import file_sha256

    return file_sha256(path)


def file_digest(path: Path) -> str | None:
    """SHA-256 of a file, memoised per process by its path, size, modification time and inode (a run loaded
    twice, e.g. as a member, is hashed once)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return _memoised_sha256(str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)


def files_manifest(run_dir: str | Path) -> dict[str, str]:
    """``{relative path: sha256}`` of :func:`run_files`."""
    root = Path(run_dir)
    return {name: digest for name in run_files(root) if (digest := file_digest(root / name)) is not None}


def content_fingerprint(info: Mapping[str, Any]) -> str:
    """The fingerprint of a finished run: SHA-256 of its ``run_info.json`` content other than ``fingerprint``
    (canonical JSON), which holds the training fingerprint and the files' manifest."""
    canonical = json.dumps({k: v for k, v in info.items() if k != "fingerprint"}, sort_keys=True,
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def verify_run(run_dir: str | Path) -> dict[str, Any]:
    """Check that a finished run directory is what its ``run_info.json`` says (module docstring) and return that
    run info (``{}`` for a directory without one: the family says what is missing). A file listed in the manifest
    that is missing or changed, or a ``run_info.json`` edited after training, is one :class:`InputError` naming
    the file; a run without a manifest (written before manifests existed) gets a warning."""
    root = Path(run_dir)
    info = read_run_info(root)
    if not info:
        return info
    info_path = root / RUN_INFO_FILE
    manifest = info.get(MANIFEST_KEY)
    if manifest is None:
        warnings.warn(f"{root}: this run was written before runs recorded the SHA-256 of their files, so they are "
                      "not verified; re-train it (ragtruth-spans train RECIPE --overwrite) to get a manifest",
                      UserWarning, stacklevel=2)
        return info
    if not isinstance(manifest, Mapping) or not all(isinstance(v, str) for v in manifest.values()):
        raise InputError("must map file names to SHA-256 digests", path=info_path, field=MANIFEST_KEY)
    for name, digest in sorted(manifest.items()):
        target = (root / name)
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise InputError(f"lists {name!r}, which is not inside the run directory", path=info_path,
                             field=MANIFEST_KEY)
        actual = file_digest(target) if target.is_file() else None
        if actual is None:
            raise InputError("missing: the run's manifest (run_info.json) lists this file; restore it or re-train "
                             "the run", path=target)
        if actual != digest:
            raise InputError("changed since the run was written (its SHA-256 differs from the one in run_info.json): "
                             "the run is no longer what its fingerprint says; restore the file or re-train the run",
                             path=target)
    if info.get("fingerprint") != content_fingerprint(info):
        raise InputError("edited after the run was written (its content no longer matches its fingerprint); "
                         "restore it or re-train the run", path=info_path)
    return info
