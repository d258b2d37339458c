"""``ragtruth-spans benchmark``: run several detectors on one labelled split and rank them.

Each detector is named like ``--model`` of ``predict``: a detector name (``numbers``, ``sim-cosine``, ...) or a run
directory, optionally followed by its own load options, ``runs/tc[threshold=0.4,batch_size=8]`` (the keys of
``predict``'s load options and ``--option``; they override the command's load flags, which apply to every
detector); ``NAME@dev`` is the named detector with its thresholds tuned on ``--dev`` first (detectors that
implement :class:`~ragtruth_spans.training.tuning.Tunable`; the tuning record is written to
``OUT/tuning/<label>.json`` and reused by a re-run while the untuned detector, the dev file's sha256 and the
criterion are the same). Run directories are used as trained (their own dev tuning included).

For every detector, in order: predictions go to ``OUT/predictions/<label>.jsonl`` through
:func:`~ragtruth_spans.pipeline.predict.predict_file` (resumable: a re-run predicts only what is missing, and
refuses a file written by another detector or other data), the throughput is accumulated in
``OUT/predictions/<label>.timing.json`` (so responses/s survives a resume), and the file is scored by
:func:`~ragtruth_spans.evaluation.files.evaluate_files` — the very function behind ``ragtruth-spans evaluate``, so
the figures are the same. ``OUT/leaderboard.json`` holds every report (overall, by task, by generating model,
bootstrap intervals) and a precision-recall curve per scored detector; ``leaderboard.md`` and ``leaderboard.svg``
render it (:mod:`ragtruth_spans.reporting.leaderboard`, :mod:`ragtruth_spans.reporting.leaderboard_plot`).
"""

from __future__ import annotations

import logging
import platform
import re
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import is_finite_number
from ragtruth_spans.core.files import atomic_write_text, check_output_path
from ragtruth_spans.core.jsonl import file_sha256, read_json_file, read_records, write_json
from ragtruth_spans.core.logs import log_lines
from ragtruth_spans.detectors.options import DetectorOptions
from ragtruth_spans.evaluation.overlap import TrainingData
from ragtruth_spans.training.tuning import CRITERIA, DEFAULT_CRITERION

logger = logging.getLogger(__name__)

TUNE_SUFFIX = "@dev"
DEFAULT_BOOTSTRAP = 1000


@dataclass
class DetectorSpec:
    """One detector to benchmark: its ``label`` (row name and file stem), ``source`` (a detector name or run
    directory), whether to ``tune`` it on the dev split first, and load ``options``."""

    label: str
    source: str
    tune: bool = False
    options: dict[str, Any] = field(default_factory=dict)


def _file_stem(label: str) -> str:
    return re.sub(r"[^\w.@+-]+", "_", label).strip("_") or "detector"


def split_detectors(text: str) -> list[str]:
    """``"a,b[x=1,y=2],c"`` → ``["a", "b[x=1,y=2]", "c"]``: commas inside ``[...]`` separate options, not
    detectors; an unbalanced bracket is an :class:`InputError`."""
    items, depth, current = [], 0, []
    for char in text:
        depth += (char == "[") - (char == "]")
        if depth < 0 or depth > 1:
            raise InputError(f"unbalanced or nested brackets in {text!r}", field="--detectors")
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth:
        raise InputError(f"unclosed bracket in {text!r}", field="--detectors")
    return [item.strip() for item in [*items, "".join(current)] if item.strip()]


def _item_options(item: str) -> tuple[str, list[str]]:
    """``"runs/x[threshold=0.4,batch_size=8]"`` → ``("runs/x", ["threshold=0.4", "batch_size=8"])``: the source
    and its own ``KEY=VALUE`` load options (parsed by the one parser of ``--option``)."""
    if not item.endswith("]") or "[" not in item:
        return item, []
    source, _, inner = item[:-1].partition("[")
    return source.strip(), [part.strip() for part in inner.split(",") if part.strip()]


