"""Prepared records as a Hugging Face :class:`datasets.Dataset` (typed columns, spans as a list of structs)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragtruth_spans.core.types import Record

if TYPE_CHECKING:  # pragma: no cover
    import datasets


def dataset_features() -> datasets.Features:
    """The :class:`datasets.Features` of a prepared record (spans: list of typed structs)."""
    from datasets import Features, List, Value

    span = {"start": Value("int64"), "end": Value("int64"), "type": Value("string"), "text": Value("string"),
            "implicit_true": Value("bool"), "due_to_null": Value("bool")}
    fields = {name: Value("string") for name in
              ("id", "source_id", "task_type", "model", "split", "quality", "response", "context", "question")}
    return Features({**fields, "spans": List(span)})


def to_dataset(records: Sequence[Record]) -> datasets.Dataset:
    """Records as a :class:`datasets.Dataset` with the columns of a prepared record (see :func:`dataset_features`).

    >>> from ragtruth_spans import load_ragtruth, sample_data_dir, to_dataset
    >>> records = load_ragtruth(sample_data_dir(), split="test")
    >>> dataset = to_dataset(records)
    >>> dataset.num_rows, dataset.column_names[:3]
    (22, ['id', 'source_id', 'task_type'])
    >>> dataset[0]["spans"] == [{"start": s.start, "end": s.end, "type": s.type, "text": s.text,
    ...                          "implicit_true": s.implicit_true, "due_to_null": s.due_to_null}
    ...                         for s in records[0].spans]
    True
    """
    from datasets import Dataset

    rows = []
    for r in records:
        row = r.to_dict()
        row["spans"] = [{"start": s.start, "end": s.end, "type": s.type, "text": s.text,
                         "implicit_true": s.implicit_true, "due_to_null": s.due_to_null} for s in r.spans]
        rows.append(row)
    return Dataset.from_list(rows, features=dataset_features())
