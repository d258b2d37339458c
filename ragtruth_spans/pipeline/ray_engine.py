"""Corpus-scale detection on a Ray cluster: ``predict --engine ray`` (the optional ``[ray]`` extra).

:func:`predict_ray` writes the same predictions file and ``OUT.meta.json`` as
:func:`~ragtruth_spans.pipeline.predict.predict_file`, with the detection spread over a Ray Data actor pool:

- The **driver** (this process) reads and checks ``data`` as ``predict`` does, skips the ids already in ``OUT``
  (resume), and is the **one writer** of ``OUT`` (it holds ``OUT.lock``). It turns the records still to do into a
  Ray dataset, and writes each line that comes back at once (flushed per batch), **keyed by id**: a line for an id
  already written (a batch that Ray ran twice after a worker died) is dropped and counted, so every id gets exactly
  one line.
- Every **actor** loads the detector once (:func:`~ragtruth_spans.detectors.loader.load_detector`, or the
  ``detector_factory`` of the Python API) and runs ``map_batches`` batches of ``batch_size`` records through
  :func:`~ragtruth_spans.pipeline.predict.detect_isolated`: a record that makes the detector raise fails only
  itself (an ``error`` line, counted). An actor that dies (killed, out of memory) is restarted and its batch
  retried by Ray (``max_retries`` times); records whose batch still failed are run again one per batch, and a
  record that still kills its worker gets an ``error`` line (``worker_died``) instead of stopping the run.
- The first line of every result batch carries its actor's ``describe()``; the driver checks it against
  ``OUT.meta.json`` before writing any line of that batch (a resume with another detector or other settings is
  refused, as in ``predict``). When nothing is left to do, one worker loads the detector only to check it.

``address``: None starts a local cluster for the run (and stops it after); ``"auto"`` joins the cluster of this
node; ``"ray://HOST:10001"`` goes through the Ray client; ``"HOST:6379"`` joins a cluster's GCS. When this process
already called ``ray.init``, that connection is used. An address that cannot be reached is one
:class:`~ragtruth_spans.core.errors.InputError` line. See docs/RAY.md.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.extras import require
from ragtruth_spans.core.files import append_text, atomic_write_bytes, check_output_path, exclusive_output
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import Detection, Detector, operating_point_of
from ragtruth_spans.pipeline.predict import (
    RESUME_HINT,
    PredictSummary,
    check_meta,
    detect_isolated,
    meta_path,
    plan_run,
    prediction_line,
    predictions_meta,
    progress_bar,
)
from ragtruth_spans.pipeline.ray_cluster import (
    amount,
    check_placement,
    check_reachable,
    cluster_nodes,
    placement_capacity,
)

DEFAULT_BATCH_SIZE = 64
"""Records per actor call (one ``detect_batch`` call) unless ``batch_size`` says otherwise (vLLM wants ~4096)."""


@dataclass(frozen=True)
class RaySettings:
    """How the work is spread. ``workers``: actors (default: as many as the cluster's CPUs, or GPUs, hold);
    ``cpus_per_worker``/``gpus_per_worker``: what each actor reserves (GPUs default: 1 for a run directory on a
    cluster with GPUs unless ``device`` is ``cpu``, else 0); ``batch_size``: records per actor call;
    ``max_retries``: how often Ray retries a batch whose actor died; ``num_cpus``: CPUs of a local cluster
    started for the run (default: this machine's)."""

    address: str | None = None
    workers: int | None = None
    cpus_per_worker: float = 1.0
    gpus_per_worker: float | None = None
    batch_size: int | None = None
    max_retries: int = 3
    num_cpus: int | None = None
    start_timeout: float = 900.0
    """Seconds the one worker that only checks the detector (nothing left to do) may take to start before the run
    stops with one line (what no node can place is refused before, by :func:`check_placement`)."""
    ray_log_level: int | None = None
    """The level of Ray's loggers in this process (``ray``, ``ray.data``: its plans and progress lines) and of a
    local cluster started for the run; None leaves Ray's own. The command line sets ``ERROR`` unless verbose."""
    log_to_driver: bool = True
    """Whether the workers' output is shown here (Ray's ``log_to_driver``); the command line: only when verbose."""

    def check(self) -> None:
        """Raise :class:`InputError` naming the option that is out of range."""
        for name, value, low in (("--workers", self.workers, 1), ("--cpus-per-worker", self.cpus_per_worker, 0),
                                 ("--gpus-per-worker", self.gpus_per_worker, 0), ("--chunk-size", self.batch_size, 1),
                                 ("max_retries", self.max_retries, 0), ("num_cpus", self.num_cpus, 1),
                                 ("start_timeout", self.start_timeout, 1)):
            if value is not None and value < low:
                raise InputError(f"must be >= {low}, got {value}", field=name)


@dataclass
class RaySummary(PredictSummary):
    """:class:`PredictSummary` (``load_seconds``: the slowest actor's detector load; ``predict_seconds``: from the
    start of the dataset, actor start-up included, to its last line) plus what the cluster did: ``workers``
    (actors), ``duplicates_dropped`` (lines of ids already written), ``retried_alone`` (records run again one per
    batch after their batch failed), ``startup_seconds`` (connecting or starting the cluster),
    ``first_batch_seconds`` (from the start of the dataset to the first lines back: the actors' start-up and
    detector load), ``worker_peak_rss_mb`` (peak resident memory of each worker process that sent lines, by
    pid)."""

    engine: str = "ray"
    workers: int = 0
    duplicates_dropped: int = 0
    retried_alone: int = 0
    startup_seconds: float = 0.0
    first_batch_seconds: float = 0.0
    worker_peak_rss_mb: dict[str, float] = field(default_factory=dict)


def predict_ray(model: str | Path | None, data: str | Path, out: str | Path, *,
                settings: RaySettings | None = None, limit: int | None = None, progress: bool = True,
                detector_options: Mapping[str, Any] | None = None, evidence: Any = None,
                detector_factory: Callable[[], Detector] | None = None) -> RaySummary:
    """Predict spans for the records of ``data`` into ``out`` on a Ray cluster; see the module docstring.

    ``model`` and ``detector_options`` are what ``load_detector`` gets in every actor (a run directory must be
    readable at the same path on every node); ``detector_factory`` (a picklable callable) builds the detector in
    each actor instead. ``limit`` and ``evidence`` are as in :func:`~ragtruth_spans.pipeline.predict.predict_file`.
    """
    settings = settings or RaySettings()
    settings.check()
    if limit is not None and limit < 0:
        raise InputError(f"must be >= 0, got {limit}", field="limit")
    require("ray", "predict --engine ray")
    inputs = {"--data": data}
    out = check_output_path(out, field="--out", inputs=inputs)
    check_output_path(meta_path(out), field="--out", inputs=inputs)
    records = read_records(data)
    if model is not None and Path(model).is_dir():
        model = str(Path(model).resolve())  # the actors' working directory is not ours
    with exclusive_output(out):
        todo, base, finished, fixed = plan_run(records, data, out, limit=limit)
        summary = RaySummary(**{k: getattr(base, k) for k in base.__dataclass_fields__})
        started = time.perf_counter()
        with ray_session(settings) as ray:
            summary.startup_seconds = time.perf_counter() - started
            job = _Job(ray, model, dict(detector_options or {}), detector_factory, evidence, settings)
            writer = _Writer(out, summary, finished, predictions_meta({}, data, evidence), fixed,
                             load_options=job.options)
            if not todo:
                writer.check_detector(job.describe())
                return summary
            started = writer.started = time.perf_counter()
            with progress_bar(len(todo), enabled=progress) as bar:
                job.run(todo, writer, bar)
                missing = [r for r in todo if r.id not in writer.written]
                if missing:  # a batch failed max_retries + 1 times: its records again, one per batch
                    summary.retried_alone = len(missing)
                    job.run(missing, writer, bar, alone=True)
                for record in (r for r in missing if r.id not in writer.written):
                    writer.write_lost(record, settings.max_retries + 1)
                    bar.update(1)
            summary.predict_seconds = time.perf_counter() - started
            summary.workers = job.workers
    return summary


@contextmanager
def ray_session(settings: RaySettings) -> Iterator[Any]:
    """The ``ray`` module, connected as ``settings.address`` says (see the module docstring); a cluster started
    here is shut down on exit. An unreachable address raises :class:`InputError` (one line)."""
    import ray
    import ray.data  # it configures its loggers on import: a level asked for is applied after

    if ray.is_initialized():
        yield ray
        return
    kwargs: dict[str, Any] = {"log_to_driver": settings.log_to_driver}
    if settings.ray_log_level is not None:
        kwargs["logging_level"] = settings.ray_log_level
    if settings.address is None:
        kwargs |= {"num_cpus": settings.num_cpus or os.cpuamount() or 1, "include_dashboard": False}
    else:
        check_reachable(settings.address)
        kwargs["address"] = settings.address
    try:
        ray.init(**kwargs)
    except (ConnectionError, TimeoutError, RuntimeError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:300]
        what = "cannot start a local Ray cluster" if settings.address is None else \
            f"cannot reach the Ray cluster at {settings.address!r}"
        raise InputError(f"{what}: {reason}", field="--address" if settings.address else None) from None
    for name in ("ray", "ray.data") if settings.ray_log_level is not None else ():
        logging.getLogger(name).setLevel(settings.ray_log_level)
    try:
        yield ray
    finally:
        ray.shutdown()


class _Writer:
    """The one writer of ``out``: checks each actor's detector against the sidecar, appends each id once."""

    def __init__(self, out: Path, summary: RaySummary, finished: set[str], meta: dict[str, Any],
                 fixed: bytes | None = None, load_options: Mapping[str, Any] | None = None) -> None:
        self.out, self.summary, self.meta, self.fixed = out, summary, meta, fixed
        self.load_options = dict(load_options or {})
        self.had_lines = bool(finished)
        self.written = set(finished)
        self.checked: set[str] = set()
        self.started = time.perf_counter()

    def check_detector(self, describe: str) -> None:
        """Check one actor's ``describe()`` (JSON) against ``OUT.meta.json`` (written with the first); after the
        first check, the repair of a last line cut by a crash is written (as in ``predict``)."""
        if describe not in self.checked:
            described = json.loads(describe)
            point = operating_point_of(described, self.load_options)
            check_meta(self.out, self.meta | {"detector": described, "operating_point": point},
                       has_lines=self.had_lines or bool(self.checked))
            self.checked.add(describe)
            if self.fixed is not None:
                atomic_write_bytes(self.out, self.fixed)
                self.fixed = None

    def write_batch(self, batch: Mapping[str, Any]) -> int:
        """Append the lines of one result batch whose ids are new; how many it appended. A batch from an actor
        that could not load the detector raises its :class:`InputError`."""
        fatal = next((f for f in batch["fatal"] if f), "")
        if fatal:
            raise InputError(str(fatal))
        for describe in {d for d in batch["detector"] if d}:
            self.check_detector(describe)
        ids, lines = batch["id"], batch["line"]
        before = len(self.written)
        if not self.summary.first_batch_seconds:
            self.summary.first_batch_seconds = time.perf_counter() - self.started
        new: dict[str, str] = {}
        for record_id, line in zip(ids, lines):
            if record_id in self.written or record_id in new:
                self.summary.duplicates_dropped += 1
                continue
            new[record_id] = line
        append_text(self.out, "".join(new.values()), hint=RESUME_HINT)
        for record_id, line in new.items():
            self.written.add(record_id)
            self.summary.add_row(json.loads(line))
        for pid, rss in zip(batch["worker"], batch["peak_rss_mb"]):
            key = str(pid)
            self.summary.worker_peak_rss_mb[key] = max(self.summary.worker_peak_rss_mb.get(key, 0.0), float(rss))
        self.summary.load_seconds = max(self.summary.load_seconds, *map(float, batch["load_seconds"]))
        return len(self.written) - before

    def write_lost(self, record: Record, tries: int) -> None:
        """An error line for a record whose worker died on every try."""
        detection = Detection(spans=[], diagnostics={"worker_died": True},
                              error=f"the worker process died each time it ran this record ({tries} attempt(s))")
        line = prediction_line(record.id, detection)
        append_text(self.out, line, hint=RESUME_HINT)
        self.written.add(record.id)
        self.summary.add_row(json.loads(line))


class _DetectActor:
    """One Ray actor: loads the detector once, then detects batches (``{"id", "record"}`` → lines). A detector that
    cannot be loaded for bad input (an unknown option, a wrong run directory) is not a crash to retry: every batch
    then comes back with the one-line message in ``fatal``, and the driver stops with it."""

    def __init__(self, model: str | None, options: dict[str, Any], factory: Callable[[], Detector] | None,
                 evidence: Any) -> None:
        started = time.perf_counter()
        self.fatal, self.describe = "", ""
        try:
            if factory is not None:
                self.detector = factory()
            else:
                from ragtruth_spans.detectors.loader import load_detector

                self.detector = load_detector(model, **options)
            self.describe = json.dumps(self.detector.describe(), sort_keys=True)
        except InputError as exc:
            self.fatal = str(exc)
        self.load_seconds = round(time.perf_counter() - started, 3)
        self.evidence = evidence

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        import resource

        ids = [str(i) for i in batch["id"]]
        n = len(ids)
        if self.fatal:
            lines = [""] * n
        else:
            records = [Record.from_dict(json.loads(text)) for text in batch["record"]]
            detections = detect_isolated(self.detector, records, self.evidence)
            lines = [prediction_line(r.id, d) for r, d in zip(records, detections)]
        rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
        return {"id": ids, "line": lines, "detector": [self.describe] + [""] * (n - 1),
                "fatal": [self.fatal] * n, "worker": [os.getpid()] * n, "peak_rss_mb": [round(rss_mb, 1)] * n,
                "load_seconds": [self.load_seconds] * n}


def _describe_remote(model: str | None, options: dict[str, Any], factory: Callable[[], Detector] | None,
                     ) -> tuple[str, str]:
    actor = _DetectActor(model, options, factory, None)
    return actor.describe, actor.fatal


class _Job:
    """One detector on one cluster: its actors' resources, and the runs of records through them."""

    def __init__(self, ray: Any, model: str | Path | None, options: dict[str, Any],
                 factory: Callable[[], Detector] | None, evidence: Any, settings: RaySettings) -> None:
        self.ray, self.settings, self.evidence = ray, settings, evidence
        self.model, self.options, self.factory = (str(model) if model is not None else None), options, factory
        nodes = cluster_nodes(ray)
        gpus = settings.gpus_per_worker
        if gpus is None:
            on_gpu = any(node.get("GPU", 0) > 0 for node in nodes) and str(options.get("device") or "cuda") != "cpu"
            gpus = 1.0 if on_gpu and factory is None and self.model and Path(self.model).is_dir() else 0.0
        self.gpus, self.cpus = gpus, settings.cpus_per_worker
        check_placement(nodes, cpus=self.cpus, gpus=gpus, workers=settings.workers)  # before any work
        capacity = placement_capacity(nodes, cpus=self.cpus, gpus=gpus)
        self.workers = settings.workers or max(1, capacity or 1)
        self.batch_size = settings.batch_size or DEFAULT_BATCH_SIZE

    def describe(self) -> str:
        """The detector's ``describe()`` (JSON), loaded once in a worker with the actors' resources."""
        remote = self.ray.remote(num_cpus=self.cpus, num_gpus=self.gpus)(_describe_remote)
        try:
            describe, fatal = self.ray.get(remote.remote(self.model, self.options, self.factory),
                                           timeout=self.settings.start_timeout)
        except TimeoutError:
            raise self._not_started() from None
        if fatal:
            raise InputError(fatal)
        return describe

    def run(self, todo: list[Record], writer: _Writer, bar: Any, *, alone: bool = False) -> None:
        """Detect ``todo`` on the actor pool, writing each result batch as it arrives (``alone``: one record per
        batch and per block, so that a record that kills its worker takes no other record with it)."""
        from ray.data import DataContext, from_items

        context = DataContext.get_current()
        context.enable_progress_bars = False
        context.max_errored_blocks = -1  # a batch that failed every retry: its records are retried alone
        # every worker gets work on a small input too (Ray Data bundles rows up to batch_size into one task)
        batch_size = 1 if alone else max(1, min(self.batch_size, -(-len(todo) // self.workers)))
        rows = [{"id": r.id, "record": json.dumps(r.to_dict(), ensure_ascii=False)} for r in todo]
        blocks = max(1, len(rows) // batch_size)  # a block of >= batch_size rows is one task (no bundling of blocks)
        with warnings.catch_warnings():  # max_restarts / max_task_retries: still the way in the pinned 2.60
            warnings.simplefilter("ignore", DeprecationWarning)
            dataset = self._pipeline(from_items(rows, override_num_blocks=blocks), batch_size, alone)
        for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
            bar.update(writer.write_batch({key: list(value) for key, value in batch.items()}))

    def _not_started(self) -> InputError:
        each = amount(self.cpus, "CPU") + (f" and {amount(self.gpus, 'GPU')}" if self.gpus else "")
        return InputError(f"the workers ({self.workers} of {each}) did not start within "
                          f"{self.settings.start_timeout:g} s: the cluster's resources are taken (by other jobs?) or "
                          "the detector takes longer to load; what was written is kept, run the command again to "
                          "resume", field="--workers")

    def _pipeline(self, dataset: Any, batch_size: int, alone: bool) -> Any:
        from ray.data import ActorPoolStrategy

        # alone: one task in flight per actor, so that a worker's death fails no record queued behind the culprit
        pool = ActorPoolStrategy(size=self.workers, max_tasks_in_flight_per_actor=1 if alone else None)
        return dataset.map_batches(
            _DetectActor, fn_constructor_kwargs={"model": self.model, "options": self.options,
                                                 "factory": self.factory, "evidence": self.evidence},
            batch_size=batch_size, batch_format="numpy", compute=pool,
            num_cpus=self.cpus, num_gpus=self.gpus, max_restarts=-1, max_task_retries=self.settings.max_retries)
