"""Run a detector over a prepared split and write a predictions file (resumable).

The output is the predictions file of :mod:`ragtruth_spans.core.predictions`: one JSON line per response with
``id``, ``spans`` (characters of the response, half-open), the response ``score``, ``error`` when the detector
could not judge the response, and the detector's diagnostics.

Any detector of the shared interface works: ``model`` is a run directory or a detector name, loaded by
:func:`ragtruth_spans.load_detector` with ``options`` (e.g. ``device``, ``batch_size``, ``backend``), or an
already loaded ``detector`` is given. Records go to ``detect_batch`` in chunks of ``chunk_size`` (default: the
detector's ``preferred_chunk_size``; it batches inside a chunk as it likes); each chunk's lines are appended and
flushed before the next, so an interruption loses at most the chunk in flight.

The file describes what wrote it: ``OUT.meta.json`` beside it records the detector (``describe()``: its kind, run
directory, run fingerprint and the settings that change outputs), its operating point (``operating_point``: the
decision settings it used — threshold(s), gate, aggregation, generation budget — and the load options it was given)
and the sha256 of the data file. Resuming is
allowed only with the same detector and data (a run directory may have moved: with a fingerprint, its path is not
compared); anything else stops with the settings that differ. A predictions file without its ``.meta.json``,
or with ids that are not in ``data``, is never appended to.

Evidence (``evidence``: an :class:`~ragtruth_spans.evidence.EvidenceFinder`): each span also gets its
evidence in the context (``verdict``, ``reason``, ``evidence``); the sidecar records the finder's settings, and a
resume with other evidence settings is refused like one with another detector.

A record that makes the detector raise fails only itself (:func:`detect_isolated`): its line carries ``error``
and the diagnostic ``detector_exception``, counted with the other failures.

Resuming: ids already present in the output file are skipped (and counted). Before a byte of an existing
``--out`` is touched it must be a predictions file of this command: its ``.meta.json`` must exist and say so
(otherwise it is refused, untouched), and the detector, data and evidence settings must match. Only then is a last
line cut mid-write by a crash removed (and reported); that repair replaces the file atomically.

The output follows the policy of :func:`~ragtruth_spans.core.files.check_output_path`: ``--out`` (and its
``.meta.json``) may not resolve to ``--data`` or to any other input, nor be a FIFO or a device; a symbolic link
is written through and locked by its target.

One writer per output: ``predict`` holds the advisory lock ``OUT.lock`` for the whole run, so a second ``predict``
on the same ``--out`` is refused at once (one line naming the holder, exit 2) instead of writing every id twice.

A failure to write (a full disk, a file-size limit, a read-only file system, a permission) is one
:class:`InputError` naming the file, never an ``OSError`` traceback; the lines written before it stay (at most the
last one cut, which the resume removes), so the same command resumes once the cause is gone.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import append_text, atomic_write_bytes, check_output_path, exclusive_output
from ragtruth_spans.core.jsonl import file_sha256, loads_json, read_json_file, read_records
from ragtruth_spans.core.predictions import count_diagnostics, prediction_row
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import Detection, Detector, operating_point

META_SUFFIX = ".meta.json"
RESUME_HINT = ("; the lines written so far are kept: free some space (or lift the limit) and run the same command "
               "again to resume")
"""What a failure to append to the predictions file (a full disk, a file-size limit) tells the user to do."""


def meta_path(out: str | Path) -> Path:
    """The sidecar that says what wrote a predictions file: ``OUT.meta.json``."""
    return Path(str(out) + META_SUFFIX)


def _comparable(detector_info: dict[str, Any]) -> dict[str, Any]:
    """What must match to resume: everything, except the run directory's path when a fingerprint names the run."""
    return {k: v for k, v in detector_info.items() if not (k == "run_dir" and detector_info.get("fingerprint"))}


PREDICTIONS_FORMAT = "ragtruth-spans predictions"


