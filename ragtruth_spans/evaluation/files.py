"""Evaluate a predictions file against gold records on disk: what ``ragtruth-spans evaluate`` reports, as a
function, so every command that scores predictions (``evaluate``, ``benchmark``, ``report``) gives the same
figures and notes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.evaluation.report import Report

if TYPE_CHECKING:
    from ragtruth_spans.core.predictions import PredictionFile
    from ragtruth_spans.core.types import Record


def diagnostics_notes(diagnostics: dict[str, Any]) -> list[str]:
    """The notes a predictions file's diagnostics call for (detector failures, the detector's own counters); none
    for a :class:`~ragtruth_spans.core.predictions.PredictionFile` built in code (empty diagnostics)."""
    notes = []
    if diagnostics.get("errors"):
        notes.append(f"{diagnostics['errors']} of {diagnostics['lines']} prediction lines are detector failures "
                     "(their 'error' is set): they count as predicting no span")
    counters = {k: v for k, v in (diagnostics.get("counters") or {}).items() if v}
    if counters:
        notes.append("detector diagnostics (counted by name over the prediction lines): "
                     + ", ".join(f"{k} {v}" for k, v in counters.items()))
    return notes


def evaluate_files(gold: str | Path, pred: str | Path, *, ignore_implicit_true: bool = False,
                   ignore_due_to_null: bool = False, allow_missing: bool = False, bootstrap: int = 0,
                   seed: int = 0) -> Report:
    """The :class:`Report` of the predictions file ``pred`` against ``gold`` (a prepared split file or a RAGTruth
    directory, see :func:`~ragtruth_spans.evaluation.load_gold`), with the gold source, the predictions'
    diagnostics and the notes they call for."""
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation.gold import load_gold

    records, gold_info = load_gold(gold)
    pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
    return evaluate_prediction_file(records, pred_file, pred, gold_info=gold_info,
                                    ignore_implicit_true=ignore_implicit_true, ignore_due_to_null=ignore_due_to_null,
                                    allow_missing=allow_missing, bootstrap=bootstrap, seed=seed)


def evaluate_prediction_file(records: Sequence[Record], pred_file: PredictionFile, source: str | Path, *,
                             gold_info: dict[str, Any] | None = None, **options: Any) -> Report:
    """The :class:`Report` of ``pred_file`` (the predictions read from ``source``) against the gold ``records``
    (``options`` go to :func:`~ragtruth_spans.evaluation.evaluate`), with the predictions' source and diagnostics
    and the notes they call for; with ``gold_info`` (from :func:`~ragtruth_spans.evaluation.load_gold`) also the
    gold source and its note. What ``evaluate`` rejects is an :class:`InputError` naming ``source``."""
    from ragtruth_spans.evaluation.evaluator import evaluate

    try:
        report = evaluate(records, pred_file.spans, response_scores=pred_file.response_scores, **options)
    except InputError as exc:  # what evaluate() rejects here is about the predictions (e.g. a missing id)
        raise InputError(str(exc), path=source) from None
    if gold_info is not None:
        report.settings["gold"] = gold_info
    report.settings.update(predictions=str(source), prediction_diagnostics=pred_file.diagnostics)
    report.notes.extend(diagnostics_notes(pred_file.diagnostics))
    if gold_info is not None and gold_info.get("labels_unrepairable_dropped"):
        report.notes.append(f"{gold_info['labels_unrepairable_dropped']} gold label(s) of the RAGTruth test split "
                            "could not be aligned to the response and were dropped by the conversion")
    return report