def parse_detectors(text: str | Sequence[str],
                    options: DetectorOptions | Mapping[str, Any] | None = None) -> list[DetectorSpec]:
    """Specs from ``"numbers,sim-cosine@dev,runs/two-tier[threshold=0.4]"`` (or a list of such items): each item
    is checked (a run directory, or a known detector name with an optional ``@dev``), may end with its own load
    options in brackets (``[KEY=VALUE,...]``: the items of ``--option``, read by the same parser into the same
    :class:`~ragtruth_spans.detectors.options.DetectorOptions`), which override ``options`` (the command's load
    flags, for every detector); labels are made unique."""
    from ragtruth_spans.detectors.family import named_detectors
    from ragtruth_spans.detectors.shipped import DEFAULT_NAME, is_default, resolve_detector

    items = [part.strip() for part in (split_detectors(text) if isinstance(text, str) else text) if part.strip()]
    if not items:
        raise InputError("no detectors given (e.g. --detectors numbers,sim-overlap,flag-all)", field="--detectors")
    names = named_detectors()
    shared = options if isinstance(options, DetectorOptions) else DetectorOptions.of(options, flag="options")
    specs: list[DetectorSpec] = []
    for item in items:
        bare, own = _item_options(item)
        tune = bare.endswith(TUNE_SUFFIX) and not Path(bare).is_dir()
        source = bare[: -len(TUNE_SUFFIX)] if tune else bare
        path = Path(source)
        if is_default(source):  # the shipped detector (a directory named "default" stays a run directory)
            label, source = DEFAULT_NAME, str(resolve_detector(source))
        elif path.is_dir():
            label = path.resolve().name
        elif source in names:
            label = source
        else:
            known = ", ".join(sorted([*names, DEFAULT_NAME]))
            raise InputError(f"{item!r} is neither a run directory nor a detector name (names: {known}; add "
                             f"{TUNE_SUFFIX} to a name to tune it on --dev)",
                             field="--detectors")
        label += TUNE_SUFFIX if tune else ""
        if own:
            label += "[" + ",".join(own) + "]"
        taken = {s.label for s in specs}
        unique, n = label, 2
        while unique in taken:
            unique, n = f"{label}-{n}", n + 1
        merged = DetectorOptions.from_items(own, flag="--detectors").over(shared)
        specs.append(DetectorSpec(label=unique, source=source, tune=tune, options=merged.load_kwargs()))
    return specs


@dataclass(frozen=True)
class BenchmarkPaths:
    out: Path

    def predictions(self, label: str) -> Path:
        return self.out / "predictions" / f"{_file_stem(label)}.jsonl"

    def timing(self, label: str) -> Path:
        return self.out / "predictions" / f"{_file_stem(label)}.timing.json"

    def tuning(self, label: str) -> Path:
        return self.out / "tuning" / f"{_file_stem(label)}.json"

    @property
    def json(self) -> Path:
        return self.out / "leaderboard.json"

    @property
    def markdown(self) -> Path:
        return self.out / "leaderboard.md"

    @property
    def plot(self) -> Path:
        return self.out / "leaderboard.svg"


def _load(spec: DetectorSpec, dev: Path | None, criterion: str,
          paths: BenchmarkPaths) -> tuple[Any, dict[str, Any] | None]:
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.training.tuning import Tunable

    detector = load_detector(spec.source, **spec.options)
    if not spec.tune:
        return detector, None
    if dev is None:
        raise InputError(f"{spec.label} asks to be tuned on the dev split, but no --dev file was given",
                         field="--dev")
    if not isinstance(detector, Tunable):
        raise InputError(f"{spec.source} has no thresholds to tune (drop {TUNE_SUFFIX})", field="--detectors")
    # A tuning of the same detector on the same dev file by the same criterion is reused, not run again.
    key = {"untuned": detector.describe(), "dev_sha256": file_sha256(dev), "criterion": criterion}
    saved = paths.tuning(spec.label)
    record = _read_sidecar(saved, noted=True)
    if record is not None and all(record.get(name) == value for name, value in key.items()):
        logger.info("  reusing the tuning in %s", saved)
        return detector.with_thresholds(record["thresholds"], record["source"]), record
    logger.info("  tuning %s on %s (%s)", spec.source, dev, criterion)
    detector, result = detector.tune(read_records(dev), criterion=criterion, split="dev")
    record = result.to_dict() | {"dev": str(dev), "source": detector.source} | key
    write_json(saved, record)
    return detector, record


def _read_sidecar(path: Path, noted: bool) -> dict[str, Any] | None:
    """A saved JSON object (tuning, timing), None when absent or unreadable: a damaged sidecar is a cache miss
    (a warning when ``noted``), never a reason to stop every later benchmark."""
    if not path.is_file():
        return None
    try:
        record = read_json_file(path)
    except InputError as exc:
        record = exc
    if isinstance(record, dict):
        return record
    if noted:
        logger.warning("ignoring %s: %s", path, record if isinstance(record, InputError) else "not a JSON object")
    return None


