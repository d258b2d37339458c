"""Best-of-N selection, every strategy at once: on a labelled corpus with one predictions file, the hallucination
rate of the selected answers against a random pick, each model alone and the oracle, with 95 % intervals from
resampling the sources (``ragtruth_spans.selection.corpus.evaluate_selection``, the code behind ``select``).

    python scripts/bench_selection.py --data pool/dev.jsonl --pred dev.pred.jsonl             # choose the default
    python scripts/bench_selection.py --data pool/test.jsonl --pred test.pred.jsonl --out sel.md

``--models`` defaults to every generating model of the corpus. Prints one Markdown table (a row per strategy,
then random, the best single model and the oracle) and writes it with ``--out``; ``--json`` writes the reports.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.evaluation import load_gold
from ragtruth_spans.selection.corpus import evaluate_selection
from ragtruth_spans.selection.select import STRATEGIES


def _rate(value: float, interval: list[float] | None = None) -> str:
    text = f"{100 * value:.1f} %"
    return text if interval is None else f"{text} [{100 * interval[0]:.1f}, {100 * interval[1]:.1f}]"


def run(data: Path, pred: Path, models: list[str] | None, bootstrap: int, seed: int) -> tuple[str, dict]:
    """The Markdown table and ``{strategy: report}`` (see the module docstring)."""
    records, _ = load_gold(data)
    pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
    models = models or sorted({r.model for r in records})
    reports = {strategy: evaluate_selection(records, pred_file.spans, models, strategy, seed, bootstrap,
                                            response_scores=pred_file.response_scores,
                                            errors=pred_file.errors).to_dict()
               for strategy in STRATEGIES}
    first = next(iter(reports.values()))
    lines = [f"Best-of-{len(models)} over {first['sources']['used']} sources ({', '.join(models)}); "
             f"{bootstrap} bootstrap resamples of the sources.", "",
             "| selection | hallucination rate [95 % CI] | reduction of random's [95 % CI] |", "|---|---:|---:|"]
    for strategy, report in reports.items():
        ci = report["ci"] or {}
        reduction = report["relative_reduction"]
        red_ci = ci.get("relative_reduction")
        red = "–" if reduction is None else f"{100 * reduction:.1f} %" + (
            f" [{100 * red_ci[0]:.1f}, {100 * red_ci[1]:.1f}]" if red_ci else "")
        lines.append(f"| `{strategy}` | {_rate(report['selected']['hallucination_rate'], ci.get('selected'))} | "
                     f"{red} |")
    ci, random_rate = first["ci"] or {}, first["random"]["hallucination_rate"]
    lines.append(f"| random pick (expected) | {_rate(random_rate, ci.get('random'))} | 0 % |")
    for model, figures in sorted(first["by_model"].items(), key=lambda kv: kv[1]["hallucination_rate"]):
        rate = figures["hallucination_rate"]
        reduction = (random_rate - rate) / random_rate
        lines.append(f"| always `{model}` | {_rate(rate)} | {100 * reduction:.1f} % |")
    oracle = first["oracle"]["hallucination_rate"]
    lines.append(f"| oracle | {_rate(oracle, ci.get('oracle'))} | {100 * (random_rate - oracle) / random_rate:.1f} % |")
    return "\n".join(lines) + "\n", reports


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared records (e.g. pool/test.jsonl)")
    parser.add_argument("--pred", type=Path, required=True, help="predictions of a detector for those records")
    parser.add_argument("--models", default=None, help="comma-separated models (default: all in the data)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown table here")
    parser.add_argument("--json", type=Path, default=None, help="write every strategy's report here")
    args = parser.parse_args(argv)
    models = [m.strip() for m in args.models.split(",") if m.strip()] if args.models else None
    table, reports = run(args.data, args.pred, models, args.bootstrap, args.seed)
    print(table)
    if args.out is not None:
        args.out.write_text(table, encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps(reports, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
