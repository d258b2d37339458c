"""Which detector's training data an evaluation compares with its gold (:mod:`ragtruth_spans.evaluation.overlap`).

The detector is named by ``--model`` (a run directory or a detector name) or, without it, by the predictions
file's sidecar ``OUT.meta.json`` (:mod:`ragtruth_spans.pipeline.predict`), whose ``detector`` records the run
directory and fingerprint of the detector that wrote the file. Then:

- a run directory with ``trained_on.json``: ``known``;
- a detector with no run directory (a rule, a named detector with its published thresholds, a judge):
  ``untrained`` — ragtruth-spans trained it on nothing (what a pretrained model saw is not known); one whose
  thresholds ``benchmark`` tuned on a dev split (``NAME@dev``) is ``unknown`` here, known to that benchmark;
- anything else is ``unknown``, with the reason: a run written before runs recorded their training data, a
  predictions file with no sidecar, a run directory that moved or was re-trained since it wrote the predictions
  (its fingerprint differs).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record
from ragtruth_spans.evaluation.overlap import Overlap, TrainedOn, TrainingData, count_overlap


def run_training_data(run_dir: str | Path, *, fingerprint: str | None = None) -> TrainingData:
    """What the run in ``run_dir`` trained on; with ``fingerprint`` (the one a predictions file recorded), a run
    directory holding another run is ``unknown``."""
    from ragtruth_spans.runs.run_dir import read_trained_on
    from ragtruth_spans.runs.run_info import read_run_info

    root, name = Path(run_dir), str(run_dir)
    if not (root / "run_info.json").is_file():
        return TrainingData("unknown", name, f"{name} is not a finished run directory (no run_info.json)")
    if fingerprint is not None and read_run_info(root).get("fingerprint") != fingerprint:
        return TrainingData("unknown", name, f"the run in {name} is not the one that wrote the predictions (its "
                            "fingerprint differs: re-trained since?); pass --model with the right run")
    trained_on = read_trained_on(root)
    if trained_on is None:
        return TrainingData("unknown", name, f"{name} was written before runs recorded what they trained on (no "
                            "trained_on.json); re-train it to know")
    roles = ", ".join(f"{n} {role}" for role, n in trained_on.records.items())
    return TrainingData("known", name, f"{name} trained or tuned on {roles} records", trained_on)


def model_training_data(model: str) -> TrainingData:
    """What ``--model`` trained on: a run directory's ``trained_on.json`` (``default``: the shipped detector's),
    nothing for a detector name."""
    from ragtruth_spans.detectors.family import named_detectors
    from ragtruth_spans.detectors.shipped import resolve_detector

    model = str(resolve_detector(model))
    if Path(model).is_dir():
        return run_training_data(model)
    if model in named_detectors():
        return TrainingData("untrained", model, f"{model} is a named detector, not trained by ragtruth-spans")
    raise InputError(f"{model!r} is neither a run directory nor a detector name", field="--model")


def described_training_data(described: dict[str, Any]) -> TrainingData:
    """What the detector of a ``describe()`` (a predictions sidecar's ``detector``) trained on."""
    run_dir = described.get("run_dir")
    name = str(described.get("name") or described.get("kind") or "the detector")
    if not isinstance(run_dir, str):
        tuned = str(described.get("thresholds_from") or "")
        if tuned.startswith("tuned on"):  # benchmark's NAME@dev: the description does not say on which file
            return TrainingData("unknown", name, f"{name}'s thresholds were {tuned}, a file its predictions do not "
                                "name (the benchmark that tuned it reports that overlap)")
        return TrainingData("untrained", name, f"{name} has no run directory: ragtruth-spans did not train it")
    fingerprint = described.get("fingerprint")
    return run_training_data(run_dir, fingerprint=fingerprint if isinstance(fingerprint, str) else None)


def predictions_training_data(pred: str | Path, model: str | None = None) -> TrainingData:
    """What the detector behind the predictions file ``pred`` trained on: ``model`` when given, else the one its
    ``.meta.json`` names (module docstring)."""
    from ragtruth_spans.core.jsonl import read_json_file
    from ragtruth_spans.pipeline.predict import meta_path

    if model is not None:
        return model_training_data(model)
    sidecar = meta_path(pred)
    if not sidecar.is_file():
        return TrainingData("unknown", str(pred), f"no {sidecar.name} beside {Path(pred).name} says which detector "
                            "wrote it; pass --model")
    meta = read_json_file(sidecar)
    described = meta.get("detector") if isinstance(meta, dict) else None
    if not isinstance(described, dict):
        raise InputError("must be a JSON object with the detector's description", path=sidecar, field="detector")
    return described_training_data(described)


def tuned_on(training: TrainingData, records: Iterable[Any], what: str) -> TrainingData:
    """``training`` plus the records a detector was tuned on afterwards (``benchmark``'s ``NAME@dev``)."""
    extra = TrainedOn.from_records({"eval": records})
    if training.status == "unknown":
        return training
    merged = extra if training.trained_on is None else training.trained_on.union(extra)
    reason = f"{training.detector}, tuned on {what}" if training.status == "untrained" else \
        f"{training.reason}, then tuned on {what}"
    return TrainingData("known", training.detector, reason, merged)


def overlaps_to_drop(gold: Sequence[Record], trainings: Sequence[TrainingData], *,
                     drop_overlap: bool) -> tuple[list[Overlap], frozenset[str], list[str]]:
    """Each detector's overlap with ``gold``, the ids ``--drop-overlap`` leaves out for all of them (the union, so
    every detector is scored on the same responses; none without the flag) and the notes it calls for (a detector
    whose overlap is unknown has nothing dropped)."""
    overlaps = [count_overlap(gold, training) for training in trainings]
    if not drop_overlap:
        return overlaps, frozenset(), []
    dropped = frozenset().union(*(o.ids for o in overlaps))
    notes = [f"--drop-overlap: the overlap of {o.detector} is unknown, so none of its training data could be "
             "left out" for o in overlaps if o.status == "unknown"]
    return overlaps, dropped, notes
