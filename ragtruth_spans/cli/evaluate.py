"""``ragtruth-spans evaluate``: score a predictions file against gold spans."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import app, bootstrap_option, data_inputs, note, out, user_errors


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
    bootstrap: int = bootstrap_option(),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    model: Optional[str] = typer.Option(None, "--model", help="The detector that wrote --pred (a run directory or "
                                        "a detector name), whose training data is compared with the gold "
                                        "(default: the one --pred's .meta.json names)."),
    drop_overlap: bool = typer.Option(False, "--drop-overlap", help="Leave out the gold responses that share a "
                                      "source or a response with the detector's training data."),
) -> None:
    """Score predicted spans against gold: character-overlap P/R/F1, response-level P/R/F1, type recall,
    seqeval, AUROC, by task and by model; how many gold responses the detector saw in training, and the figures
    without them (docs/METRICS.md)."""
    from ragtruth_spans.core.files import check_output_path
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.evaluation.files import evaluate_files
    from ragtruth_spans.pipeline.trained_on import predictions_training_data
    from ragtruth_spans.reporting.console import print_evaluation

    with user_errors():
        if json_out is not None:
            json_out = check_output_path(json_out, field="--json",  # before any work
                                         inputs=[*data_inputs("--gold", gold), ("--pred", pred)])
        training = predictions_training_data(pred, model)
        report = evaluate_files(gold, pred, ignore_implicit_true=ignore_implicit_true,
                                ignore_due_to_null=ignore_due_to_null, allow_missing=allow_missing,
                                bootstrap=bootstrap, seed=seed, training=training, drop_overlap=drop_overlap)
    print_evaluation(report.to_dict(), out)
    if json_out is not None:
        with user_errors():
            write_json(json_out, report.to_dict())
        note(f"report written to {json_out}")
