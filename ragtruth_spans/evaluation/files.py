"""Evaluate a predictions file against gold records on disk: what ``ragtruth-spans evaluate`` reports, as a
function, so every command that scores predictions (``evaluate``, ``benchmark``) gives the same figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.evaluation.report import Report


def diagnostics_notes(diagnostics: dict[str, Any]) -> list[str]:
    """The notes a predictions file's diagnostics call for (detector failures, the detector's own counters)."""
    notes = []
    if diagnostics["errors"]:
        notes.append(f"{diagnostics['errors']} of {diagnostics['lines']} prediction lines are detector failures "
                     "(their 'error' is set): they count as predicting no span")
    counters = {k: v for k, v in diagnostics["counters"].items() if v}
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
    from ragtruth_spans.evaluation.evaluator import evaluate
    from ragtruth_spans.evaluation.gold import load_gold

    records, gold_info = load_gold(gold)
    pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
    try:
        report = evaluate(records, pred_file.spans, ignore_implicit_true=ignore_implicit_true,
                          ignore_due_to_null=ignore_due_to_null, allow_missing=allow_missing,
                          bootstrap=bootstrap, seed=seed, response_scores=pred_file.response_scores)
    except InputError as exc:  # what evaluate() rejects here is about the predictions (e.g. a missing id)
        raise InputError(str(exc), path=pred) from None
    report.settings.update(gold=gold_info, predictions=str(pred), prediction_diagnostics=pred_file.diagnostics)
    report.notes.extend(diagnostics_notes(pred_file.diagnostics))
    if gold_info.get("labels_unrepairable_dropped"):
        report.notes.append(f"{gold_info['labels_unrepairable_dropped']} gold label(s) of the RAGTruth test split "
                            "could not be aligned to the response and were dropped by the conversion")
    return report
