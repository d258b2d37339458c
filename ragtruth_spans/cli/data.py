"""``ragtruth-spans prepare``: RAGTruth files → prepared train/dev/test span files."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import app, fail, note, out, user_errors
from ragtruth_spans.core.errors import InputError


@app.command("prepare")
def prepare_command(
    ragtruth_dir: Optional[Path] = typer.Option(None, "--ragtruth-dir", help="RAGTruth dataset folder holding "
                                                "response.jsonl and source_info.jsonl (or a RAGTruth clone)."),
    sample: bool = typer.Option(False, "--sample", help="Use the embedded sample instead of --ragtruth-dir."),
    out_dir: Path = typer.Option(..., "--out", help="Output folder for train/dev/test.jsonl and stats.json."),
    dev_per_task: int = typer.Option(50, "--dev-per-task", min=0, help="Train source ids per task moved to dev."),
    seed: int = typer.Option(0, "--seed", help="Seed of the dev sampling."),
    keep_quality: Optional[list[str]] = typer.Option(None, "--keep-quality", help="Quality values to keep "
                                                     "(repeatable or comma-separated; 'all' keeps every "
                                                     "response). Default: good."),
) -> None:
    """Convert RAGTruth into prepared train/dev/test span files (labels checked, counts in stats.json)."""
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir
    from ragtruth_spans.reporting.console import prepare_summary

    if sample == (ragtruth_dir is not None):
        fail(InputError("give exactly one of --ragtruth-dir DIR or --sample"))
    with user_errors(), warnings.catch_warnings():  # the summary below shows the warnings
        warnings.simplefilter("ignore", UserWarning)
        stats = prepare(sample_data_dir() if sample else ragtruth_dir, out_dir, dev_per_task=dev_per_task,
                        seed=seed, keep_quality=keep_quality if keep_quality else ("good",))
    out.print(prepare_summary(stats.to_dict()))
    note(f"wrote {out_dir}/{{train,dev,test}}.jsonl and {out_dir}/stats.json")
