"""Throughput of prediction with the Hugging Face backend: responses/s at several batch sizes.

Usage (CPU, the tiny model of the quickstart)::

    python scripts/bench_predict.py [--model DIR] [--data TEST.jsonl] [--batch-sizes 1,4,8] [--max-new-tokens 256]

Without ``--model`` it uses ``./ragtruth-spans-quickstart/model`` when present, else trains the ``tiny-cpu``
recipe into a temporary directory; without ``--data`` it prepares the embedded sample and uses its test split.
Each batch size runs the whole split ``--repeats`` times (median kept) after a one-batch warm-up, with the same
loaded model (the CPU may be shared: the spread is printed); generated
tokens (padding excluded) are counted so that runs with different output lengths can be compared (tokens/s).

With ``--runtimes`` it times a detector with a sentence encoder instead (the shipped one without ``--model``) on
each encoder runtime side by side, in one run (docs/INFERENCE.md)::

    python scripts/bench_predict.py --data pool/test.jsonl --runtimes onnx-fp32,onnx-int8 --markdown

per runtime: the load, ``predict``'s throughput (``detect_batch`` in the detector's chunks, the context cache
emptied first: each context is encoded once, as ``predict`` does), one ``detect`` on a **new** context (the cache
emptied before each) and on a **repeated** one (p50 / p95 ms), and the response scores' largest difference from
the first runtime's.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="Timed runs per batch size; the median is kept.")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="Override of the tiny-cpu recipe trained when there is no --model (key=value).")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    parser.add_argument("--no-score-clean", action="store_true",
                        help="Skip the response score 1 - P(clean), to measure what it costs.")
    parser.add_argument("--compare-clean-scoring", action="store_true",
                        help="Also time P(clean) from the generation's KV cache against a second full prefill.")
    parser.add_argument("--runtimes", default=None, help="Comma-separated sentence-encoder runtimes (onnx-fp32, "
                        "onnx-int8, torch) to time side by side on a detector with an encoder (see above).")
    parser.add_argument("--singles", type=int, default=60, help="With --runtimes: detects timed one by one.")
    parser.add_argument("--markdown", action="store_true", help="With --runtimes: also print a Markdown table.")
    return parser.parse_args()


def test_data(data: Path | None, tmp: Path) -> Path:
    """``data``, or the embedded sample's test split prepared under ``tmp``."""
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir

    if data is not None:
        return data
    prepare(sample_data_dir(), tmp / "data", dev_per_task=1)
    return tmp / "data" / "test.jsonl"


def data_and_model(args: argparse.Namespace) -> tuple[Path, Path]:
    """``--data`` (default: the sample's test split, prepared in a temporary folder) and ``--model`` (default: the
    quickstart's model when there is one, else ``tiny-cpu`` trained on that data with ``--set``'s overrides)."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    tmp = Path(tempfile.mkdtemp(prefix="bench_predict_"))
    data = test_data(args.data, tmp)
    model = args.model
    if model is None:
        quickstart_model = Path("ragtruth-spans-quickstart/model")
        if (quickstart_model / "adapter_model.safetensors").is_file():
            model = quickstart_model
        else:
            model = tmp / "model"
            train(load_recipe("tiny-cpu", [f"output_dir={model}", f"data.prepared_dir={data.parent}",
                                           *args.overrides]))
    return data, model


def time_batch_size(detector: Any, records: list[Any], batch_size: int, repeats: int) -> dict[str, Any]:
    """The median of ``repeats`` timed ``detect_batch`` calls over ``records`` at ``batch_size`` (after a warm-up)."""
    detector.batch_size = batch_size
    detector.detect_batch(records[:batch_size])  # warm-up
    timings, token_counts = [], []
    for _ in range(repeats):
        tokens_before = detector.generated_tokens
        start = time.perf_counter()
        results = detector.detect_batch(records)
        timings.append(time.perf_counter() - start)
        token_counts.append(detector.generated_tokens - tokens_before)
    seconds = statistics.median(timings)
    tokens = token_counts[0]
    return {"batch_size": batch_size, "responses": len(records), "seconds": round(seconds, 2),
            "responses_per_s": round(len(records) / seconds, 2),
            "generated_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
            "parse_failures": sum(not r.ok for r in results), "all_seconds": [round(t, 2) for t in timings]}


def time_runtime(model: str | None, runtime: str, records: list[Any], singles: int) -> dict[str, Any]:
    """One runtime's figures (see the module docstring) and its response scores (``scores``)."""
    from ragtruth_spans.detectors.loader import load_detector

    start = time.perf_counter()
    detector = load_detector(model, runtime=runtime)
    loaded = time.perf_counter() - start
    cache = detector.context_cache()
    cache.clear()
    start, scores = time.perf_counter(), []
    size = detector.preferred_chunk_size
    for at in range(0, len(records), size):
        scores += [d.score for d in detector.detect_batch(records[at:at + size])]
    seconds = time.perf_counter() - start
    timed: dict[str, list[float]] = {"new": [], "repeated": []}
    for record in records[:singles]:
        for kind in ("new", "repeated"):  # the same item twice: first with the cache emptied, then seen before
            if kind == "new":
                cache.clear()
            tick = time.perf_counter()
            detector.detect_batch([record])
            timed[kind].append((time.perf_counter() - tick) * 1000)
    row = {"runtime": runtime, "load_s": round(loaded, 2), "responses": len(records),
           "responses_per_s": round(len(records) / seconds, 2)}
    for kind, values in timed.items():
        ordered = sorted(values)
        row[f"{kind}_p50_ms"] = round(statistics.median(ordered), 1)
        row[f"{kind}_p95_ms"] = round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1)
    return row | {"scores": scores}


