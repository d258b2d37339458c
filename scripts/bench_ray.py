"""Throughput of single-process ``predict`` against ``predict --engine ray`` with 1 and 2 workers, in one run.

For each run directory: ``predict_file`` (one process) first, then a local Ray cluster is started once (its
start-up time is measured) and ``predict_ray`` runs with each worker count on the same data into a fresh file.
Every Ray output is checked to hold exactly the lines of the single-process one (order aside). Reported per
configuration (a markdown table): wall time (detector loads included), responses/s and its ratio to
``predict``, ``predict``'s load time or the time until Ray's first lines come back (actor start-up + detector load +
first batch), and peak resident memory (``predict``: this process; Ray: each worker process). ``--repeat K``
runs the records K times over (new ids) so that start-up weighs less. The load average is printed: other
processes share the machine.

    python scripts/bench_ray.py --run runs/fast --run runs/rec --data data/test.jsonl [--limit N] [--repeat K]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from ragtruth_spans.pipeline.predict import predict_file
from ragtruth_spans.pipeline.ray_engine import RaySettings, predict_ray


def repeated(data: str, repeat: int, limit: int | None, tmp: Path) -> str:
    """``data`` (its first ``limit`` records) ``repeat`` times over, each copy's ids suffixed ``#k``: a bigger
    input from the same responses, so that start-up costs weigh less."""
    from dataclasses import replace

    from ragtruth_spans.core.jsonl import read_records, write_records

    records = read_records(data)[:limit]
    path = tmp / "data.jsonl"
    write_records(path, [replace(r, id=f"{r.id}#{k}") for k in range(repeat) for r in records])
    return str(path)


def lines_by_id(path: Path) -> dict[str, str]:
    return {json.loads(line)["id"]: line for line in path.read_text(encoding="utf-8").splitlines()}


def bench_local(run: str, data: str, tmp: Path) -> tuple[dict[str, Any], Path]:
    out = tmp / f"local-{Path(run).name}.jsonl"
    started = time.perf_counter()
    summary = predict_file(run, data, out, progress=False)
    wall = time.perf_counter() - started
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"engine": "predict", "workers": 1, "responses": summary.predicted, "wall_s": wall,
            "load_s": summary.load_seconds, "rps": summary.predicted / wall, "first_s": summary.load_seconds,
            "peak_mb": [rss]}, out


def bench_ray(run: str, data: str, tmp: Path, workers: int, batch_size: int | None,
              reference: Path) -> dict[str, Any]:
    out = tmp / f"ray{workers}-{Path(run).name}.jsonl"
    started = time.perf_counter()
    summary = predict_ray(run, data, out, progress=False,
                          settings=RaySettings(workers=workers, batch_size=batch_size))
    wall = time.perf_counter() - started
    if lines_by_id(out) != lines_by_id(reference):
        raise SystemExit(f"{out}: the Ray engine's lines differ from predict's")
    return {"engine": "ray", "workers": workers, "responses": summary.predicted, "wall_s": wall,
            "load_s": summary.load_seconds, "rps": summary.predicted / wall, "first_s": summary.first_batch_seconds,
            "peak_mb": sorted(summary.worker_peak_rss_mb.values()), "duplicates": summary.duplicates_dropped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="append", required=True, help="run directory (repeatable)")
    parser.add_argument("--data", required=True, help="prepared split file")
    parser.add_argument("--limit", type=int, default=None, help="only the first N records")
    parser.add_argument("--repeat", type=int, default=1, help="the records K times over (ids suffixed #k)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-size", type=int, default=None, help="records per actor call (default 64)")
    args = parser.parse_args()
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    cores = os.cpu_count() or 1
    print(f"machine: {platform.machine()}, {cores} cores, python {platform.python_version()}; "
          f"load average before: {os.getloadavg()[0]:.1f}")
    rows: list[tuple[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        data = repeated(args.data, args.repeat, args.limit, tmp)
        references = {}
        for run in args.run:  # before Ray starts: this process's peak memory is predict's alone
            row, references[run] = bench_local(run, data, tmp)
            rows.append((run, row))
        import ray
        import ray.data

        started = time.perf_counter()
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        startup = time.perf_counter() - started
        logging.getLogger("ray.data").setLevel(logging.ERROR)
        for run in args.run:
            for workers in args.workers:
                rows.append((run, bench_ray(run, data, tmp, workers, args.batch_size, references[run])))
        ray.shutdown()
    print(f"local Ray cluster start-up ({cores} CPUs, no dashboard): {startup:.1f} s; "
          f"load average after: {os.getloadavg()[0]:.1f}")
    base = {run: row["rps"] for run, row in rows if row["engine"] == "predict"}
    print("| run | engine | workers | responses | wall s | responses/s | × predict | load / first lines s | "
          "peak MB per process |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for run, row in rows:
        peaks = ", ".join(f"{mb:.0f}" for mb in row["peak_mb"])
        print(f"| {Path(run).name} | {row['engine']} | {row['workers']} | {row['responses']} | {row['wall_s']:.1f} | "
              f"{row['rps']:.1f} | {row['rps'] / base[run]:.2f} | {row['first_s']:.1f} | {peaks} |")


if __name__ == "__main__":
    main()
