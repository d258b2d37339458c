"""Calibration of a detector's response score on labelled data: a reliability table (ten equal-width score bins:
responses, mean score, observed share of hallucinated responses) and the expected calibration error, from a
predictions file's ``score`` field against the gold records.

    python scripts/bench_calibration.py --data pool/test.jsonl --pred test.pred.jsonl [--out calibration.md]

Responses whose prediction line has no score (or an error) are left out and counted.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.detectors.stacked.response import reliability
from ragtruth_spans.evaluation import load_gold


def run(data: Path, pred: Path, bins: int = 10) -> str:
    """The Markdown table with its ECE line (see the module docstring)."""
    records, _ = load_gold(data)
    pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
    scored = [r for r in records if r.id in pred_file.response_scores and r.id not in pred_file.errors]
    scores = np.array([pred_file.response_scores[r.id] for r in scored])
    labels = np.array([bool(r.spans) for r in scored])
    table, ece = reliability(scores, labels, bins)
    lines = ["| score bin | responses | mean score | hallucinated share |", "|---|---:|---:|---:|"]
    lines += [f"| {row['bin']} | {row['responses']} | {row['mean_score']:.3f} | {row['hallucinated_share']:.3f} |"
              for row in table]
    left_out = len(records) - len(scored)
    lines.append(f"\nECE {ece:.3f} over {len(scored)} responses" + (f" ({left_out} without a score left out)"
                                                                      if left_out else ""))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared records (e.g. pool/test.jsonl)")
    parser.add_argument("--pred", type=Path, required=True, help="predictions with response scores")
    parser.add_argument("--bins", type=int, default=10)
    parser.add_argument("--out", type=Path, default=None, help="write the Markdown here")
    args = parser.parse_args(argv)
    text = run(args.data, args.pred, args.bins)
    print(text)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
