"""ragtruth-spans: find the exact hallucinated character spans in answers from retrieval-augmented LLMs.

The public API is small and imported lazily, so ``import ragtruth_spans`` does not load torch:

- :class:`Span`, :class:`Record` — the data types (character offsets, half-open ``[start, end)``).
- :func:`load_ragtruth` — read an official RAGTruth directory into records.
- :func:`detect` — one call with the detector that ships inside the package (loaded once per process):
  ``detect(context, response, question=None)`` → :class:`Detection` (spans as character offsets, a score).
- :func:`load_detector` — any saved detector run (or a named rule-based one; none: the shipped one) behind one
  interface: ``load_detector(path).detect(context=..., response=..., task=...)`` → :class:`Detection`.
- :func:`evaluate` — score predicted spans against gold records.
- :func:`select_best` — best-of-N answer selection by detected hallucinations.
- :func:`load_recipe`, :func:`train` — a recipe (shipped name or YAML file, ``key=value`` overrides) and training
  it into a run directory; :func:`read_own_jsonl` and :func:`write_prepared` — your own annotated JSONL into a
  prepared directory (docs/DATA.md).

The task types and the hallucination types (RAGTruth's), and the version:

>>> import ragtruth_spans
>>> ragtruth_spans.TASK_TYPES
('QA', 'Summary', 'Data2txt')
>>> ragtruth_spans.HALLUCINATION_TYPES
('Evident Conflict', 'Subtle Conflict', 'Evident Baseless Info', 'Subtle Baseless Info')
>>> ragtruth_spans.__version__
'0.1.0'
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "Span": "ragtruth_spans.core.types",
    "Record": "ragtruth_spans.core.types",
    "HALLUCINATION_TYPES": "ragtruth_spans.core.types",
    "TASK_TYPES": "ragtruth_spans.core.types",
    "InputError": "ragtruth_spans.core.errors",
    "read_records": "ragtruth_spans.core.jsonl",
    "load_ragtruth": "ragtruth_spans.data.ragtruth",
    "sample_data_dir": "ragtruth_spans.data.ragtruth",
    "to_dataset": "ragtruth_spans.data.hf_dataset",
    "Detector": "ragtruth_spans.detectors.base",
    "Detection": "ragtruth_spans.detectors.base",
    "DetectItem": "ragtruth_spans.detectors.base",
    "load_detector": "ragtruth_spans.detectors.loader",
    "detect": "ragtruth_spans.detectors.quick_detect",
    "evaluate": "ragtruth_spans.evaluation.evaluator",
    "Report": "ragtruth_spans.evaluation.report",
    "select_best": "ragtruth_spans.selection.select",
    "load_recipe": "ragtruth_spans.detectors.recipes",
    "train": "ragtruth_spans.detectors.train",
    "read_own_jsonl": "ragtruth_spans.data.own_jsonl",
    "write_prepared": "ragtruth_spans.data.imported",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __dir__() -> list[str]:
    """The module's own names and the lazily imported entry points (so ``dir()`` and completion list them)."""
    return sorted({*globals(), *_EXPORTS})


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'ragtruth_spans' has no attribute {name!r}")
