"""Bounded load test of ``ragtruth-spans serve``: requests/s and p50/p99 latency at several client concurrencies.

Usage::

    python scripts/bench_serve.py --model RUN_OR_NAME [--requests 400] [--concurrency 1,8,32]
                                  [--max-batch 32] [--max-wait-ms 10] [--data TEST.jsonl] [--device cpu]
                                  [--batch-size N] [--max-new-tokens N] [--markdown] [--json OUT]

It starts the server as a subprocess on 127.0.0.1 (loopback only, a free port), waits for ``/health``, sends a
warm-up pass, then for each concurrency level sends exactly ``--requests`` requests (one item each, a unique id
each) from that many concurrent clients (their connections opened beforehand, untimed), and stops the server.
Items cycle through ``--data`` (default: the embedded sample's test split). Checks: every request answered exactly
once, with status 200 and its own id (a lost, failed or doubled answer makes the script exit 1); answers that
differ from the single-client warm-up answer of the same response are counted (``changed``; batching may move
floating-point results). Server-side batching totals (batches, mean and largest batch, longest ``detect_batch``
call) come from ``/health``.

Targets: throughput at 32 clients >= 1.5x the single-client figure, and p99 latency bounded by the
configured max wait plus one batch (reported as ``p99 / (max wait + longest batch)``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

HOST = "127.0.0.1"
JSON = {"Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def load_items(data: Path | None) -> list[dict[str, Any]]:
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir

    records = read_records(data) if data else load_ragtruth(sample_data_dir(), split="test")
    return [{"context": r.context, "question": r.question, "response": r.response, "task": r.task_type}
            for r in records]


def start_server(args: argparse.Namespace, port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "ragtruth_spans", "serve", "--model", args.model, "--host", HOST, "--port",
               str(port), "--max-batch", str(args.max_batch), "--max-wait-ms", str(args.max_wait_ms),
               "--max-queue", str(max(1024, 4 * max(args.levels))), "--log-level", "warning"]
    if args.device:
        command += ["--device", args.device]
    if args.max_new_tokens:
        command += ["--max-new-tokens", str(args.max_new_tokens)]
    if args.batch_size:
        command += ["--batch-size", str(args.batch_size)]
    log = open(args.server_log, "w", encoding="utf-8")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(url: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode}; see its log")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise SystemExit(f"the server did not answer /health within {timeout:.0f} s")


def spans_of(answer: dict[str, Any]) -> list[tuple[int, int]]:
    return [(s["start"], s["end"]) for s in answer["spans"]]


def run_level(url: str, items: list[dict[str, Any]], reference: list[list[tuple[int, int]]],
              clients: int, n_requests: int, tag: str) -> dict[str, Any]:
    """``n_requests`` requests from ``clients`` concurrent clients (threads, one keep-alive connection each, the
    standard library's ``http.client``: light enough not to be the bottleneck); latencies and the exactly-once
    check."""
    host, port = url.removeprefix("http://").split(":")
    indices = iter(range(n_requests))
    lock = threading.Lock()
    latencies: list[float] = []
    answered: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    changed = 0
    ready = threading.Barrier(clients + 1)

    def client_loop() -> None:
        nonlocal changed
        connection = http.client.HTTPConnection(host, int(port), timeout=600)
        connection.request("GET", "/health")  # open the connection, untimed
        connection.getresponse().read()
        ready.wait()
        while True:
            with lock:
                i = next(indices, None)
            if i is None:
                break
            item = items[i % len(items)] | {"id": f"{tag}-{i}"}
            started = time.perf_counter()
            connection.request("POST", "/v1/detect", body=json.dumps(item), headers=JSON)
            response = connection.getresponse()
            body = response.read()
            elapsed = time.perf_counter() - started
            with lock:
                latencies.append(elapsed)
                if response.status != 200:
                    failures[str(response.status)] += 1
                    continue
                answer = json.loads(body)
                answered[str(answer["id"])] += 1
                failures["wrong id"] += answer["id"] != item["id"]
                changed += spans_of(answer) != reference[i % len(items)]
        connection.close()

    threads = [threading.Thread(target=client_loop) for _ in range(clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    expected = {f"{tag}-{i}" for i in range(n_requests)}
    latencies.sort()
    return {"clients": clients, "requests": n_requests, "seconds": wall, "requests_per_s": n_requests / wall,
            "p50_ms": 1000 * latencies[len(latencies) // 2],
            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
            "lost": len(expected - set(answered)), "answered_twice": sum(1 for n in answered.values() if n > 1),
            "failures": {k: v for k, v in failures.items() if v}, "changed": changed}


def stats(url: str) -> dict[str, Any]:
    return httpx.get(f"{url}/health", timeout=10).json()["stats"]


def measure(args: argparse.Namespace, url: str, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    with httpx.Client(base_url=url, timeout=600) as client:  # warm-up, one client: the reference answers
        reference = [spans_of(client.post("/v1/detect", json=item).json()) for item in items]
    rows = []
    for clients in args.levels:
        runs = []
        for repeat in range(args.repeats):
            before = stats(url)
            run = run_level(url, items, reference, clients, args.requests, f"c{clients}r{repeat}")
            after = stats(url)
            run["batches"] = after["batches"] - before["batches"]
            run["mean_batch"] = (after["items"] - before["items"]) / run["batches"] if run["batches"] else 0.0
            runs.append(run)
        runs.sort(key=lambda r: r["requests_per_s"])
        row = runs[len(runs) // 2]  # the median run by throughput
        row["runs_requests_per_s"] = [round(r["requests_per_s"], 1) for r in runs]
        for key in ("lost", "answered_twice", "changed"):
            row[key] = sum(r[key] for r in runs)
        row["failures"] = dict(sum((Counter(r["failures"]) for r in runs), Counter()))
        row["largest_batch"] = after["largest_batch"]
        row["longest_batch_ms"] = 1000 * after["longest_batch_seconds"]
        row["p99_bound_ratio"] = row["p99_ms"] / (args.max_wait_ms + row["longest_batch_ms"])
        rows.append(row)
        print(f"{clients:>3} clients: {row['requests_per_s']:8.1f} req/s  p50 {row['p50_ms']:7.1f} ms  "
              f"p99 {row['p99_ms']:7.1f} ms  mean batch {row['mean_batch']:5.1f}  lost {row['lost']}  "
              f"twice {row['answered_twice']}  failures {row['failures'] or 0}  changed {row['changed']}",
              flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| clients | requests | req/s | p50 ms | p99 ms | mean batch | longest batch ms | "
             "p99 / (max wait + longest batch) | lost | answered twice | non-200 | req/s of each run |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['clients']} | {r['requests']} | {r['requests_per_s']:.1f} | {r['p50_ms']:.1f} | "
                     f"{r['p99_ms']:.1f} | {r['mean_batch']:.1f} | {r['longest_batch_ms']:.1f} | "
                     f"{r['p99_bound_ratio']:.2f} | {r['lost']} | {r['answered_twice']} | "
                     f"{sum(r['failures'].values())} | {', '.join(map(str, r['runs_requests_per_s']))} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="A run directory or a detector name (numbers, ...).")
    parser.add_argument("--requests", type=int, default=400, help="Requests per concurrency level and run.")
    parser.add_argument("--repeats", type=int, default=1, help="Runs per level; the median run (by requests/s) is "
                        "reported, with every run's requests/s.")
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=10.0)
    parser.add_argument("--data", type=Path, default=None, help="Prepared records to send (default: the sample).")
    parser.add_argument("--device", default=None)
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None, help="The detector's own batch size (serve "
                        "--batch-size), e.g. equal to --max-batch.")
    parser.add_argument("--startup-timeout", type=float, default=600.0)
    parser.add_argument("--server-log", type=Path, default=Path("bench_serve_server.log"))
    parser.add_argument("--markdown", action="store_true", help="Also print a Markdown table.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args()
    args.levels = [int(c) for c in args.concurrency.split(",")]

    items = load_items(args.data)
    port = free_port()
    url = f"http://{HOST}:{port}"
    process = start_server(args, port)
    try:
        wait_ready(url, process, args.startup_timeout)
        rows = measure(args, url, items)
    finally:
        process.terminate()
        process.wait(60)
    ratio = rows[-1]["requests_per_s"] / rows[0]["requests_per_s"]
    print(f"throughput at {args.levels[-1]} clients / at {args.levels[0]}: {ratio:.2f}x (target >= 1.5x)")
    if args.markdown:
        print(markdown(rows))
    if args.json:
        args.json.write_text(json.dumps({"model": args.model, "max_batch": args.max_batch, "max_wait_ms":
                                         args.max_wait_ms, "machine": platform.platform(), "cpus": os.cpu_count(),
                                         "items": len(items), "rows": rows, "scaling": ratio}, indent=2) + "\n",
                             encoding="utf-8")
    if any(r["lost"] or r["answered_twice"] or r["failures"] for r in rows):
        raise SystemExit("some requests were lost, answered twice or failed")


if __name__ == "__main__":
    main()