def stored_meta(out: Path) -> dict[str, Any] | None:
    """The ``.meta.json`` of an existing predictions file (None when ``out`` is absent or empty and has no
    sidecar). An existing, non-empty ``out`` without a sidecar of this command, or a sidecar that is not one
    (not an object, another ``format``, a ``detector`` that is not an object), raises :class:`InputError` before
    anything is written: a file that is not a predictions file of ``predict`` is never touched."""
    sidecar = meta_path(out)
    has_bytes = out.is_file() and out.stat().st_size > 0
    if not sidecar.exists():
        if has_bytes:
            raise InputError(f"this file has no {sidecar.name} saying what wrote it (not a predictions file of "
                             "predict, an older version or another tool): it is left untouched; delete it or "
                             "choose another --out",
                             path=out)
        return None
    stored = read_json_file(sidecar)
    if not isinstance(stored, dict) or stored.get("format", PREDICTIONS_FORMAT) != PREDICTIONS_FORMAT:
        raise InputError(f"not the sidecar of a predictions file (expected a JSON object with format "
                         f"{PREDICTIONS_FORMAT!r}); {out.name} is left untouched", path=sidecar)
    if not isinstance(stored.get("detector", {}), dict):
        raise InputError(f"must be a JSON object (the detector's description), got "
                         f"{type(stored['detector']).__name__}", path=sidecar, field="detector")
    return stored


def check_meta(out: Path, meta: dict[str, Any], *, has_lines: bool) -> None:
    """Refuse to append to a predictions file written by another detector, other settings or other data; write
    the sidecar for a new file."""
    from ragtruth_spans.core.jsonl import write_json

    sidecar = meta_path(out)
    stored = stored_meta(out)
    if stored is None:
        if has_lines:
            raise InputError(f"this predictions file has no {sidecar.name} saying what wrote it (an older version or "
                             "another tool): delete it or choose another --out", path=out)
        write_json(sidecar, meta)
        return
    old, new = _comparable(stored.get("detector", {})), _comparable(meta["detector"])
    differ = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    if stored.get("data_sha256") != meta["data_sha256"]:
        differ.append("data (sha256 of --data)")
    if stored.get("evidence") != meta.get("evidence"):
        differ.append("evidence (--evidence, --evidence-mode)")
    if differ:
        raise InputError(f"the predictions here were written with other settings (differs in: {', '.join(differ)}); "
                         "choose another --out, or delete the file and its .meta.json to start over", path=out)


