"""Evaluation: metric definitions (:mod:`.metrics`), the evaluator (count → pool → report), gold loading and the
bootstrap. ``evaluate`` is the entry point."""

from ragtruth_spans.evaluation.evaluator import evaluate
from ragtruth_spans.evaluation.gold import load_gold
from ragtruth_spans.evaluation.report import Report

__all__ = ["Report", "evaluate", "load_gold"]