def runtimes_main(args: argparse.Namespace) -> None:
    """``--runtimes``: every runtime timed in turn on the same records (see the module docstring)."""
    from ragtruth_spans.core.jsonl import read_records

    data = test_data(args.data, Path(tempfile.mkdtemp(prefix="bench_predict_")))
    records = read_records(data)
    rows = [time_runtime(None if args.model is None else str(args.model), runtime.strip(), records, args.singles)
            for runtime in args.runtimes.split(",")]
    for row in rows:
        row["max_score_difference"] = round(max((abs(a - b) for a, b in zip(row["scores"], rows[0]["scores"])),
                                                default=0.0), 4)
        print(json.dumps({k: v for k, v in row.items() if k != "scores"}))
    if args.markdown:
        print("\n| runtime | load s | predict responses/s | new context p50 / p95 ms | repeated p50 / p95 ms | "
              "max score difference |\n|---|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['runtime']} | {r['load_s']} | {r['responses_per_s']} | {r['new_p50_ms']} / "
                  f"{r['new_p95_ms']} | {r['repeated_p50_ms']} / {r['repeated_p95_ms']} | "
                  f"{r['max_score_difference']} |")
    if args.json:
        info = {"model": str(args.model or "default"), "data": str(data), "cpus": os.cpu_count(),
                "load_average": os.getloadavg(), "results": [{k: v for k, v in r.items() if k != "scores"}
                                                             for r in rows]}
        args.json.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def main() -> None:
    args = parse_args()
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    if args.runtimes is not None:
        runtimes_main(args)
        return

    import torch

    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    data, model = data_and_model(args)
    records = read_records(data)
    detector = GenerativeDetector.from_pretrained(model, device=args.device, max_new_tokens=args.max_new_tokens,
                                                  score_clean=not args.no_score_clean)
    sizes = [int(b) for b in args.batch_sizes.split(",")]
    rows = []
    for batch_size in sizes:
        rows.append(time_batch_size(detector, records, batch_size, args.repeats))
        print(json.dumps(rows[-1]))
    print("\n| batch size | responses | seconds | responses/s | generated tokens | tokens/s | parse failures |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['batch_size']} | {r['responses']} | {r['seconds']} | {r['responses_per_s']} | "
              f"{r['generated_tokens']} | {r['tokens_per_s']} | {r['parse_failures']} |")
    if args.compare_clean_scoring:
        rows.append(compare_clean_scoring(detector, records, max(sizes), args.repeats))
        print(json.dumps(rows[-1]))
    info = {"model": str(model), "data": str(data), "device": args.device, "max_new_tokens": args.max_new_tokens,
            "score_clean": not args.no_score_clean, "repeats": args.repeats,
            "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or
            platform.machine(), "cpus": os.cpu_count(), "results": rows}
    if args.json:
        args.json.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


def compare_clean_scoring(detector, records, batch_size: int, repeats: int) -> dict:
    """Seconds per batch for generation + P(clean): from the generation's cache (what detect_batch does) versus
    a second teacher-forced prefill of prompt + completion (``completion_logprobs``), and the largest difference
    between the two log-probabilities."""
    from ragtruth_spans.detectors.generative.prompts import prompt_token_ids
    from ragtruth_spans.detectors.generative.results import item_messages
    from ragtruth_spans.detectors.generative.scoring import clean_completion_ids

    batch = sorted(records, key=lambda r: len(r.context), reverse=True)[:batch_size]
    messages = [item_messages(detector.tokenizer, r, prompt_budget=detector.prompt_budget)[0] for r in batch]
    prompt_ids = [prompt_token_ids(detector.tokenizer, m) for m in messages]
    completions = [clean_completion_ids(detector.tokenizer, m, p, detector.stop_ids)
                   for m, p in zip(messages, prompt_ids)]

    def cached():
        return detector.generate_and_score(prompt_ids, completions)[1]

    def second_prefill():
        detector.generate_ids(prompt_ids)
        return detector.completion_logprobs(prompt_ids, completions)

    timings = {}
    for name, fn in (("kv_cache", cached), ("second_prefill", second_prefill)):
        fn()
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - start)
        timings[name] = round(statistics.median(runs), 3)
    difference = max(abs(a - b) for a, b in zip(cached(), second_prefill()))
    return {"compare_clean_scoring": timings, "batch_size": batch_size,
            "prompt_tokens": [len(p) for p in prompt_ids], "max_abs_logprob_difference": difference}


if __name__ == "__main__":
    main()
