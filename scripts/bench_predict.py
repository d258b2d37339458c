"""Throughput of prediction with the Hugging Face backend: responses/s at several batch sizes.

Usage (CPU, the tiny model of the quickstart)::

    python scripts/bench_predict.py [--model DIR] [--data TEST.jsonl] [--batch-sizes 1,4,8] [--max-new-tokens 256]

Without ``--model`` it uses ``./ragtruth-spans-quickstart/model`` when present, else trains the ``tiny-cpu``
recipe into a temporary directory; without ``--data`` it prepares the embedded sample and uses its test split.
Each batch size runs the whole split ``--repeats`` times (median kept) after a one-batch warm-up, with the same
loaded model (the CPU may be shared: the spread is printed); generated
tokens (padding excluded) are counted so that runs with different output lengths can be compared (tokens/s).
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

os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--batch-sizes", default="1,4,8")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3, help="Timed runs per batch size; the median is kept.")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    parser.add_argument("--no-score-clean", action="store_true",
                        help="Skip the response score 1 - P(clean), to measure what it costs.")
    args = parser.parse_args()

    import torch

    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector
    from ragtruth_spans.training.recipe import load_recipe
    from ragtruth_spans.training.run import train

    tmp = Path(tempfile.mkdtemp(prefix="bench_predict_"))
    data = args.data
    if data is None:
        prepare(sample_data_dir(), tmp / "data", dev_per_task=1)
        data = tmp / "data" / "test.jsonl"
    model = args.model
    if model is None:
        quickstart_model = Path("ragtruth-spans-quickstart/model")
        if (quickstart_model / "adapter_model.safetensors").is_file():
            model = quickstart_model
        else:
            model = tmp / "model"
            train(load_recipe("tiny-cpu", [f"output_dir={model}", f"data.prepared_dir={data.parent}"]))
    records = read_records(data)

    detector = GenerativeDetector.from_pretrained(model, device=args.device, max_new_tokens=args.max_new_tokens,
                                                  score_clean=not args.no_score_clean)
    rows = []
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        detector.batch_size = batch_size
        detector.detect_batch(records[:batch_size])  # warm-up
        timings, token_counts = [], []
        for _ in range(args.repeats):
            tokens_before = detector.generated_tokens
            start = time.perf_counter()
            results = detector.detect_batch(records)
            timings.append(time.perf_counter() - start)
            token_counts.append(detector.generated_tokens - tokens_before)
        seconds = statistics.median(timings)
        tokens = token_counts[0]
        rows.append({"batch_size": batch_size, "responses": len(records), "seconds": round(seconds, 2),
                     "responses_per_s": round(len(records) / seconds, 2),
                     "generated_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
                     "parse_failures": sum(not r.ok for r in results),
                     "all_seconds": [round(t, 2) for t in timings]})
        print(json.dumps(rows[-1]))

    info = {"model": str(model), "data": str(data), "device": args.device, "max_new_tokens": args.max_new_tokens,
            "score_clean": not args.no_score_clean,
            "repeats": args.repeats,
            "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or
            platform.machine(), "cpus": os.cpu_count(), "results": rows}
    print("\n| batch size | responses | seconds | responses/s | generated tokens | tokens/s | parse failures |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['batch_size']} | {r['responses']} | {r['seconds']} | {r['responses_per_s']} | "
              f"{r['generated_tokens']} | {r['tokens_per_s']} | {r['parse_failures']} |")
    if args.json:
        args.json.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