@dataclass
class PredictSummary:
    """Counts of one ``predict`` run (``responses`` = records considered after ``limit``); ``counters`` are the
    detector's diagnostics counted by name (:func:`~ragtruth_spans.core.predictions.count_diagnostics`)."""

    responses: int
    skipped_done: int
    out_path: str
    predicted: int = 0
    errors: int = 0
    spans: int = 0
    counters: dict[str, int] = field(default_factory=dict)
    repaired_last_line: bool = False
    load_seconds: float = 0.0
    predict_seconds: float = 0.0

    @property
    def responses_per_second(self) -> float:
        return self.predicted / self.predict_seconds if self.predict_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"responses_per_second": round(self.responses_per_second, 3)}

    def add(self, detection: Detection) -> None:
        """Count one written line."""
        self.predicted += 1
        self.errors += not detection.ok
        self.spans += len(detection.spans)
        count_diagnostics(detection.diagnostics, self.counters)

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one written line given as its parsed JSON (what another engine's workers send back)."""
        self.predicted += 1
        self.errors += row.get("error") is not None
        self.spans += len(row.get("spans") or ())
        count_diagnostics(row, self.counters)


def read_done_ids(out_path: str | Path) -> tuple[set[str], bytes | None, bool]:
    """Ids already in a predictions file, the file's bytes as they must be rewritten (None: as they are) and
    whether that cuts an incomplete last line. Reads only: nothing is written.

    A last line without its newline that is not valid JSON is the trace of an interrupted write: the bytes to
    write cut it off; a valid last line without its newline gets one. Any other malformed line raises
    :class:`InputError` naming the file and line.
    """
    out_path = Path(out_path)
    if not out_path.is_file():
        return set(), None, False
    data = out_path.read_bytes()
    fixed: bytes | None = None
    cut = False
    if data and not data.endswith(b"\n"):
        last_start = data.rfind(b"\n") + 1
        try:
            json.loads(data[last_start:])
            data += b"\n"
        except (json.JSONDecodeError, UnicodeDecodeError):
            data, cut = data[:last_start], True
        fixed = data
    ids: set[str] = set()
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = loads_json(raw, out_path, lineno)
        except InputError as exc:
            raise InputError(f"{exc.message}; fix or delete the file to restart", path=out_path, line=lineno) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            raise InputError("a prediction line needs a string id", path=out_path, line=lineno, field="id")
        ids.add(obj["id"])
    return ids, fixed, cut


def predict_file(model: str | Path | None, data: str | Path, out: str | Path, *,
                 chunk_size: int | None = None, limit: int | None = None, progress: bool = True,
                 detector: Detector | None = None, detector_options: Mapping[str, Any] | None = None,
                 evidence: Any = None, **options: Any) -> PredictSummary:
    """Predict spans for the records of ``data`` (a prepared split file) into ``out``; see the module docstring.

    ``limit``: only the first ``limit`` records of ``data``. ``detector``: an already loaded detector (then
    ``model`` and ``options`` are not used to load one). ``detector_options`` are added to ``options`` (for option
    names that are also parameters of this function, such as the judge's ``model``). The detector is loaded (and
    its identity checked against ``OUT.meta.json``) even when every record is done, so a wrong ``model`` never
    passes unnoticed. ``evidence``: an ``EvidenceFinder`` that adds each span's evidence (None: no evidence).
    """
    if chunk_size is not None and chunk_size < 1:
        raise InputError(f"must be >= 1, got {chunk_size}", field="chunk_size")
    if limit is not None and limit < 0:
        raise InputError(f"must be >= 0, got {limit}", field="limit")
    inputs = {"--data": data}
    out = check_output_path(out, field="--out", inputs=inputs)
    check_output_path(meta_path(out), field="--out", inputs=inputs)
    records = read_records(data)
    with exclusive_output(out):
        return _predict_locked(records, model, data, out, chunk_size=chunk_size, limit=limit, progress=progress,
                               detector=detector, options={**options, **(detector_options or {})},
                               evidence=evidence)


def plan_run(records: list[Record], data: str | Path, out: Path, *,
             limit: int | None) -> tuple[list[Record], PredictSummary, set[str], bytes | None]:
    """What a run still has to do: the records of ``data`` (the first ``limit``) whose ids are not yet in ``out``,
    sorted by length, the summary that counts the skipped ones, the ids already in ``out`` and the bytes ``out``
    must be rewritten to before appending (None: as it is; a last line cut by a crash is removed, and reported).
    Reads only: an existing ``out`` that ``predict`` did not write, or whose ids ``data`` lacks (other data),
    raises :class:`InputError`. The caller writes the repair once ``check_meta`` has passed. Shared by every
    engine (this module, :mod:`ragtruth_spans.pipeline.ray_engine`)."""
    stored_meta(out)  # an existing --out that predict did not write is refused before a byte is touched
    finished, fixed, repaired = read_done_ids(out)
    foreign = sorted(finished - {r.id for r in records})
    if foreign:
        raise InputError(f"{len(foreign)} id(s) in the predictions file are not in {data}, e.g. {foreign[0]!r}: "
                         "it belongs to other data", path=out)
    if limit is not None:
        records = records[:limit]
    todo = [r for r in records if r.id not in finished]
    summary = PredictSummary(responses=len(records), skipped_done=len(records) - len(todo), out_path=str(out),
                             repaired_last_line=repaired)
    # Similar lengths in one chunk waste less padding; the file is keyed by id, so its order does not matter.
    todo.sort(key=lambda r: len(r.context) + len(r.response) + len(r.question or ""))
    return todo, summary, finished, fixed


def predictions_meta(detector_info: dict[str, Any], data: str | Path, evidence: Any = None,
                     point: dict[str, Any] | None = None) -> dict[str, Any]:
    """The content of ``OUT.meta.json``: the detector's ``describe()``, its operating point (``point``:
    :func:`~ragtruth_spans.detectors.base.operating_point`, when known), the data file and its sha256, and the
    evidence finder's settings when there is one."""
    meta = {"format": PREDICTIONS_FORMAT, "detector": detector_info, "data": str(data),
            "data_sha256": file_sha256(data)}
    if point is not None:
        meta["operating_point"] = point
    if evidence is not None:
        meta["evidence"] = evidence.describe()
    return meta


def prediction_line(record_id: str, detection: Detection) -> str:
    """One line of the predictions file, newline included."""
    return json.dumps(prediction_row(record_id, detection), ensure_ascii=False) + "\n"


def detect_isolated(detector: Detector, chunk: list[Record], evidence: Any = None) -> list[Detection]:
    """``detector.detect_batch(chunk)`` (with the evidence attached), where one record that makes the detector
    raise fails only itself: the chunk is split in halves until the failing records stand alone, and each of them
    gets a Detection with ``error`` ("the detector failed on this record: ...") and the diagnostic
    ``detector_exception``. When every record of a chunk of two or more fails alone, the failure is not the
    records' (a broken model, a full GPU): the first exception is raised and the run stops."""
    try:
        detections = detector.detect_batch(chunk)
        return evidence.attach_batch(chunk, detections) if evidence is not None else detections
    except Exception as exc:
        if len(chunk) == 1:
            return [Detection(spans=[], error=f"the detector failed on this record: {type(exc).__name__}: {exc}",
                              diagnostics={"detector_exception": True})]
        first = exc
    middle = len(chunk) // 2
    detections = detect_isolated(detector, chunk[:middle], evidence) + detect_isolated(detector, chunk[middle:],
                                                                                      evidence)
    if all(d.diagnostics.get("detector_exception") for d in detections):
        raise first
    return detections


def _predict_locked(records: list[Record], model: str | Path | None, data: str | Path, out: Path, *,
                    chunk_size: int | None, limit: int | None, progress: bool, detector: Detector | None,
                    options: Mapping[str, Any], evidence: Any = None) -> PredictSummary:
    """The body of :func:`predict_file`, run while holding the output's lock."""
    todo, summary, finished, fixed = plan_run(records, data, out, limit=limit)
    started = time.perf_counter()
    if detector is None:
        from ragtruth_spans.detectors.loader import load_detector

        detector = load_detector(model, **options)
    summary.load_seconds = time.perf_counter() - started
    check_meta(out, predictions_meta(detector.describe(), data, evidence, operating_point(detector)),
               has_lines=bool(finished))
    if fixed is not None:  # only now: the file is a predictions file of this detector and data
        atomic_write_bytes(out, fixed)
    if not todo:
        return summary
    chunk_size = chunk_size or detector.preferred_chunk_size
    out.parent.mkdir(parents=True, exist_ok=True)
    append_text(out, "", hint=RESUME_HINT)  # the file exists (and takes appends) before the first detection
    started = time.perf_counter()
    with progress_bar(len(todo), enabled=progress) as bar:
        for i in range(0, len(todo), chunk_size):
            chunk = todo[i:i + chunk_size]
            detections = detect_isolated(detector, chunk, evidence)
            append_text(out, "".join(prediction_line(r.id, d) for r, d in zip(chunk, detections)), hint=RESUME_HINT)
            for detection in detections:
                summary.add(detection)
            bar.update(len(chunk))
    summary.predict_seconds = time.perf_counter() - started
    return summary


def progress_bar(total: int, *, enabled: bool):
    """The progress bar of a run (responses), shown on a terminal unless the run is quiet."""
    from tqdm.auto import tqdm

    from ragtruth_spans.core.logs import progress_enabled

    return tqdm(total=total, unit="response", desc="predict", disable=not (enabled and progress_enabled()),
                dynamic_ncols=True)
