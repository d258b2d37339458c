"""``ragtruth-spans evaluate``: score a predictions file against gold spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ragtruth_spans.cli.common import app, note, out, user_errors
from ragtruth_spans.core.errors import InputError


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


@app.command("evaluate")
def evaluate_command(
    gold: Path = typer.Option(..., "--gold", help="Prepared split file (e.g. OUT/test.jsonl) or a RAGTruth "
                              "dataset directory (its test split, quality 'good')."),
    pred: Path = typer.Option(..., "--pred", help="Predictions JSONL: {\"id\", \"spans\": [{start, end, type?, "
                              "score?}], \"score\"?} per line."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the full report as JSON here."),
    ignore_implicit_true: bool = typer.Option(False, "--ignore-implicit-true",
                                              help="Drop gold spans marked implicit_true (RAGTruth §3.4)."),
    ignore_due_to_null: bool = typer.Option(False, "--ignore-due-to-null",
                                            help="Drop gold spans marked due_to_null (RAGTruth §3.4)."),
    allow_missing: bool = typer.Option(False, "--allow-missing",
                                       help="A gold response with no prediction line counts as no spans."),
    bootstrap: int = typer.Option(0, "--bootstrap", min=0, help="Resamples for 95% confidence intervals."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
) -> None:
    """Score predicted spans against gold: character-overlap P/R/F1, response-level P/R/F1, type recall,
    seqeval, AUROC, by task and by model."""
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation import evaluate, load_gold
    from ragtruth_spans.reporting.console import print_evaluation

    with user_errors():
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
    print_evaluation(report.to_dict(), out)
    if json_out is not None:
        write_json(json_out, report.to_dict())
        note(f"report written to {json_out}")
