"""``ragtruth-spans benchmark``: run several detectors on one labelled split and rank them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import (
    aggregation_option,
    app,
    backend_option,
    batch_size_option,
    device_option,
    family_option,
    load_in_4bit_option,
    load_options,
    max_new_tokens_option,
    note,
    out,
    threshold_option,
    user_errors,
)


@app.command("benchmark")
def benchmark_command(
    data: Path = typer.Option(..., "--data", help="Prepared split file with gold spans, e.g. OUT/test.jsonl."),
    detectors: str = typer.Option(..., "--detectors", help="Comma-separated detector names or run directories, "
                                  "e.g. default,numbers,sim-cosine@dev,runs/two-tier[threshold=0.4] (default: the "
                                  "detector shipped with the package; NAME@dev: "
                                  "tune its thresholds on --dev first; [KEY=VALUE,...]: this detector's own load "
                                  "options, over the load flags below, which apply to every detector)."),
    out_dir: Path = typer.Option(..., "--out", help="Directory for predictions/, tuning/, leaderboard.{md,json,svg} "
                                 "(re-running resumes)."),
    dev: Optional[Path] = typer.Option(None, "--dev", help="Prepared dev split for the NAME@dev detectors."),
    criterion: str = typer.Option("span_f1", "--criterion", help="What dev tuning maximises: span_f1, "
                                  "response_macro_f1 or response_f1."),
    bootstrap: int = typer.Option(1000, "--bootstrap", min=0, help="Resamples for the 95% intervals (0: none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="Responses per detect_batch call "
                                             "(default: each detector's preferred size)."),
    device: Optional[str] = device_option(),
    batch_size: Optional[int] = batch_size_option(),
    threshold: Optional[float] = threshold_option(),
    backend: Optional[str] = backend_option(),
    max_new_tokens: Optional[int] = max_new_tokens_option(),
    load_in_4bit: Optional[bool] = load_in_4bit_option(),
    aggregation: Optional[str] = aggregation_option(),
    option: Optional[list[str]] = family_option(),
    drop_overlap: bool = typer.Option(False, "--drop-overlap", help="Leave out of every detector's figures the "
                                      "gold responses that share a source or a response with any detector's "
                                      "training (or @dev tuning) data."),
) -> None:
    """Run every detector on --data (resumably), tune the NAME@dev ones on --dev, score them exactly as
    `evaluate` does and write the leaderboard (Markdown, JSON, SVG plot)."""
    from ragtruth_spans.core.extras import require
    from ragtruth_spans.pipeline.benchmark import BenchmarkPaths, run_benchmark
    from ragtruth_spans.reporting.leaderboard import leaderboard_view

    with user_errors():
        require("detect", "ragtruth-spans benchmark")  # its leaderboard plot (matplotlib) and most detectors
        options = load_options(device=device, batch_size=batch_size, threshold=threshold, backend=backend,
                               max_new_tokens=max_new_tokens, load_in_4bit=load_in_4bit, aggregation=aggregation,
                               option=option)
        payload = run_benchmark(data, detectors, out_dir, dev=dev, criterion=criterion, bootstrap=bootstrap,
                                seed=seed, chunk_size=chunk_size, options=options,
                                drop_overlap=drop_overlap)
    out.print(leaderboard_view(payload))  # the Markdown (every column) is in its files
    for entry in payload["detectors"]:
        overlap = entry["report"].get("overlap")
        if overlap:
            note(f"{entry['label']}: {overlap['summary']}")
    paths = BenchmarkPaths(out_dir)
    note(f"leaderboard written to {paths.markdown}, {paths.json} and {paths.plot}")
