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
    dev_per_task: Optional[int] = typer.Option(None, "--dev-per-task", min=0, help="Train source ids per task "
                                               "moved to dev (default 50; not with --split-by-source)."),
    split_by_source: Optional[str] = typer.Option(None, "--split-by-source", help="Ignore RAGTruth's split and "
                                                  "re-split every response by source, per task: shares "
                                                  "'train=0.7,dev=0.1,test=0.2' or counts 'dev=10,test=20'."),
    seed: int = typer.Option(0, "--seed", help="Seed of the dev sampling or of the re-split."),
    keep_quality: Optional[list[str]] = typer.Option(None, "--keep-quality", help="Quality values to keep "
                                                     "(repeatable or comma-separated; 'all' keeps every "
                                                     "response). Default: good."),
) -> None:
    """Convert RAGTruth into prepared train/dev/test span files (labels checked, counts in stats.json)."""
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir
    from ragtruth_spans.data.splits import parse_split_spec
    from ragtruth_spans.reporting.data_tables import prepare_summary

    if sample == (ragtruth_dir is not None):
        fail(InputError("give exactly one of --ragtruth-dir DIR or --sample"))
    if split_by_source is not None and dev_per_task is not None:
        fail(InputError("--dev-per-task and --split-by-source exclude each other (a re-split names its dev share)"))
    with user_errors(), warnings.catch_warnings():  # the summary below shows the warnings
        warnings.simplefilter("ignore", UserWarning)
        spec = parse_split_spec(split_by_source) if split_by_source is not None else None
        stats = prepare(sample_data_dir() if sample else ragtruth_dir, out_dir,
                        dev_per_task=50 if dev_per_task is None else dev_per_task, seed=seed,
                        keep_quality=keep_quality if keep_quality else ("good",), split_by_source=spec)
    out.print(prepare_summary(stats.to_dict()))
    note(f"wrote {out_dir}/{{train,dev,test}}.jsonl and {out_dir}/stats.json")


@app.command("augment")
def augment_command(
    data: Path = typer.Option(..., "--data", help="Prepared training file (train.jsonl). Never augment dev/test."),
    out_file: Path = typer.Option(..., "--out", help="Output file: the input records, then the new ones."),
    kinds: Optional[list[str]] = typer.Option(None, "--kind", help="Edit kinds (repeatable): number, entity, "
                                              "negation, clause, qualifier. Default: all."),
    share: float = typer.Option(1.0, "--share", min=0.0, max=1.0, help="Share of clean responses edited."),
    seed: int = typer.Option(0, "--seed", help="Seed of the edits."),
) -> None:
    """Add typed synthetic hallucinations (exact offsets) made from the clean responses of a training file."""
    from ragtruth_spans.core.errors import check_choice
    from ragtruth_spans.core.files import check_output_path
    from ragtruth_spans.core.jsonl import read_records, write_records
    from ragtruth_spans.data.augment import KINDS, augment

    with user_errors():
        chosen = [k for item in kinds or [] for k in item.split(",") if k] or list(KINDS)
        for kind in chosen:
            check_choice(kind, KINDS, "augmentation kind", field="--kind")
        out_file = check_output_path(out_file, field="--out", inputs={"--data": data})
        records = read_records(data)
        new, stats = augment(records, kinds=chosen, share=share, seed=seed)
        write_records(out_file, [*records, *new])
    made = ", ".join(f"{k} {stats.made.get(k, 0)}" for k in chosen)
    skipped = ", ".join(f"{k} {n}" for k, n in stats.skipped.items()) or "none"
    note(f"{len(new)} synthetic records from {sum(not r.spans for r in records)} clean of {len(records)} "
         f"({made}; nothing to edit: {skipped}) → {out_file}")
