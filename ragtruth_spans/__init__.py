"""ragtruth-spans: find the exact hallucinated character spans in answers from retrieval-augmented LLMs.

The public API is small and imported lazily, so ``import ragtruth_spans`` does not load torch:

- :class:`Span`, :class:`Record` — the data types (character offsets, half-open ``[start, end)``).
- :func:`load_ragtruth` — read an official RAGTruth directory into records.
- :func:`evaluate` — score predicted spans against gold records.
- :class:`Detector` — a fine-tuned generative detector: ``Detector.from_pretrained(path).detect(...)``.
- :func:`select_best` — best-of-N answer selection by detected hallucinations.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Span": "ragtruth_spans.schema",
    "Record": "ragtruth_spans.schema",
    "InputError": "ragtruth_spans.schema",
    "HALLUCINATION_TYPES": "ragtruth_spans.schema",
    "TASK_TYPES": "ragtruth_spans.schema",
    "read_records": "ragtruth_spans.schema",
    "load_ragtruth": "ragtruth_spans.ragtruth",
    "sample_data_dir": "ragtruth_spans.ragtruth",
    "to_dataset": "ragtruth_spans.ragtruth",
    "evaluate": "ragtruth_spans.evaluation",
    "Report": "ragtruth_spans.evaluation",
    "Detector": "ragtruth_spans.detector",
    "select_best": "ragtruth_spans.selection",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ragtruth_spans' has no attribute {name!r}")
