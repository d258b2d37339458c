"""Best-of-N selection: ``select`` measures it on a labelled corpus, ``select-best`` picks among your own
candidate responses with a detector."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ragtruth_spans.cli.common import (
    LoadFlags,
    app,
    argument_text,
    bootstrap_option,
    data_alias_option,
    data_inputs,
    detector_command,
    gold_path,
    model_option,
    note,
    out,
    resolve_model,
    user_errors,
)

STRATEGY_HELP = ("auto (max-confidence when every candidate has a response score, else fewest-spans) | "
                 "fewest-spans | no-spans | least-hallucinated-chars | max-confidence.")
DEFAULT_STRATEGY = "auto"
"""= ``ragtruth_spans.selection.select.DEFAULT_STRATEGY`` (not imported here: the CLI starts without detectors;
tests/selection/test_selection.py keeps the two equal)."""
TIE_BREAK_HELP = "random (seeded) | first | shortest."
NO_JUDGEMENT_EXIT = 3
"""``select-best``'s exit status when the detector could judge no candidate (nothing chosen); 2 stays bad input."""


@app.command("select")
def select_command(
    gold: Optional[Path] = typer.Option(None, "--gold", help="Prepared records with gold spans (e.g. "
                                        "OUT/test.jsonl) or a RAGTruth dataset folder (its test split)."),
    pred: Path = typer.Option(..., "--pred", help="Predictions JSONL for those records."),
    models: str = typer.Option(..., "--models", help="Comma-separated models to select among, e.g. "
                               "llama-2-7b-chat,mistral-7B-instruct."),
    strategy: str = typer.Option(DEFAULT_STRATEGY, "--strategy", help=STRATEGY_HELP),
    tie_break: str = typer.Option("random", "--tie-break", help=TIE_BREAK_HELP),
    bootstrap: int = bootstrap_option(),
    seed: int = typer.Option(0, "--seed", help="Seed of the random tie-breaks and of the bootstrap."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the report as JSON."),
    model: Optional[str] = typer.Option(None, "--model", help="The detector that wrote --pred (a run directory or "
                                        "a detector name), whose training data is compared with the gold "
                                        "(default: the one --pred's .meta.json names)."),
    drop_overlap: bool = typer.Option(False, "--drop-overlap", help="Leave out the gold responses that share a "
                                      "source or a response with the detector's training data (their sources "
                                      "then lack a candidate and are skipped)."),
    data: Optional[Path] = data_alias_option(),
) -> None:
    """Measure best-of-N answer selection on a labelled corpus (RAGTruth Table 7): one response per source among
    --models, picked by the predicted spans, against each model alone, random and the oracle; how many responses
    the detector saw in training, and the figures without them."""
    from ragtruth_spans.core.files import check_output_path
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation import load_gold
    from ragtruth_spans.evaluation.overlap import count_overlap, without
    from ragtruth_spans.pipeline.trained_on import predictions_training_data
    from ragtruth_spans.selection.corpus import evaluate_selection

    with user_errors():
        gold = gold_path(gold, data)
        if json_out is not None:
            json_out = check_output_path(json_out, field="--json",  # before any work
                                         inputs=[*data_inputs("--gold", gold), ("--pred", pred)])
        records, _ = load_gold(gold)
        pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
        names = [m.strip() for m in models.split(",") if m.strip()]
        overlap = count_overlap(records, predictions_training_data(pred, model))

        def selection(gold: list) -> dict:
            return evaluate_selection(gold, pred_file.spans, names, strategy, seed, bootstrap, tie_break=tie_break,
                                      response_scores=pred_file.response_scores, errors=pred_file.errors).to_dict()

        report = selection(without(records, overlap.ids) if drop_overlap else records)
        rest = selection(without(records, overlap.ids)) if overlap.ids and not drop_overlap else None
        report["overlap"] = overlap.to_dict() | {"dropped": len(overlap.ids) if drop_overlap else 0, "rest": rest}
    _print_selection(report, rest, overlap, drop_overlap)
    if json_out is not None:
        with user_errors():
            write_json(json_out, report)
        note(f"wrote {json_out}")


def _print_selection(report: dict, rest: dict | None, overlap: Any, drop_overlap: bool) -> None:
    """The selection report's tables (with the figures without the overlapping responses, when any) and notes:
    overlap, skipped sources, detector errors among the candidates."""
    from ragtruth_spans.reporting.console import selection_table

    out.print(selection_table(report))
    if rest is not None:
        out.print(selection_table(rest, title_prefix=f"Without the {len(overlap.ids)} responses that overlap the "
                                                     "training data: "))
    note(overlap.words() + (" (left out: --drop-overlap)" if drop_overlap and overlap.ids else ""))
    sources = report["sources"]
    if sources["skipped"]:
        reasons = ", ".join(f"{reason} ({count})" for reason, count in sources["skipped_reasons"].items())
        note(f"skipped {sources['skipped']} of {sources['total']} sources: {reasons}")
    if report["selected"]["detector_errors"]:
        note(f"{report['selected']['detector_errors']} candidate(s) in the sources used were detector errors (the "
             "detector could not judge them): ranked after every judged candidate, never counted as clean")


@detector_command("select-best")
def select_best_command(
    model: Optional[str] = model_option(),
    context: str = typer.Option(..., "--context", help="The context (passages, article, data): text, or @FILE "
                                "for a UTF-8 file's content."),
    candidates: Path = typer.Option(..., "--candidates", help='JSONL, one {"response": "...", "id"?: "..."} '
                                    "per line."),
    task: Optional[str] = typer.Option(None, "--task", help="QA, Summary or Data2txt (default: QA with a "
                                       "--question, else Summary)."),
    question: Optional[str] = typer.Option(None, "--question", help="The question (QA): text, or @FILE."),
    strategy: str = typer.Option(DEFAULT_STRATEGY, "--strategy", help=STRATEGY_HELP),
    tie_break: str = typer.Option("random", "--tie-break", help=TIE_BREAK_HELP),
    seed: int = typer.Option(0, "--seed", help="Seed of the random tie-breaks."),
    load: LoadFlags = LoadFlags(),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the selection as JSON."),
) -> None:
    """Pick the least hallucinated of your candidate responses to one input, with a detector. Exit status 0, 2 for
    bad input, 3 when the detector could judge no candidate (nothing is chosen)."""
    from ragtruth_spans.core.errors import check_choice
    from ragtruth_spans.core.fields import check_text
    from ragtruth_spans.core.files import check_output_path
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.types import TASK_TYPES
    from ragtruth_spans.detectors.base import quick_task
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.reporting.console import candidates_table, printable
    from ragtruth_spans.selection.select import read_candidates, select_best

    with user_errors():
        if json_out is not None:
            files = {"--candidates": candidates} | {flag: value[1:] for flag, value in
                                                     (("--context", context), ("--question", question))
                                                     if value is not None and value.startswith("@")}
            json_out = check_output_path(json_out, field="--json", inputs=files)
        task = quick_task(task, question)
        check_choice(task, TASK_TYPES, "task", field="--task")
        question = check_text(argument_text(question, "--question"), field="--question", optional=True)
        context_text = check_text(argument_text(context, "--context"), field="--context", nonempty=True)
        items = read_candidates(candidates)
        detector = load_detector(resolve_model(model), **load.options().load_kwargs())
        chosen = select_best(items, strategy=strategy, seed=seed, tie_break=tie_break, detector=detector,
                             context=context_text, task=task, question=question)
    payload = chosen.to_dict()
    out.print(candidates_table(payload))
    if json_out is not None:
        with user_errors():
            write_json(json_out, payload)
        note(f"wrote {json_out}")
    if chosen.no_judgement or chosen.candidate is None:
        note(f"no judgement: the detector could not judge any of the {len(items)} candidates; nothing was chosen "
             f"(exit status {NO_JUDGEMENT_EXIT})")
        raise typer.Exit(code=NO_JUDGEMENT_EXIT)
    how = f"; tie among {chosen.tied} broken by {chosen.tie_break}" if chosen.tie_broken else ""
    flag = "; no clean candidate, fell back to fewest spans" if chosen.fallback else ""
    out.print(printable(f"Chosen: candidate {chosen.index} (id {chosen.candidate.id}){how}{flag}"), markup=False)
    out.print(printable(chosen.candidate.response), markup=False)
