"""``ragtruth-spans report``: one self-contained HTML page with the evaluation of one or more predictions files and
a browser of the responses with their spans highlighted."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import app, bootstrap_option, data_inputs, note, user_errors
from ragtruth_spans.core.errors import InputError


def detector_names(preds: list[Path], names: list[str]) -> list[str]:
    """The name of each predictions file: ``--name`` values when given (one per ``--pred``), else the file's stem,
    or its parent folder and stem when two stems collide."""
    if names:
        if len(names) != len(preds):
            raise InputError(f"give one --name per --pred ({len(names)} names for {len(preds)} files)",
                             field="--name")
        chosen = names
    else:
        stems = [p.stem for p in preds]
        chosen = [f"{p.parent.name}/{p.stem}" if stems.count(p.stem) > 1 else p.stem for p in preds]
    duplicates = sorted({n for n in chosen if chosen.count(n) > 1})
    if duplicates:
        raise InputError(f"two predictions files have the same name {duplicates[0]!r}; tell them apart with --name",
                         field="--name")
    return chosen


@app.command("report")
def report_command(
    gold: Path = typer.Option(..., "--gold", help="Prepared split file (e.g. OUT/test.jsonl) or a RAGTruth "
                              "dataset directory (its test split, quality 'good')."),
    preds: list[Path] = typer.Option(..., "--pred", help="Predictions JSONL; repeat to compare detectors side "
                                     "by side."),
    names: list[str] = typer.Option([], "--name", help="A name for each --pred, in order (default: file stems)."),
    out_path: Path = typer.Option(Path("report.html"), "--out", help="The HTML file to write."),
    bootstrap: int = bootstrap_option(),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    ignore_implicit_true: bool = typer.Option(False, "--ignore-implicit-true",
                                              help="Drop gold spans marked implicit_true (RAGTruth §3.4)."),
    ignore_due_to_null: bool = typer.Option(False, "--ignore-due-to-null",
                                            help="Drop gold spans marked due_to_null (RAGTruth §3.4)."),
    allow_missing: bool = typer.Option(False, "--allow-missing",
                                       help="A gold response with no prediction line counts as no spans."),
    title: Optional[str] = typer.Option(None, "--title", help="Page title (default: ragtruth-spans report)."),
    models: list[str] = typer.Option([], "--model", help="The detector behind each --pred, in order (a run "
                                     "directory or a detector name; default: the one its .meta.json names), whose "
                                     "training data is compared with the gold."),
    drop_overlap: bool = typer.Option(False, "--drop-overlap", help="Leave out the gold responses that share a "
                                      "source or a response with any detector's training data."),
) -> None:
    """Write an HTML report: metrics overall / by task / by model / per type with intervals, charts, and every
    response with correct, missed and false-alarm characters highlighted. Self-contained: open it offline."""
    from ragtruth_spans.core.files import check_output_path
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation import load_gold
    from ragtruth_spans.evaluation.files import restrict_predictions
    from ragtruth_spans.evaluation.overlap import without
    from ragtruth_spans.pipeline.trained_on import overlaps_to_drop, predictions_training_data
    from ragtruth_spans.reporting.html import ReportInput, evaluate_detector, write_report

    with user_errors():
        out_path = check_output_path(out_path, field="--out",  # before any work
                                     inputs=[*data_inputs("--gold", gold), *(("--pred", p) for p in preds)])
        if models and len(models) != len(preds):
            raise InputError(f"give one --model per --pred ({len(models)} for {len(preds)} files)", field="--model")
        names = detector_names(preds, names)
        records, gold_info = load_gold(gold)
        lengths = {r.id: len(r.response) for r in records}
        trainings = [predictions_training_data(pred, models[i] if models else None) for i, pred in enumerate(preds)]
        overlaps, dropped, drop_notes = overlaps_to_drop(records, trainings, drop_overlap=drop_overlap)
        kept = without(records, dropped)
        results = [evaluate_detector(name, str(pred), records, restrict_predictions(
                                         read_prediction_file(pred, response_lengths=lengths), {r.id for r in kept}),
                                     gold_info=gold_info, bootstrap=bootstrap, seed=seed,
                                     ignore_implicit_true=ignore_implicit_true, ignore_due_to_null=ignore_due_to_null,
                                     allow_missing=allow_missing, overlap=overlap, drop=dropped)
                   for name, pred, overlap in zip(names, preds, overlaps)]
        data = ReportInput(gold=kept, detectors=results, gold_source=str(gold),
                           title=title or "ragtruth-spans report", ignore_implicit_true=ignore_implicit_true,
                           ignore_due_to_null=ignore_due_to_null, extra_notes=drop_notes)
        path = write_report(out_path, data)
    note(f"wrote {path} ({len(data.gold)} responses, {len(results)} detector(s)); open it in a browser")
