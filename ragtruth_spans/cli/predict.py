"""``ragtruth-spans predict``: run any detector over a prepared split into a predictions file."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import (
    LoadFlags,
    detector_command,
    evidence_finder,
    model_label,
    model_option,
    note,
    resolve_model,
    user_errors,
)
from ragtruth_spans.core import logs
from ragtruth_spans.core.errors import InputError, check_choice


@detector_command("predict")
def predict_command(
    model: Optional[str] = model_option(),
    data: Path = typer.Option(..., "--data", help="Prepared split file, e.g. OUT/test.jsonl."),
    out_path: Path = typer.Option(..., "--out", help="Predictions JSONL to write; ids already in it are skipped."),
    chunk_size: Optional[int] = typer.Option(None, "--chunk-size", min=1, help="Responses per detect_batch call, "
                                             "written and flushed together (default: the detector's; 64 for most, "
                                             "4096 for vLLM)."),
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="Only the first N records of --data."),
    load: LoadFlags = LoadFlags(),
    evidence: bool = typer.Option(False, "--evidence", help="Add each span's evidence in the context (passages "
                                  "and a verdict: contradicted, unsupported, uncertain); see docs/EVIDENCE.md."),
    evidence_mode: str = typer.Option("lexical", "--evidence-mode", help="lexical (no model, fast) or encoder "
                                      "(all-MiniLM-L6-v2 relevance) for --evidence."),
    engine: str = typer.Option("local", "--engine", help="local (this process) or ray (a Ray Data actor pool on a "
                               "local or existing Ray cluster; the [ray] extra; docs/RAY.md). With ray, "
                               "--chunk-size is the records per actor call [64]."),
    address: Optional[str] = typer.Option(None, "--address", help="--engine ray: the cluster to join: auto (this "
                                          "node's), ray://HOST:10001 (Ray client) or HOST:6379 (default: start a "
                                          "local cluster for the run)."),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="--engine ray: actors, each loading "
                                          "the detector once (default: as many as the cluster's CPUs or GPUs "
                                          "hold)."),
    cpus_per_worker: float = typer.Option(1.0, "--cpus-per-worker", min=0, help="--engine ray: CPUs each "
                                          "actor reserves."),
    gpus_per_worker: Optional[float] = typer.Option(None, "--gpus-per-worker", min=0, help="--engine ray: GPUs "
                                                    "each actor reserves (default: 1 for a run directory on a "
                                                    "cluster with GPUs, unless --device cpu; else 0)."),
) -> None:
    """Detect hallucinated spans in each response and write the predictions file (resumable). The load options
    are the same as detect's, serve's, select-best's and benchmark's."""
    from ragtruth_spans.pipeline.predict import predict_file
    from ragtruth_spans.reporting.console import predict_summary

    note(f"predicting with {model_label(model)} on {data} → {out_path}")
    model = resolve_model(model)
    with user_errors():
        options = load.options().load_kwargs()
        check_choice(engine, ("local", "ray"), "engine", field="--engine")
        ray_flags = {"--address": address, "--workers": workers, "--gpus-per-worker": gpus_per_worker,
                     "--cpus-per-worker": cpus_per_worker if cpus_per_worker != 1.0 else None}
        if engine == "local" and any(value is not None for value in ray_flags.values()):
            given = next(name for name, value in ray_flags.items() if value is not None)
            raise InputError("applies to --engine ray only", field=given)
        finder = evidence_finder(evidence, evidence_mode, load.device)
        if engine == "ray":
            from ragtruth_spans.pipeline.ray_engine import RaySettings, predict_ray

            settings = RaySettings(address=address, workers=workers, cpus_per_worker=cpus_per_worker,
                                   gpus_per_worker=gpus_per_worker, batch_size=chunk_size,
                                   # Ray's own plans, progress and worker output: only with --verbose
                                   ray_log_level=None if logs.verbose() else logging.ERROR,
                                   log_to_driver=logs.verbose())
            summary = predict_ray(model, data, out_path, settings=settings, limit=limit,
                                  detector_options=options, evidence=finder)
        else:
            summary = predict_file(model, data, out_path, chunk_size=chunk_size, limit=limit,
                                   detector_options=options, evidence=finder)
    note(predict_summary(summary.to_dict()))
