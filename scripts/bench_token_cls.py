"""Detectors on a prepared split, side by side: predict (timed) → evaluate with bootstrap intervals → Markdown.

Usage (the pool measurement of docs/BENCHMARKS.md)::

    python scripts/bench_token_cls.py --data data/pool/test.jsonl --out bench/ \\
        --model runs/minilm-pool --model numbers --model flag-all [--bootstrap 1000] [--threads 2]

Each ``--model`` (a run directory or a detector name) goes through the same code as ``ragtruth-spans predict``
(``pipeline.predict.predict_file``, fresh predictions file ``OUT/<name>.jsonl``) and ``ragtruth-spans evaluate``
(``evaluation.evaluate``, report ``OUT/<name>.report.json``). Printed: overall span / response P/R/F1 with 95 %
bootstrap intervals, AUROC, recall per gold type, span F1 and AUROC by task, and prediction throughput
(responses/s over the detect calls, model loading excluded).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _cell(report: dict[str, Any], level: str, metric: str) -> str:
    value = report["overall"][level][metric]
    interval = ((report.get("ci") or {}).get("overall") or {}).get(level, {}).get(metric)
    return f"{value:.3f}" + (f" [{interval[0]:.3f}, {interval[1]:.3f}]" if interval else "")


def run_one(model: str, data: Path, out: Path, bootstrap: int) -> tuple[dict[str, Any], dict[str, Any]]:
    from ragtruth_spans.core.jsonl import read_records, write_json
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation import evaluate
    from ragtruth_spans.pipeline.predict import meta_path, predict_file

    name = Path(model).name
    pred = out / f"{name}.jsonl"
    for stale in (pred, meta_path(pred)):
        stale.unlink(missing_ok=True)
    options = {"device": "cpu"} if Path(model).is_dir() else {}  # rule-based detectors take no options
    summary = predict_file(model, data, pred, progress=False, **options)
    gold = read_records(data)
    pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in gold})
    report = evaluate(gold, pred_file.spans, response_scores=pred_file.response_scores, bootstrap=bootstrap)
    write_json(out / f"{name}.report.json", report.to_dict())
    return summary.to_dict(), report.to_dict()


def print_tables(results: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    print("| detector | span P | span R | span F1 | response P | response R | response F1 | AUROC | responses/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, (summary, report) in results.items():
        auroc = report["overall"]["auroc"]
        print(f"| {name} | " + " | ".join(_cell(report, level, m) for level in ("span", "response")
                                          for m in ("precision", "recall", "f1"))
              + f" | {'–' if auroc is None else f'{auroc:.3f}'} | {summary['responses_per_second']:.2f} |")
    print("\n| detector | task | n | span P | span R | span F1 | response F1 | AUROC |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name, (_, report) in results.items():
        for task, group in report["by_task"].items():
            auroc = group["auroc"]
            print(f"| {name} | {task} | {group['responses']} | {group['span']['precision']:.3f} | "
                  f"{group['span']['recall']:.3f} | {group['span']['f1']:.3f} | {group['response']['f1']:.3f} | "
                  f"{'–' if auroc is None else f'{auroc:.3f}'} |")
    types = list(next(iter(results.values()))[1]["type_recall"])
    print("\n| detector | " + " | ".join(f"recall {t}" for t in types) + " |")
    print("|---|" + "---:|" * len(types))
    for name, (_, report) in results.items():
        print(f"| {name} | " + " | ".join("–" if report["type_recall"][t] is None else
                                          f"{report['type_recall'][t]:.3f}" for t in types) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="Prepared split file, e.g. data/pool/test.jsonl.")
    parser.add_argument("--model", action="append", required=True, help="Run directory or detector name.")
    parser.add_argument("--out", type=Path, required=True, help="Folder for predictions and reports.")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's).")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    results = {Path(m).name: run_one(m, args.data, args.out, args.bootstrap) for m in args.model}
    print_tables(results)


if __name__ == "__main__":
    main()