def _throughput(paths: BenchmarkPaths, label: str, summary: Any) -> dict[str, Any]:
    """Add this session's prediction count and time to the stored ones; responses/s over all sessions."""
    stored: dict[str, Any] = {"predicted": 0, "seconds": 0.0, "load_seconds": 0.0}
    saved = _read_sidecar(paths.timing(label), noted=False)
    if saved is not None and all(is_finite_number(saved.get(k)) for k in stored):
        stored.update({k: saved[k] for k in stored})
    stored["predicted"] += summary.predicted
    stored["seconds"] = round(stored["seconds"] + summary.predict_seconds, 4)
    stored["load_seconds"] = round(max(stored["load_seconds"], summary.load_seconds), 4)
    write_json(paths.timing(label), stored)
    rate = stored["predicted"] / stored["seconds"] if stored["seconds"] > 0 else None
    return stored | {"responses_per_second": rate}


def pr_curve(data: Path, pred: Path, max_points: int = 200, drop: Collection[str] = ()) -> dict[str, Any] | None:
    """Response-level precision-recall curve of a predictions file, ranking responses by the same scores as the
    evaluator's AUROC (:func:`~ragtruth_spans.evaluation.evaluator.auroc_scores`); None without scores or
    without both classes. ``drop``: gold ids left out (``--drop-overlap``)."""
    import numpy as np
    from sklearn.metrics import average_precision_score, precision_recall_curve

    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation.evaluator import auroc_scores
    from ragtruth_spans.evaluation.files import restrict_predictions
    from ragtruth_spans.evaluation.overlap import without

    every = read_records(data)
    gold = without(every, drop)
    pred_file = restrict_predictions(read_prediction_file(pred, response_lengths={r.id: len(r.response)
                                                                                  for r in every}),
                                     {r.id for r in gold})
    scores, source, _ = auroc_scores(gold, pred_file.spans, pred_file.response_scores)
    if scores is None:
        return None
    keep = ~np.isnan(scores)
    labels = np.array([r.hallucinated for r in gold])[keep]
    if labels.all() or not labels.any():
        return None
    precision, recall, _ = precision_recall_curve(labels, scores[keep])
    step = max(1, len(precision) // max_points)
    return {"scores": source, "precision": [round(float(p), 4) for p in precision[::step]],
            "recall": [round(float(r), 4) for r in recall[::step]],
            "average_precision": float(average_precision_score(labels, scores[keep]))}


def benchmark_detector(spec: DetectorSpec, data: Path, paths: BenchmarkPaths, *, dev: Path | None, criterion: str,
                       bootstrap: int, seed: int, chunk_size: int | None, progress: bool,
                       drop: Collection[str] = ()) -> dict[str, Any]:
    """Predict (resumably), score and describe one detector: its leaderboard entry, with its overlap with
    ``data`` (:func:`spec_training_data`); ``drop``: gold ids left out of its figures (``--drop-overlap``)."""
    from ragtruth_spans.evaluation.files import evaluate_files
    from ragtruth_spans.pipeline.predict import predict_file
    from ragtruth_spans.reporting.console import predict_summary

    detector, tuning = _load(spec, dev, criterion, paths)
    pred = paths.predictions(spec.label)
    summary = predict_file(None, data, pred, detector=detector, chunk_size=chunk_size, progress=progress)
    log_lines(logger, "  " + predict_summary(summary.to_dict()).replace("\n", "\n  "))
    report = evaluate_files(data, pred, bootstrap=bootstrap, seed=seed, training=spec_training_data(spec, dev, pred),
                            also_drop=drop)
    return {"label": spec.label, "source": spec.source, "tuned_on_dev": spec.tune, "detector": detector.describe(),
            "tuning": tuning, "predictions": str(pred), "throughput": _throughput(paths, spec.label, summary),
            "report": report.to_dict(), "pr_curve": pr_curve(data, pred, drop=drop)}


def spec_training_data(spec: DetectorSpec, dev: Path | None, pred: Path | None = None) -> TrainingData:
    """What a benchmarked detector trained on: with ``pred``, what its predictions' ``.meta.json`` names (as
    ``evaluate`` finds it, so both report the same), else its run's ``trained_on.json`` (nothing for a named
    detector); plus the dev split for a ``NAME@dev`` detector tuned there."""
    from ragtruth_spans.pipeline.trained_on import model_training_data, predictions_training_data, tuned_on

    if pred is not None and not spec.tune:
        return predictions_training_data(pred)
    training = model_training_data(spec.source)
    if spec.tune and dev is not None:
        training = tuned_on(training, read_records(dev), f"the dev split {dev.name}")
    return training


def span_f1(entry: dict[str, Any]) -> float:
    return entry["report"]["overall"]["span"]["f1"]


def run_benchmark(data: str | Path, detectors: Sequence[DetectorSpec] | str, out: str | Path, *,
                  dev: str | Path | None = None, criterion: str = DEFAULT_CRITERION,
                  bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = 0, chunk_size: int | None = None,
                  progress: bool = True,
                  options: DetectorOptions | Mapping[str, Any] | None = None,
                  drop_overlap: bool = False) -> dict[str, Any]:
    """Benchmark ``detectors`` on ``data`` into ``out`` (see the module docstring); return the leaderboard
    payload (what ``leaderboard.json`` holds), detectors ranked by span F1. ``options``: load options of every
    detector given as a string (a detector's own ``[KEY=VALUE,...]`` overrides them). Each detector's overlap with
    ``data`` (gold responses sharing a source or a response with what it trained or was tuned on) is in its
    report; ``drop_overlap`` leaves out of every detector's figures the responses any of them saw, so the rows stay
    comparable."""
    from ragtruth_spans.reporting.leaderboard import render_markdown
    from ragtruth_spans.reporting.leaderboard_plot import plot_leaderboard

    if criterion not in CRITERIA:
        raise InputError(f"unknown criterion {criterion!r} (expected one of {', '.join(CRITERIA)})",
                         field="--criterion")
    if bootstrap < 0:
        raise InputError(f"must be >= 0, got {bootstrap}", field="--bootstrap")
    if bootstrap:
        from ragtruth_spans.evaluation.bootstrap import check_seed

        check_seed(seed)  # before any detector runs
    specs = parse_detectors(detectors, options) if isinstance(detectors, str) else list(detectors)
    data, dev, paths = Path(data), Path(dev) if dev is not None else None, BenchmarkPaths(Path(out))
    inputs = {"--gold": data, "--dev": dev}
    for label in [spec.label for spec in specs]:  # the output policy, before any work
        for target in (paths.predictions(label), paths.timing(label), paths.tuning(label)):
            check_output_path(target, field="--out", inputs=inputs)
    for target in (paths.json, paths.markdown, paths.plot):
        check_output_path(target, field="--out", inputs=inputs)
    gold = read_records(data)
    if dev is not None:
        read_records(dev)  # fail now on a bad dev file, not after the first detectors ran
    from ragtruth_spans.pipeline.trained_on import overlaps_to_drop

    trainings = [spec_training_data(spec, dev) for spec in specs]
    _, dropped, drop_notes = overlaps_to_drop(gold, trainings, drop_overlap=drop_overlap)
    for line in drop_notes:
        logger.info(line)
    started = time.perf_counter()
    entries = []
    for i, spec in enumerate(specs, start=1):
        logger.info("── %d/%d %s", i, len(specs), spec.label)
        entries.append(benchmark_detector(spec, data, paths, dev=dev, criterion=criterion, bootstrap=bootstrap,
                                          seed=seed, chunk_size=chunk_size, progress=progress, drop=dropped))
    entries.sort(key=span_f1, reverse=True)
    payload = {"data": str(data), "data_sha256": file_sha256(data), "responses": len(gold),
               "dev": str(dev) if dev else None, "dev_sha256": file_sha256(dev) if dev else None,
               "criterion": criterion, "bootstrap": bootstrap, "seed": seed, "drop_overlap": drop_overlap,
               "dropped_overlap": len(dropped),
               "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "seconds": round(time.perf_counter() - started, 2),
               "machine": {"platform": platform.platform(), "python": platform.python_version()},
               "detectors": entries}
    paths.out.mkdir(parents=True, exist_ok=True)
    write_json(paths.json, payload)
    atomic_write_text(paths.markdown, render_markdown(payload))
    plot_leaderboard(payload, paths.plot)
    return payload
