"""``ragtruth-spans benchmark``: run several detectors on one labelled split and rank them."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import (
    DETECTOR_NAMES,
    LoadFlags,
    bootstrap_option,
    data_alias_option,
    detector_command,
    gold_path,
    note,
    out,
    user_errors,
)


@detector_command("benchmark")
def benchmark_command(
    gold: Optional[Path] = typer.Option(None, "--gold", help="Prepared split file with gold spans, e.g. "
                                        "OUT/test.jsonl."),
    detectors: str = typer.Option(..., "--detectors", help=f"Comma-separated detector names ({DETECTOR_NAMES}) or "
                                  "run directories, e.g. default,numbers,sim-cosine@dev,runs/two-tier[threshold=0.4] "
                                  "(default: the detector shipped with the package; NAME@dev: tune its thresholds on "
                                  "--dev first; [KEY=VALUE,...]: this detector's own load options, read as --option "
                                  "items, over the load flags below, which apply to every detector)."),
    out_dir: Path = typer.Option(..., "--out", help="Directory for predictions/, tuning/, leaderboard.{md,json,svg} "
                                 "(re-running resumes)."),
    dev: Optional[Path] = typer.Option(None, "--dev", help="Prepared dev split for the NAME@dev detectors."),
    criterion: str = typer.Option("span_f1", "--criterion", help="What dev tuning maximises: span_f1, "
                                  "response_macro_f1 or response_f1."),
    bootstrap: int = bootstrap_option(),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="Responses per detect_batch call "
                                             "(default: each detector's preferred size)."),
    load: LoadFlags = LoadFlags(),
    drop_overlap: bool = typer.Option(False, "--drop-overlap", help="Leave out of every detector's figures the "
                                      "gold responses that share a source or a response with any detector's "
                                      "training (or @dev tuning) data."),
    data: Optional[Path] = data_alias_option(),
) -> None:
    """Run every detector on --gold (resumably), tune the NAME@dev ones on --dev, score them exactly as
    `evaluate` does and write the leaderboard (Markdown, JSON, SVG plot)."""
    from ragtruth_spans.core.extras import require
    from ragtruth_spans.pipeline.benchmark import BenchmarkPaths, run_benchmark
    from ragtruth_spans.reporting.leaderboard import leaderboard_view

    with user_errors():
        require("detect", "ragtruth-spans benchmark")  # its leaderboard plot (matplotlib) and most detectors
        gold = gold_path(gold, data)
        payload = run_benchmark(gold, detectors, out_dir, dev=dev, criterion=criterion, bootstrap=bootstrap,
                                seed=seed, chunk_size=chunk_size, options=load.options(),
                                drop_overlap=drop_overlap)
    out.print(leaderboard_view(payload))  # the Markdown (every column) is in its files
    for entry in payload["detectors"]:
        overlap = entry["report"].get("overlap")
        if overlap:
            note(f"{entry['label']}: {overlap['summary']}")
    paths = BenchmarkPaths(out_dir)
    note(f"leaderboard written to {paths.markdown}, {paths.json} and {paths.plot}")
