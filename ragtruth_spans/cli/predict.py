"""``ragtruth-spans predict``: run any detector over a prepared split into a predictions file."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from ragtruth_spans.cli.common import (
    aggregation_option,
    app,
    backend_option,
    batch_size_option,
    device_option,
    err,
    evidence_finder,
    family_option,
    load_in_4bit_option,
    load_options,
    max_new_tokens_option,
    note,
    threshold_option,
    user_errors,
)
from ragtruth_spans.core import logs


@app.command("predict")
def predict_command(
    model: str = typer.Option(..., "--model", help="Run directory written by `train` (or a judge directory), or "
                              "a detector name (numbers, flag-all, flag-none, sim-cosine, sim-overlap, sim-hybrid, "
                              "keyword-match, llm-judge)."),
    data: Path = typer.Option(..., "--data", help="Prepared split file, e.g. OUT/test.jsonl."),
    out_path: Path = typer.Option(..., "--out", help="Predictions JSONL to write; ids already in it are skipped."),
    chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="Responses per detect_batch call, "
                                             "written and flushed together (default: the detector's; 64 for most, "
                                             "4096 for vLLM)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="Only the first N records of --data."),
    device: Optional[str] = device_option(),
    batch_size: Optional[int] = batch_size_option(),
    threshold: Optional[float] = threshold_option(),
    backend: Optional[str] = backend_option(),
    max_new_tokens: Optional[int] = max_new_tokens_option(),
    load_in_4bit: Optional[bool] = load_in_4bit_option(),
    aggregation: Optional[str] = aggregation_option(),
    option: Optional[list[str]] = family_option(),
    evidence: bool = typer.Option(False, "--evidence", help="Add each span's evidence in the context (passages "
                                  "and a verdict: contradicted, unsupported, uncertain); see docs/EVIDENCE.md."),
    evidence_mode: str = typer.Option("lexical", "--evidence-mode", help="lexical (no model, fast) or encoder "
                                      "(all-MiniLM-L6-v2 relevance) for --evidence."),
) -> None:
    """Detect hallucinated spans in each response and write the predictions file (resumable). The load options
    are the same as detect's, serve's, select-best's and benchmark's."""
    from ragtruth_spans.pipeline.predict import predict_file
    from ragtruth_spans.reporting.console import predict_summary, printable

    if logs.verbosity() != "quiet":
        err.print(escape(printable(f"predicting with {model} on {data} → {out_path}")))
    with user_errors():
        options = load_options(device=device, batch_size=batch_size, threshold=threshold, backend=backend,
                               max_new_tokens=max_new_tokens, load_in_4bit=load_in_4bit, aggregation=aggregation,
                               option=option)
        finder = evidence_finder(evidence, evidence_mode, device)
        summary = predict_file(model, data, out_path, chunk_size=chunk_size, limit=limit,
                               detector_options=options, evidence=finder)
    note(predict_summary(summary.to_dict()))
