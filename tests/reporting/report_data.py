"""Report inputs for the reporting tests: the embedded sample's test split with real detectors' predictions
(``numbers``, ``flag-all``) and a seeded random detector with scores and overlapping typed spans."""

from __future__ import annotations

import random
from pathlib import Path

from ragtruth_spans.core.jsonl import write_jsonl
from ragtruth_spans.core.predictions import prediction_row, read_prediction_file
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection
from ragtruth_spans.detectors.loader import load_detector


def sample_test_records() -> list[Record]:
    """The 22 test responses of the embedded sample (quality 'good'), with emoji and CJK text."""
    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir

    return load_ragtruth(sample_data_dir(), split="test")


def random_detections(records: list[Record], seed: int = 0) -> list[Detection]:
    """Seeded random spans (overlapping, typed or not, scored) and response scores."""
    rng = random.Random(seed)
    out = []
    for record in records:
        n = len(record.response)
        spans = []
        for _ in range(rng.choice([0, 1, 2, 3])):
            start = rng.randrange(0, max(n, 1))
            spans.append(Span(start, min(n, start + rng.choice([1, 5, 20, 60])), score=round(rng.random(), 3),
                              type=rng.choice([None, "Evident Conflict"])))
        out.append(Detection(spans=spans, score=round(rng.random(), 3)))
    return out


def write_predictions(path: Path, records: list[Record], detections: list[Detection]) -> Path:
    write_jsonl(path, (prediction_row(r.id, d) for r, d in zip(records, detections)))
    return path


def sample_prediction_files(folder: Path, records: list[Record]) -> dict[str, Path]:
    """``{name: predictions file}`` for ``numbers``, ``flag-all`` and the random detector."""
    files = {}
    for name in ("numbers", "flag-all"):
        detections = load_detector(name).detect_batch(records)
        files[name] = write_predictions(folder / f"{name}.jsonl", records, detections)
    files["random"] = write_predictions(folder / "random.jsonl", records, random_detections(records))
    return files


def read_files(files: dict[str, Path], records: list[Record]) -> dict:
    lengths = {r.id: len(r.response) for r in records}
    return {name: (str(path), read_prediction_file(path, response_lengths=lengths)) for name, path in files.items()}
