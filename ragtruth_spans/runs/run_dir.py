"""The run directory that ``ragtruth-spans train`` writes, as every family shares it.

``<output_dir>/recipe.yaml`` is the resolved recipe and ``<output_dir>/run_info.json`` the run's metadata: its
``kind`` (the detector family, which :func:`ragtruth_spans.load_detector` dispatches on), its fingerprint, the
base model, the training data and its hashes, library versions and training metrics. Families add their own
files (weights, tokenizer, thresholds).

A run directory describes exactly what was trained. ``<output_dir>/fingerprint.json`` is written when a run
starts: the sha256 of the resolved recipe (without ``output_dir`` and ``logging``, which do not change the model)
and of the training and dev files. :func:`claim_output_dir` enforces the rules:

- a new or empty directory: the run starts;
- the same fingerprint, unfinished (no ``run_info.json``): the run resumes from its last checkpoint;
- the same fingerprint, finished: refused — a finished run is never rewritten (``overwrite`` trains it again);
- another fingerprint: refused with the recipe keys that differ (``overwrite`` starts over, ``resume``
  continues from the last checkpoint anyway and records that in ``run_info.json``);
- a directory with other files and no fingerprint: refused (``overwrite`` deletes only a run directory);
- an unfinished run that holds nothing but its ``fingerprint.json`` (it failed or was killed before writing
  anything): started afresh with the new settings, since there is nothing to resume.

A new run that fails before it saved anything worth resuming (a checkpoint, a finished member run) is released
by :func:`release_failed_run`, so fixing the data or the recipe and running ``train`` again just works.

A finished run is what it claims to be: :mod:`~ragtruth_spans.runs.manifest` records the SHA-256 of its files
and checks them when it is loaded.

What a run trained on is recorded too: ``trained_on.json`` holds the SHA-256 of every normalised source and
response it trained or tuned on (never the text; :mod:`ragtruth_spans.evaluation.overlap`), in the manifest like
any file, so the evaluation commands can count the gold responses it has seen (:func:`read_trained_on`; None for
a run written before this file existed: its overlap is "unknown").
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import yaml

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.evaluation.overlap import TRAINED_ON_FILE, TrainedOn
from ragtruth_spans.runs.manifest import MANIFEST_KEY, content_fingerprint, file_digest, files_manifest
from ragtruth_spans.runs.run_info import FINGERPRINT_FILE, RECIPE_FILE, RUN_INFO_FILE, read_run_info

DEFAULT_KIND = "generative"
"""The ``kind`` of a run or recipe that does not name one (written before there were several families)."""
NOT_FINGERPRINTED = ("output_dir", "logging")
"""Recipe keys that say where and how a run reports, not what it trains."""
LIBRARIES = ("torch", "transformers", "peft", "trl", "bitsandbytes", "accelerate", "datasets", "tokenizers",
             "sentence-transformers", "ragtruth-spans")


class SavedRecipe(Protocol):
    """What a run directory needs of a resolved recipe (a :class:`ragtruth_spans.training.recipe.Recipe` is one):
    its family, its settings as JSON values and its YAML text."""

    @property
    def kind(self) -> str: ...

    def model_dump(self, *, mode: str) -> dict[str, Any]: ...

    def to_yaml(self) -> str: ...


def run_kind(run_dir: str | Path) -> str:
    """The detector family of a run directory: ``run_info.json``'s ``kind``, else the recipe's (``recipe.yaml``,
    or ``fingerprint.json`` of an unfinished run), else ``generative`` (runs written before detectors had kinds)."""
    info = read_run_info(run_dir)
    if isinstance(info.get("kind"), str):
        return info["kind"]
    started = _read_fingerprint(Path(run_dir) / FINGERPRINT_FILE)
    if started is not None and isinstance((started.get("recipe") or {}).get("kind"), str):
        return started["recipe"]["kind"]
    recipe = Path(run_dir) / RECIPE_FILE
    if recipe.is_file():
        try:
            data = yaml.safe_load(recipe.read_text(encoding="utf-8"))
        except yaml.YAMLError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("kind"), str):
            return data["kind"]
    return DEFAULT_KIND


def library_versions(names: Sequence[str] = LIBRARIES) -> dict[str, str]:
    """Installed versions of ``names`` (default: the libraries that shape a run; "not installed" when absent)."""
    from importlib.metadata import PackageNotFoundError, version

    versions: dict[str, str] = {}
    for name in names:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def run_fingerprint(recipe: SavedRecipe, data_files: Sequence[str | Path | None]) -> dict[str, Any]:
    """``{"fingerprint", "recipe", "data_sha256"}``: what a run trains — the resolved recipe without
    :data:`NOT_FINGERPRINTED` keys and the sha256 of each training data file (None: not a file, e.g. the
    embedded sample, which is fixed by the package version)."""
    from ragtruth_spans.core.jsonl import file_sha256

    settings = {k: v for k, v in recipe.model_dump(mode="json").items() if k not in NOT_FINGERPRINTED}
    if isinstance(settings.get("data"), dict) and not settings["data"].get("extra"):
        settings["data"].pop("extra", None)  # no extra sources: the fingerprint of runs from before data.extra
    if isinstance(settings.get("features"), dict) and settings["features"].get("precision") == "fp32":
        settings["features"].pop("precision")  # fp32 features: the fingerprint of runs from before int8 ones
    data = {str(path): file_sha256(path) for path in data_files if path is not None}
    canonical = json.dumps({"recipe": settings, "data_sha256": data}, sort_keys=True, ensure_ascii=False)
    return {"fingerprint": hashlib.sha256(canonical.encode("utf-8")).hexdigest(), "recipe": settings,
            "data_sha256": data}


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(set(old) | set(new))
        return [k for key in keys for k in _changed_keys(old.get(key), new.get(key), f"{prefix}{key}.")]
    return [] if old == new else [prefix.rstrip(".")]


def _read_fingerprint(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("fingerprint"), str) else None


def claim_output_dir(output_dir: str | Path, fingerprint: dict[str, Any], *, overwrite: bool = False,
                     resume: bool = False) -> bool:
    """Apply the run-directory rules (module docstring) before training; return whether the run resumes (then
    the family continues from the directory's last checkpoint). Writes ``fingerprint.json`` for a new run."""
    from ragtruth_spans.core.jsonl import write_json

    output_dir = Path(output_dir)
    if output_dir.exists() and not output_dir.is_dir():
        raise InputError("output_dir exists and is not a directory", path=output_dir)
    stored_path = output_dir / FINGERPRINT_FILE
    stored = _read_fingerprint(stored_path) if stored_path.is_file() else None
    occupied = output_dir.is_dir() and any(output_dir.iterdir())
    if overwrite and occupied:
        if stored is None and not (output_dir / RUN_INFO_FILE).is_file():
            raise InputError("--overwrite deletes run directories only, and this one has no fingerprint.json or "
                             "run_info.json; choose another output_dir", path=output_dir)
        shutil.rmtree(output_dir)
        occupied, stored = False, None
    if occupied and stored is None:
        raise InputError("output_dir is not empty and holds no run fingerprint (a run from an older version, or "
                         "other files): choose another output_dir, or pass --overwrite to delete a run there",
                         path=output_dir)
    if stored is not None and stored["fingerprint"] != fingerprint["fingerprint"] and \
            [p.name for p in output_dir.iterdir()] == [FINGERPRINT_FILE]:
        stored = None  # a run that failed before it wrote anything: nothing to resume, start afresh
    if stored is not None:
        finished = (output_dir / RUN_INFO_FILE).is_file()
        if stored["fingerprint"] == fingerprint["fingerprint"]:
            if finished:
                raise InputError("this run is finished and a finished run is never rewritten; pass --overwrite "
                                 "to train it again, or choose another output_dir", path=output_dir)
            return True
        changed = _changed_keys({"recipe": stored.get("recipe"), "data_sha256": stored.get("data_sha256")},
                                {"recipe": fingerprint["recipe"], "data_sha256": fingerprint["data_sha256"]})
        if not resume or finished:
            raise InputError(f"output_dir holds a {'finished ' if finished else ''}run of other settings "
                             f"(differs in: {', '.join(changed[:8])}{' …' if len(changed) > 8 else ''}); pass "
                             "--overwrite to start over" + ("" if finished else ", or --resume to continue it "
                                                            "with the new settings"), path=output_dir)
        return True
    output_dir.mkdir(parents=True, exist_ok=True)
    write_json(stored_path, {**fingerprint, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    return False


def write_run_files(output_dir: str | Path, recipe: SavedRecipe, info: dict[str, Any],
                    fingerprint: dict[str, Any] | None = None, *, trained_on: TrainedOn | None) -> dict[str, Any]:
    """Write ``recipe.yaml`` (the resolved recipe), ``trained_on.json`` (the fingerprints of the sources and
    responses the run trained or tuned on, :mod:`ragtruth_spans.evaluation.overlap`; None: the family trains on
    nothing) and ``run_info.json`` (``kind``, ``created``, ``training_fingerprint``, the family's ``info``, the
    ``trained_on`` summary, the library versions, the manifest of every file of the run and the ``fingerprint``
    covering all of it; module docstring) into ``output_dir`` — the last step of every family's ``train``; return
    the run info written. A fingerprint other than the one the directory was started with is recorded as
    ``resumed_with_other_settings`` (a ``--resume`` that insisted)."""
    from ragtruth_spans.core.files import atomic_write_text
    from ragtruth_spans.core.jsonl import write_json

    output_dir = Path(output_dir)
    started = _read_fingerprint(output_dir / FINGERPRINT_FILE)
    run_info: dict[str, Any] = {"kind": recipe.kind, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if fingerprint is not None:
        run_info["training_fingerprint"] = fingerprint["fingerprint"]
        run_info["data_sha256"] = fingerprint["data_sha256"]
        if started is not None and started["fingerprint"] != fingerprint["fingerprint"]:
            run_info["resumed_with_other_settings"] = {"started_as": started["fingerprint"]}
    run_info.update(info)
    if trained_on is not None:
        write_json(output_dir / TRAINED_ON_FILE, trained_on.to_dict())
        run_info["trained_on"] = trained_on.summary()
    run_info["libraries"] = library_versions()
    atomic_write_text(output_dir / RECIPE_FILE, recipe.to_yaml())
    return seal_run_info(output_dir, run_info)


def seal_run_info(output_dir: str | Path, run_info: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``run_info`` as ``output_dir/run_info.json`` with the manifest of the directory's files as they are
    now and the ``fingerprint`` covering both (module docstring); return what was written. The last step of
    :func:`write_run_files`, and of a tool that adds a file to a finished run (``build.json`` of the shipped
    detector) or rewrites a value that only reports."""
    from ragtruth_spans.core.jsonl import write_json

    output_dir = Path(output_dir)
    info = {key: value for key, value in run_info.items() if key != "fingerprint"}
    info[MANIFEST_KEY] = files_manifest(output_dir)
    info = json.loads(json.dumps(info, ensure_ascii=False))  # as it will be read back
    info["fingerprint"] = content_fingerprint(info)
    write_json(output_dir / RUN_INFO_FILE, info)
    return info


def read_trained_on(run_dir: str | Path) -> TrainedOn | None:
    """The training-data fingerprints of a finished run (``trained_on.json``), None for a run written before runs
    recorded them. The file is checked against the run's manifest: a changed one is an :class:`InputError`."""
    root = Path(run_dir)
    path = root / TRAINED_ON_FILE
    if not path.is_file():
        return None
    listed = (read_run_info(root).get(MANIFEST_KEY) or {}).get(TRAINED_ON_FILE)
    if listed is not None and listed != file_digest(path):
        raise InputError("changed since the run was written (its SHA-256 differs from the one in run_info.json)",
                         path=path)
    return TrainedOn.read(path)


def has_progress(output_dir: str | Path) -> bool:
    """Whether an unfinished run directory holds something a retry would resume from: a ``checkpoint-*`` folder
    or a finished run inside it (a stacked member's ``run_info.json``), at any depth."""
    output_dir = Path(output_dir)
    return any(output_dir.rglob("checkpoint-*")) or any(output_dir.rglob(RUN_INFO_FILE))


def release_failed_run(output_dir: str | Path) -> bool:
    """After a **new** run (claimed empty by :func:`claim_output_dir`) failed: delete what it wrote, its
    ``fingerprint.json`` included, unless it saved progress (:func:`has_progress`, then a retry of the same
    settings resumes) or finished. Returns whether the directory was released."""
    output_dir = Path(output_dir)
    if not output_dir.is_dir() or (output_dir / RUN_INFO_FILE).is_file() or has_progress(output_dir):
        return False
    for child in output_dir.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    return True
