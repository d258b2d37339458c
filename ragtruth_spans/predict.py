"""Run a trained detector over a prepared split and write a predictions file (resumable).

Output: JSONL, one line per response, in the format the evaluator reads::

    {"id": "...", "spans": [{"start": 10, "end": 24, "type": "Evident Conflict", "text": "opened in 1998",
                             "score": 0.93}],
     "score": 0.97, "raw": "<generated text>", "parse_ok": true, "parse_error": null, "unaligned": [],
     "truncated": false, "shortened": false, "repairs": [], "align_methods": ["exact"], "unknown_types": 0,
     "too_long": false}

Offsets are characters of the response, half-open. A line with ``parse_ok: false`` has no spans because the
output could not be read, not because the response is clean; it is counted in the summary.

Scores are probabilities of the model (see :mod:`ragtruth_spans.detector`): the line-level ``score`` is the
response's hallucination score ``1 - P(clean)`` (null when not computed: a too-long response, or a detector with
``score_clean=False``); a span's ``score`` is the mean probability of the generated tokens of its text.

Resuming: ids already present in the output file are skipped (and counted); new lines are appended and flushed
after every batch, so an interruption loses at most the batch in flight. A last line cut mid-write by a crash
is removed before appending (and reported).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from .detector import DEFAULT_MAX_NEW_TOKENS, DetectionResult
from .schema import InputError, Record, read_records

Backend = Literal["hf", "vllm"]


class SupportsDetectBatch(Protocol):
    def detect_batch(self, items: Sequence[Record], batch_size: int = ..., on_batch: Any = ...) -> list[DetectionResult]:
        ...


@dataclass
class PredictSummary:
    """Counts of one ``predict`` run (``responses`` = records considered after ``limit``)."""

    responses: int
    skipped_done: int
    predicted: int
    parse_failures: int
    truncated_outputs: int
    spans: int
    unaligned_spans: int
    shortened_contexts: int
    too_long: int
    repaired_last_line: bool
    load_seconds: float
    predict_seconds: float
    out_path: str

    @property
    def responses_per_second(self) -> float:
        return self.predicted / self.predict_seconds if self.predict_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"responses_per_second": round(self.responses_per_second, 3)}

    def render(self) -> str:
        lines = [
            f"responses: {self.responses} ({self.predicted} predicted, {self.skipped_done} skipped as already in "
            f"{self.out_path})",
            f"parse failures: {self.parse_failures} (of which too long to run: {self.too_long})   "
            f"truncated outputs: {self.truncated_outputs}   shortened contexts: {self.shortened_contexts}",
            f"spans: {self.spans}   unaligned spans: {self.unaligned_spans}",
            f"throughput: {self.responses_per_second:.2f} responses/s ({self.predict_seconds:.1f} s generating, "
            f"{self.load_seconds:.1f} s loading)",
        ]
        if self.repaired_last_line:
            lines.append("note: removed an incomplete last line (interrupted write) before resuming")
        return "\n".join(lines)


def prediction_row(record_id: str, result: DetectionResult) -> dict[str, Any]:
    """One predictions-file line: ``id``, ``spans`` and the diagnostics."""
    return {"id": record_id, "spans": [s.to_dict() for s in result.spans]} | result.diagnostics()


def done_ids(out_path: str | Path) -> tuple[set[str], bool]:
    """Ids already in a predictions file and whether an incomplete last line was removed from it.

    A last line without its newline that is not valid JSON is the trace of an interrupted write: it is cut off.
    Any other malformed line raises :class:`InputError` naming the file and line.
    """
    out_path = Path(out_path)
    if not out_path.exists():
        return set(), False
    data = out_path.read_bytes()
    repaired = False
    if data and not data.endswith(b"\n"):
        last_start = data.rfind(b"\n") + 1
        try:
            json.loads(data[last_start:])
            data += b"\n"
        except json.JSONDecodeError:
            data = data[:last_start]
            repaired = True
        out_path.write_bytes(data)
    ids: set[str] = set()
    for lineno, raw in enumerate(data.decode("utf-8").splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno}); fix or delete the file to restart",
                             path=out_path, line=lineno) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            raise InputError("a prediction line needs a string id", path=out_path, line=lineno, field="id")
        ids.add(obj["id"])
    return ids, repaired


def load_backend(model: str | Path, backend: Backend = "hf", *, max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 load_in_4bit: bool | None = None, device: str | None = None) -> SupportsDetectBatch:
    """A detector for ``backend``: ``"hf"`` (transformers + peft, CPU or GPU) or ``"vllm"`` (optional, GPU)."""
    if backend == "hf":
        from .detector import Detector

        return Detector.from_pretrained(model, load_in_4bit=load_in_4bit, device=device,
                                        max_new_tokens=max_new_tokens)
    if backend == "vllm":
        from .vllm_backend import VLLMDetector

        return VLLMDetector.from_pretrained(model, load_in_4bit=load_in_4bit, max_new_tokens=max_new_tokens)
    raise InputError(f"unknown backend {backend!r} (expected 'hf' or 'vllm')", field="backend")


def predict_file(model: str | Path, data: str | Path, out: str | Path, *, batch_size: int = 8,
                 limit: int | None = None, backend: Backend = "hf", max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS,
                 load_in_4bit: bool | None = None, device: str | None = None, progress: bool = True,
                 detector: SupportsDetectBatch | None = None) -> PredictSummary:
    """Predict spans for the records of ``data`` (a prepared split file) into ``out``; see the module docstring.

    ``limit``: only the first ``limit`` records of ``data``. ``detector``: an already loaded detector (then
    ``model``/``backend``/``device`` are not used to load one).
    """
    if batch_size < 1:
        raise InputError(f"must be >= 1, got {batch_size}", field="batch_size")
    if limit is not None and limit < 0:
        raise InputError(f"must be >= 0, got {limit}", field="limit")
    records = read_records(data)
    if limit is not None:
        records = records[:limit]
    out = Path(out)
    finished, repaired = done_ids(out)
    todo = [r for r in records if r.id not in finished]
    summary = PredictSummary(responses=len(records), skipped_done=len(records) - len(todo), predicted=0,
                             parse_failures=0, truncated_outputs=0, spans=0, unaligned_spans=0, shortened_contexts=0,
                             too_long=0, repaired_last_line=repaired, load_seconds=0.0, predict_seconds=0.0, out_path=str(out))
    if not todo:
        return summary

    started = time.perf_counter()
    if detector is None:
        detector = load_backend(model, backend, max_new_tokens=max_new_tokens, load_in_4bit=load_in_4bit,
                                device=device)
    summary.load_seconds = time.perf_counter() - started

    # Similar lengths in one batch waste less padding; the file is keyed by id, so its order does not matter.
    todo.sort(key=lambda r: len(r.context) + len(r.response) + len(r.question or ""))
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with _progress(len(todo), enabled=progress) as bar, out.open("a", encoding="utf-8") as fh:
        for i in range(0, len(todo), batch_size):
            batch = todo[i:i + batch_size]
            results = detector.detect_batch(batch, batch_size=batch_size)
            for record, result in zip(batch, results):
                fh.write(json.dumps(prediction_row(record.id, result), ensure_ascii=False) + "\n")
                _count(summary, result)
            fh.flush()
            bar.update(len(batch))
    summary.predict_seconds = time.perf_counter() - started
    return summary


def _count(summary: PredictSummary, result: DetectionResult) -> None:
    summary.predicted += 1
    summary.parse_failures += not result.parse_ok
    summary.truncated_outputs += result.truncated
    summary.shortened_contexts += result.shortened
    summary.too_long += result.too_long
    summary.spans += len(result.spans)
    summary.unaligned_spans += len(result.unaligned)


def _progress(total: int, *, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="response", desc="predict", disable=not enabled, dynamic_ncols=True)
