"""The ``llm-judge`` family: built by name (``load_detector("llm-judge", base_url=..., model=..., mode=...)``) or
loaded from a judge directory (``recipe.yaml`` with ``kind: llm-judge``, see
:mod:`~ragtruth_spans.detectors.judge.settings`). Nothing is trained; nothing is sent before ``detect_batch``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import Family
from ragtruth_spans.detectors.judge.settings import KIND, judge_settings, read_judge_dir


def build(**options: Any) -> Detector:
    """A judge from options (``base_url`` and ``model`` required; see docs/JUDGE.md for the others)."""
    from ragtruth_spans.detectors.judge.detector import JudgeDetector

    return JudgeDetector(judge_settings(options))


def load(judge_dir: str | Path, **options: Any) -> Detector:
    """The judge pinned by a judge directory, with ``options`` overriding its keys."""
    from ragtruth_spans.detectors.judge.detector import JudgeDetector

    return JudgeDetector(read_judge_dir(judge_dir, options))


FAMILY = Family(kind=KIND, summary="an LLM behind an OpenAI-compatible endpoint judges each response (span mode: "
                "the RAGTruth detection prompt; claims mode: a verdict per sentence)", load=load,
                named={KIND: build}, extra="judge")
