"""Time ``ragtruth_spans.evaluation.evaluate`` on a synthetic RAGTruth-sized test set.

The input mimics RAGTruth's test split: 2,700 responses of 300-1,500 characters (words of 2-9 letters), about
1,900 gold spans of the four RAGTruth types (some flagged implicit_true / due_to_null) over three tasks and six
generating models, and scored predictions that hit, shift, miss or invent spans. Each configuration is run
``--repeats`` times and the best wall-clock time is reported (imports and data building are not timed).

    python scripts/bench_evaluate.py                 # table
    python scripts/bench_evaluate.py --markdown      # + the docs/BENCHMARKS.md section
"""

from __future__ import annotations

import argparse
import platform
import random
import string
import tempfile
import time
import tracemalloc
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ragtruth_spans.core.jsonl import write_jsonl
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.core.types import HALLUCINATION_TYPES, TASK_TYPES, Record, Span
from ragtruth_spans.evaluation.evaluator import evaluate

MODELS = ("gpt-4-0613", "gpt-3.5-turbo-0613", "mistral-7B-instruct", "llama-2-7b-chat", "llama-2-13b-chat",
          "llama-2-70b-chat")


def make_response(rng: random.Random) -> str:
    target = rng.randint(300, 1500)
    words: list[str] = []
    length = 0
    while length < target:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9)))
        words.append(word + ("." if rng.random() < 0.08 else ""))
        length += len(words[-1]) + 1
    return " ".join(words)[:target]


def make_span(rng: random.Random, length: int) -> tuple[int, int]:
    width = rng.randint(5, 80)
    start = rng.randrange(0, max(1, length - width))
    return start, min(length, start + width)


def make_data(n_responses: int, n_spans: int, seed: int) -> tuple[list[Record], dict[str, list[Span]]]:
    """Synthetic gold records and scored predictions (deterministic for a seed)."""
    rng = random.Random(seed)
    records = []
    for i in range(n_responses):
        records.append(Record(id=str(i), source_id=str(i // 6), task_type=TASK_TYPES[(i // 6) % 3],
                              model=MODELS[i % 6], split="test", quality="good", response=make_response(rng),
                              context=""))
    for _ in range(n_spans):  # spans cluster on ~40 % of the responses, like RAGTruth
        record = records[rng.randrange(0, int(n_responses * 0.4))]
        start, end = make_span(rng, len(record.response))
        record.spans.append(Span(start, end, type=rng.choice(HALLUCINATION_TYPES),
                                 text=record.response[start:end], implicit_true=rng.random() < 0.05,
                                 due_to_null=rng.random() < 0.03))
    predictions: dict[str, list[Span]] = {}
    for record in records:
        pred = []
        for span in record.spans:
            if rng.random() < 0.3:  # missed
                continue
            shift_a, shift_b = rng.randint(-10, 10), rng.randint(-10, 10)
            start = min(max(0, span.start + shift_a), len(record.response))
            end = min(max(start, span.end + shift_b), len(record.response))
            pred.append(Span(start, end, type=span.type, score=rng.uniform(0.4, 1.0)))
        if rng.random() < 0.15:  # invented
            start, end = make_span(rng, len(record.response))
            pred.append(Span(start, end, type=rng.choice(HALLUCINATION_TYPES), score=rng.uniform(0.0, 0.7)))
        predictions[record.id] = pred
    return records, predictions


def peak_mb(fn) -> float:
    """Peak memory traced while ``fn`` runs (NumPy reports its allocations to tracemalloc), in MB."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def best_time(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--responses", type=int, default=2700)
    parser.add_argument("--spans", type=int, default=1900)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--machine", default="CPU-2c", help="machine name for the markdown section")
    parser.add_argument("--markdown", action="store_true", help="also print the docs/BENCHMARKS.md section")
    return parser.parse_args()


def main() -> None:
    args = parse_args()

    gold, predictions = make_data(args.responses, args.spans, args.seed)
    n_gold = sum(len(r.spans) for r in gold)
    n_pred = sum(len(p) for p in predictions.values())
    mean_len = sum(len(r.response) for r in gold) / len(gold)
    evaluate(gold, predictions, bootstrap=10)  # warm-up: lazy imports (sklearn, seqeval)

    rows = []
    for label, kwargs in (("no bootstrap", {}),  # evaluate() on in-memory records and predictions
                          ("adaptive filters", {"ignore_implicit_true": True, "ignore_due_to_null": True}),
                          (f"--bootstrap {args.bootstrap}", {"bootstrap": args.bootstrap, "seed": args.seed})):
        seconds = best_time(lambda kw=kwargs: evaluate(gold, predictions, **kw), args.repeats)
        rows.append((label, seconds, peak_mb(lambda kw=kwargs: evaluate(gold, predictions, **kw))))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pred.jsonl"
        write_jsonl(path, ({"id": rid, "spans": [s.to_dict() for s in spans]} for rid, spans in predictions.items()))
        lengths = {r.id: len(r.response) for r in gold}
        def read() -> None:
            read_prediction_file(path, response_lengths=lengths)

        rows.append(("read_prediction_file (JSONL file)", best_time(read, args.repeats), peak_mb(read)))
    report = evaluate(gold, predictions).to_dict()

    table = Table(title=f"evaluate(): {len(gold)} responses, {n_gold} gold / {n_pred} predicted spans, "
                        f"best of {args.repeats}")
    table.add_column("configuration")
    table.add_column("seconds", justify="right")
    table.add_column("peak MB", justify="right")
    for label, seconds, peak in rows:
        table.add_row(label, f"{seconds:.3f}", f"{peak:.0f}")
    console = Console()
    console.print(table)
    console.print(f"span F1 {report['overall']['span']['f1']:.3f}, response F1 "
                  f"{report['overall']['response']['f1']:.3f}, AUROC {report['auroc']:.3f} (sanity check)")

    if args.markdown:
        lines = [
            "Command: `python scripts/bench_evaluate.py --markdown` "
            f"(machine {args.machine}, Python {platform.python_version()}, best of {args.repeats} runs, "
            "imports and data building not timed).",
            "",
            f"Input: synthetic RAGTruth-sized test set, {len(gold)} responses (300-1,500 characters, mean "
            f"{mean_len:.0f}), {n_gold} gold spans, {n_pred} scored predicted spans, 3 tasks x 6 models.",
            "",
            "| configuration | seconds | peak MB (tracemalloc) | target |",
            "|---|---:|---:|---:|",
        ]
        targets = {"no bootstrap": "< 1", "adaptive filters": "< 1", f"--bootstrap {args.bootstrap}": "< 10"}
        for label, seconds, peak in rows:
            lines.append(f"| {label} | {seconds:.3f} | {peak:.0f} | {targets.get(label, '–')} |")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
