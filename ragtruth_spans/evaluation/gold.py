"""Gold records for evaluation: a prepared split file, or the test split of a raw RAGTruth directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import Record


def load_gold(path: str | Path) -> tuple[list[Record], dict[str, Any]]:
    """Gold records and a description of where they came from.

    ``path`` is a prepared split file (``.jsonl``, read as is) or a raw RAGTruth directory: then its ``test``
    split, keeping ``quality == "good"`` (the default of ``prepare`` and of the RAGTruth baselines). For a raw
    directory the description counts the test responses dropped by the quality filter and the test labels that
    the conversion repaired, dropped as unrepairable or removed as duplicates (see :mod:`ragtruth_spans.data.ragtruth`).
    """
    path = Path(path)
    if not path.is_dir():
        records = read_records(path)
        info: dict[str, Any] = {"path": str(path), "format": "prepared split file"}
    else:
        from ragtruth_spans.data.ragtruth import load_ragtruth_with_report

        records, info = load_ragtruth_with_report(path, split="test")
        info["test_responses"] = info.pop("split_responses")
    if not records:
        raise InputError("no gold records (for a RAGTruth directory: no test-split response of quality 'good')",
                         path=path)
    return records, info
