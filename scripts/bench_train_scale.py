"""Training cost at the sizes users train at: a stacked recipe trained on k × the pool's responses.

    python scripts/bench_train_scale.py --data data/pool --factors 1 3 10 --out runs/bench-scale
    python scripts/bench_train_scale.py --data data/pool --factors 1 --set features.encoder=null   # encoder-free

``--data`` is a prepared folder (``train.jsonl``, ``dev.jsonl``: the pool's documented source-disjoint split). For
each factor ``k`` the training split is resampled to ``k × 1,484`` responses (the pool's size; RAGTruth's train
split is about 10 ×): every training record in turn, copies after the first with the id ``<id>#rep-<n>`` and the
same source (so source-disjoint folds keep copies together); the recipe's augmentation and generated data
(``data.synth``) come on top, as they would for a user. The eval split is unchanged. The records are not new; the
size is real — every copy is featurised, boosted on and tuned on like a new response.

Each factor trains in its own process (``ragtruth-spans train RECIPE``): wall minutes, the process's peak RSS
(``wait4``), and the trainer's own seconds and peak RSS per stage (``run_info.json``: ``seconds``,
``peak_rss_mb``). A finished factor (its run directory finished with the same size, recipe and overrides) is not
trained again: rerun after a kill to go on. Writes ``OUT/scale.json`` after every factor and prints a Markdown
table with the growth of each stage from one factor to the next (1.0 = linear in the responses).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POOL_RESPONSES = 1484
"""The pool's size (``../shared/data/ragtruth_pool``), the unit of ``--factors``."""


def resample(records: list[dict[str, Any]], size: int) -> list[dict[str, Any]]:
    """``size`` records cycling through ``records``: the ``n``-th copy (``n`` ≥ 1) of a record gets the id
    ``<id>#rep-<n>``, everything else (source, spans, text) kept.

    >>> [r["id"] for r in resample([{"id": "a"}, {"id": "b"}], 5)]
    ['a', 'b', 'a#rep-1', 'b#rep-1', 'a#rep-2']
    """
    out = []
    for i in range(size):
        record, copy = records[i % len(records)], i // len(records)
        out.append(record if copy == 0 else {**record, "id": f"{record['id']}#rep-{copy}"})
    return out


def write_data(source: Path, target: Path, size: int) -> int:
    """A prepared folder at ``target`` whose training split holds ``size`` resampled responses of ``source``'s;
    the eval split copied. Returns the number of distinct training responses."""
    from ragtruth_spans.core.files import atomic_write_text

    lines = [line for line in (source / "train.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    target.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target / "train.jsonl", "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                      for r in resample(records, size)))
    atomic_write_text(target / "dev.jsonl", (source / "dev.jsonl").read_text(encoding="utf-8"))
    return len(records)


def train(recipe: str, data: Path, run: Path, overrides: list[str], log: Path) -> dict[str, Any]:
    """Train ``recipe`` on ``data`` into ``run`` in a child process; its wall seconds and peak RSS."""
    command = [sys.executable, "-m", "ragtruth_spans", "train", recipe, "--set", f"data.prepared_dir={data}",
               "--set", f"output_dir={run}", *[a for o in overrides for a in ("--set", o)]]
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"error: training failed (exit {os.waitstatus_to_exitcode(status)}); see {log}")
    peak_kb = usage.ru_maxrss  # kilobytes on Linux
    return {"wall_minutes": round((time.perf_counter() - started) / 60, 2), "peak_rss_mb": round(peak_kb / 1024)}


def measure(args: argparse.Namespace, factor: float, previous: dict[str, Any] | None) -> dict[str, Any]:
    """One factor's row: reused when its run finished on the same data, else trained."""
    size = round(factor * POOL_RESPONSES)
    data, run = args.out / f"data-x{factor:g}", args.out / f"run-x{factor:g}"
    distinct = write_data(args.data, data, size)
    finished = (run / "run_info.json").is_file() and previous is not None and previous.get("size") == size \
        and previous.get("overrides") == args.overrides and previous.get("recipe") == args.recipe
    cost = {k: previous[k] for k in ("wall_minutes", "peak_rss_mb")} if finished else \
        train(args.recipe, data, run, args.overrides, args.out / f"train-x{factor:g}.log")
    info = json.loads((run / "run_info.json").read_text(encoding="utf-8"))
    counts = info["data"]["counts"]
    made = [*counts.get("augmented", {}).get("made", {}).values(), *counts.get("synth", {}).get("made", {}).values()]
    return {"factor": factor, "size": size, "distinct": distinct, "recipe": args.recipe, "overrides": args.overrides,
            **cost,
            "training_responses": counts["records"] + sum(made),
            "words": info["words"]["train"], "seconds": info.get("seconds", {}),
            "stage_peak_rss_mb": info.get("peak_rss_mb", {})}


def growth(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown: minutes per stage and factor, and each stage's growth exponent between consecutive factors
    (``log(t2/t1) / log(n2/n1)`` over training words; 1.0 = linear)."""
    import math

    stages = sorted({s for r in rows for s in r["seconds"]}, key=lambda s: list(rows[0]["seconds"]).index(s)
                    if s in rows[0]["seconds"] else 99)
    lines = ["| factor | real responses (with augmented + generated) | words | wall min | peak RSS MB | "
             + " | ".join(f"{s} min" for s in stages) + " |", "|" + "---|" * (5 + len(stages))]
    for r in rows:
        lines.append(f"| {r['factor']:g}× | {r['size']:,} ({r['training_responses']:,}) | {r['words']:,} | "
                     f"{r['wall_minutes']} | {r['peak_rss_mb']:,} | "
                     + " | ".join(f"{r['seconds'].get(s, 0) / 60:.1f}" for s in stages) + " |")
    for a, b in itertools.pairwise(rows):
        ratio = math.log(b["words"] / a["words"])
        exps = [math.log(max(b["seconds"].get(s, 0), 0.1) / max(a["seconds"].get(s, 0), 0.1)) / ratio
                for s in stages]
        lines.append(f"| growth {a['factor']:g}×→{b['factor']:g}× | | | | | "
                     + " | ".join(f"{e:.2f}" for e in exps) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="Prepared folder (train.jsonl, dev.jsonl).")
    parser.add_argument("--factors", type=float, nargs="+", default=[1, 3, 10])
    parser.add_argument("--recipe", default="recommended-cpu")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", type=Path, default=Path("runs/bench-scale"))
    args = parser.parse_args(argv)
    for name in ("train.jsonl", "dev.jsonl"):
        if not (args.data / name).is_file():
            print(f"error: {args.data / name}: no such file (a prepared folder is needed)", file=sys.stderr)
            return 2
    args.out.mkdir(parents=True, exist_ok=True)
    result_path = args.out / "scale.json"
    old = {r["factor"]: r for r in json.loads(result_path.read_text())["rows"]} if result_path.is_file() else {}
    rows: list[dict[str, Any]] = []
    for factor in args.factors:
        rows.append(measure(args, factor, old.get(factor)))
        from ragtruth_spans.core.files import atomic_write_text

        atomic_write_text(result_path, json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                                                   "recipe": args.recipe, "rows": rows}, indent=2) + "\n")
        print(f"{factor:g}×: {rows[-1]['wall_minutes']} min, peak {rows[-1]['peak_rss_mb']:,} MB", file=sys.stderr)
    print("\n".join(growth(sorted(rows, key=lambda r: r["factor"]))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
