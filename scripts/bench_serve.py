"""Bounded load test of ``ragtruth-spans serve``: requests/s and p50/p95/p99 latency at several client
concurrencies, the context cache's hit rate, the cost of ``/v1/select`` against one ``/v1/detect``, and the gate's
added latency over its upstream's own.

Usage::

    python scripts/bench_serve.py --model RUN_OR_NAME [--requests 400] [--concurrency 1,4,16]
                                  [--max-batch 32] [--max-wait-ms 10] [--data TEST.jsonl] [--device cpu]
                                  [--context-chars 1000-3000] [--max-response-chars 700]
                                  [--batch-size N] [--max-new-tokens N] [--select 6] [--gate]
                                  [--token-rate 50] [--stream-upstream] [--runtimes onnx-fp32,onnx-int8]
                                  [--markdown] [--json OUT]

It starts the server as a subprocess on 127.0.0.1 (loopback only, a free port), waits for ``/health``, sends a
warm-up pass, then for each concurrency level sends exactly ``--requests`` requests (one item each, a unique id
each) from that many concurrent clients (their connections opened beforehand, untimed), and stops the server.
Items cycle through ``--data`` (default: the embedded sample's test split). Checks: every request answered exactly
once, with status 200 and its own id (a lost, failed or doubled answer makes the script exit 1); answers that
differ from the single-client warm-up answer of the same response are counted (``changed``; batching may move
floating-point results). Server-side batching totals (batches, mean and largest batch, longest ``detect_batch``
call) come from ``/health``.

The context cache's hit rate per level comes from ``/health`` (lookups of context encodings that found them).
With ``--select N``, each of ``--select-rounds`` contexts never seen before (a fresh first line makes each one new,
so nothing comes from the cache) is sent once as one ``/v1/detect`` and once, made new again, as a ``/v1/select``
of N candidates; the ratio of their median times is the cost of N candidates in detects. With ``--gate``, a fake
OpenAI-compatible upstream runs in this process on 127.0.0.1, streaming a fixed answer at ``--token-rate`` words
per second; the server runs with ``--upstream`` pointing at it, and ``--gate-requests`` streamed and plain chat
completions are sent to the upstream directly and through the gate (each with a context): the gate's added time to
the first content byte and to the last byte (``[DONE]``) is the difference of their medians. With
``--stream-upstream`` the server runs with that option: the plain completions are streamed from the upstream and
checked as they arrive.

Targets: throughput at the highest concurrency >= 1.5x the single-client figure, p99 latency bounded by the
configured max wait plus one batch (reported as ``p99 / (max wait + longest batch)``), six candidates under two
detects.
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


def load_items(data: Path | None, context_chars: tuple[int, int] | None = None,
               max_response_chars: int | None = None) -> list[dict[str, Any]]:
    """The records of ``data`` (default: the sample's test split) as request items, those whose context length
    lies in ``context_chars`` (inclusive) and whose response is under ``max_response_chars`` only, when given."""
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir

    records = read_records(data) if data else load_ragtruth(sample_data_dir(), split="test")
    if context_chars is not None:
        records = [r for r in records if context_chars[0] <= len(r.context) <= context_chars[1]]
    if max_response_chars is not None:
        records = [r for r in records if len(r.response) < max_response_chars]
    if not records:
        raise SystemExit("no record of --data is within --context-chars and --max-response-chars")
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
    if args.upstream:
        command += ["--upstream", args.upstream]
    if args.runtime:
        command += ["--runtime", args.runtime]
    if args.upstream and args.stream_upstream:
        command += ["--stream-upstream"]
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


def char_range(text: str) -> tuple[int, int]:
    """``--context-chars``: ``MIN-MAX`` character counts, ``0 <= MIN <= MAX`` (argparse refuses anything else in one
    line, exit 2).

    >>> char_range("1000-3000")
    (1000, 3000)
    """
    low, sep, high = text.partition("-")
    if not (sep and low.isdigit() and high.isdigit() and int(low) <= int(high)):
        raise argparse.ArgumentTypeError(f"expected MIN-MAX with 0 <= MIN <= MAX, got {text!r}")
    return int(low), int(high)


def stop_server(process: subprocess.Popen) -> None:
    """Ask the server to stop (SIGTERM: it drains), then kill it if it is still running after 30 s."""
    process.terminate()
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


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
    return {"clients": clients, "requests": n_requests, "seconds": wall, "requests_per_s": n_requests / wall,
            "p50_ms": 1000 * quantile(latencies, 0.5), "p95_ms": 1000 * quantile(latencies, 0.95),
            "p99_ms": 1000 * quantile(latencies, 0.99),
            "lost": len(expected - set(answered)), "answered_twice": sum(1 for n in answered.values() if n > 1),
            "failures": {k: v for k, v in failures.items() if v}, "changed": changed}


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def stats(url: str) -> dict[str, Any]:
    health = httpx.get(f"{url}/health", timeout=10).json()
    return health["stats"] | {"cache": health.get("context_cache") or {}}


def hit_rate(before: dict[str, Any], after: dict[str, Any]) -> float | None:
    """The context cache's hit rate between two ``/health`` readings (None without a cache or lookups)."""
    hits = after["cache"].get("hits", 0) - before["cache"].get("hits", 0)
    misses = after["cache"].get("misses", 0) - before["cache"].get("misses", 0)
    return hits / (hits + misses) if hits + misses else None


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
            run["cache_hit_rate"] = hit_rate(before, after)
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
              f"p95 {row['p95_ms']:7.1f} ms  p99 {row['p99_ms']:7.1f} ms  mean batch {row['mean_batch']:5.1f}  "
              f"cache hits {fmt_rate(row['cache_hit_rate'])}  lost {row['lost']}  "
              f"twice {row['answered_twice']}  failures {row['failures'] or 0}  changed {row['changed']}",
              flush=True)
    return rows


def fmt_rate(rate: float | None) -> str:
    return "–" if rate is None else f"{100 * rate:.0f} %"


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| clients | requests | req/s | p50 ms | p95 ms | p99 ms | cache hits | mean batch | longest batch ms | "
             "p99 / (max wait + longest batch) | lost | answered twice | non-200 | req/s of each run |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['clients']} | {r['requests']} | {r['requests_per_s']:.1f} | {r['p50_ms']:.1f} | "
                     f"{r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {fmt_rate(r['cache_hit_rate'])} | "
                     f"{r['mean_batch']:.1f} | {r['longest_batch_ms']:.1f} | "
                     f"{r['p99_bound_ratio']:.2f} | {r['lost']} | {r['answered_twice']} | "
                     f"{sum(r['failures'].values())} | {', '.join(map(str, r['runs_requests_per_s']))} |")
    return "\n".join(lines)


# --- /v1/select of N candidates against one /v1/detect, on contexts never seen before ---------------------------


def fresh_context(item: dict[str, Any], tag: str) -> str:
    """``item``'s context with a first line of its own: a context no cache has seen."""
    return f"Reference {tag}.\n{item['context']}"


def fresh_answer(answer: str, tag: str) -> str:
    """``answer`` with ``tag`` opening each of its sentences: an answer none of whose sentences the server has
    encoded before (its sentence cache would otherwise time a repeated answer, not a new one). The tag is one
    capitalised word (``Ref<tag>``), so each sentence still reads as a sentence to every splitter (a lower-case word
    after a full stop would join the sentences into one)."""
    import re

    return re.sub(r"(?:^|(?<=[.!?]\s)|(?<=\n))(?=\S)", f"Ref{tag} ", answer)


def distinct_candidates(group: list[dict[str, Any]], items: list[dict[str, Any]], n: int, skip: int) -> list[str]:
    """``n`` different responses: those written from the group's context, then others of the data (from ``skip``
    on), so that no candidate repeats another (a repeated text would time nothing new)."""
    own = list(dict.fromkeys(item["response"] for item in group))
    others = [item["response"] for item in items if item["response"] not in own]
    chosen = list(dict.fromkeys([*own, *others[skip:], *others[:skip]]))[:n]
    if len(chosen) < n:
        raise SystemExit(f"--select {n}: the data holds only {len(chosen)} different responses")
    return chosen


def measure_select(url: str, items: list[dict[str, Any]], n: int, rounds: int) -> dict[str, Any]:
    """Median time of one ``/v1/detect`` and of one ``/v1/select`` of ``n`` different candidates (the responses
    written from the same context, then responses of other contexts: :func:`distinct_candidates`), each on a new
    context, over ``rounds`` contexts."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(item["context"], []).append(item)
    chosen = sorted(groups.values(), key=len, reverse=True)
    detect_s, select_s, seen_s = [], [], []
    with httpx.Client(base_url=url, timeout=600) as client:
        for r in range(rounds):
            group = chosen[r % len(chosen)]
            item = group[0]
            started = time.perf_counter()
            answer = client.post("/v1/detect", json=item | {"context": fresh_context(item, f"d{r}"),
                                                            "response": fresh_answer(item["response"], f"d{r}")})
            detect_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            seen = client.post("/v1/detect", json=item | {"response": fresh_answer(item["response"], f"n{r}")})
            seen_s.append(time.perf_counter() - started)
            body = {"context": fresh_context(item, f"s{r}"), "task": item["task"], "question": item["question"],
                    "candidates": [fresh_answer(c, f"s{r}") for c in distinct_candidates(group, items, n, 3 * r)]}
            started = time.perf_counter()
            chosen_answer = client.post("/v1/select", json=body)
            select_s.append(time.perf_counter() - started)
            if {answer.status_code, seen.status_code, chosen_answer.status_code} != {200}:
                raise SystemExit(f"/v1/detect answered {answer.status_code} and {seen.status_code}, /v1/select "
                                 f"{chosen_answer.status_code}")
    out = {"candidates": n, "rounds": rounds, "detect_ms": 1000 * quantile(detect_s, 0.5),
           "detect_p95_ms": 1000 * quantile(detect_s, 0.95), "select_ms": 1000 * quantile(select_s, 0.5),
           "seen_context_ms": 1000 * quantile(seen_s, 0.5), "seen_context_p95_ms": 1000 * quantile(seen_s, 0.95)}
    out["ratio"] = out["select_ms"] / out["detect_ms"]
    print(f"/v1/select of {n} candidates: {out['select_ms']:.0f} ms median against {out['detect_ms']:.0f} ms for "
          f"one /v1/detect ({out['ratio']:.2f} detects; new contexts, {rounds} rounds; target < 2); one /v1/detect "
          f"on a new context: p95 {out['detect_p95_ms']:.0f} ms; on a context seen before with a new answer: p50 "
          f"{out['seen_context_ms']:.0f} / p95 {out['seen_context_p95_ms']:.0f} ms", flush=True)
    return out


# --- the gate against its upstream --------------------------------------------------------------------------------


def fake_upstream(answer: str, words_per_s: float) -> Any:
    """An OpenAI-compatible server answering ``answer``, a word every ``1 / words_per_s`` seconds (streamed
    word by word on a fixed schedule, or all at once after the same time); a request's ``user`` field, when set,
    opens each sentence (:func:`fresh_answer`), so that each request gets an answer of its own of the same length.
    Streamed as an LLM server streams: each word with the space before it (as BPE tokens carry it), then, one step
    later (the stop token's), a chunk with ``finish_reason`` and ``data: [DONE]``."""
    import asyncio
    import re

    from fastapi import FastAPI, Request
    from fastapi.responses import StreamingResponse

    app = FastAPI()

    async def chat(request: Request) -> Any:
        body = await request.json()
        text = fresh_answer(answer, body["user"]) if body.get("user") else answer
        pieces = re.findall(r"\s*\S+|\s+$", text)
        head = {"id": "chatcmpl-bench", "created": 0, "model": body.get("model", "bench")}
        if not body.get("stream"):
            await asyncio.sleep((len(pieces) + 1) / words_per_s)  # the words and the stop token
            return head | {"object": "chat.completion", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]}

        async def events() -> Any:
            loop = asyncio.get_running_loop()
            start = loop.time()

            async def until(step: int) -> None:  # on a schedule, so the stream ends when the whole answer would
                await asyncio.sleep(max(0.0, start + step / words_per_s - loop.time()))

            for step, piece in enumerate(pieces, 1):
                await until(step)
                chunk = head | {"object": "chat.completion.chunk",
                                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                yield f"data: {json.dumps(chunk)}\n\n"
            await until(len(pieces) + 1)  # the stop token
            stop = head | {"object": "chat.completion.chunk",
                           "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            yield f"data: {json.dumps(stop)}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    chat.__annotations__["request"] = Request  # this module's annotations are strings; FastAPI needs the class
    app.post("/v1/chat/completions")(chat)
    return app


def start_upstream(app: Any) -> tuple[Any, str]:
    """``app`` on uvicorn at 127.0.0.1 in a thread of this process: the server and its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host=HOST, port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise SystemExit("the fake upstream did not start")
        time.sleep(0.02)
    return server, f"http://{HOST}:{port}/v1"


def timed_completion(client: httpx.Client, url: str, body: dict[str, Any]) -> tuple[float, float]:
    """Seconds to the first content byte and to the last byte of one chat completion (streamed or not)."""
    started = time.perf_counter()
    first = None
    with client.stream("POST", f"{url}/chat/completions", json=body) as response:
        if response.status_code != 200:
            raise SystemExit(f"{url} answered {response.status_code}")
        for line in response.iter_lines():
            if first is None and '"content"' in line:
                first = time.perf_counter() - started
    last = time.perf_counter() - started
    return (last if first is None else first), last


def measure_gate(args: argparse.Namespace, url: str, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The upstream directly and through the gate, streamed and not: median time to first and last byte."""
    rows = []
    with httpx.Client(timeout=600) as client:
        warm = {"model": "bench", "messages": [], "context": item["context"], "stream": True}
        timed_completion(client, f"{url}/v1", warm)  # untimed: the gate's first request opens its client
        for stream in (True, False):
            times: dict[str, list[tuple[float, float]]] = {"upstream": [], "gate": []}
            for i in range(args.gate_requests):
                body = {"model": "bench", "stream": stream, "messages": [{"role": "user", "content": "?"}],
                        "user": f"g{i}{'s' if stream else 'p'}"}  # an answer of its own: nothing cached from before
                times["upstream"].append(timed_completion(client, args.upstream, body))
                checked = body | {"context": fresh_context(item, f"g{i}{stream}"), "question": item["question"],
                                  "task": item["task"]}
                times["gate"].append(timed_completion(client, f"{url}/v1", checked))
            row = {"stream": stream, "requests": args.gate_requests,
                   "stream_upstream": args.stream_upstream and not stream}
            for who, pairs in times.items():
                row[f"{who}_first_ms"] = 1000 * quantile([p[0] for p in pairs], 0.5)
                row[f"{who}_last_ms"] = 1000 * quantile([p[1] for p in pairs], 0.5)
            row["added_first_ms"] = row["gate_first_ms"] - row["upstream_first_ms"]
            row["added_last_ms"] = row["gate_last_ms"] - row["upstream_last_ms"]
            rows.append(row)
            print(f"gate, {'streamed' if stream else 'not streamed'}: first byte +{row['added_first_ms']:.0f} ms "
                  f"({row['upstream_first_ms']:.0f} -> {row['gate_first_ms']:.0f}), last byte "
                  f"+{row['added_last_ms']:.0f} ms ({row['upstream_last_ms']:.0f} -> {row['gate_last_ms']:.0f})",
                  flush=True)
    return rows


def gate_markdown(rows: list[dict[str, Any]], words_per_s: float) -> str:
    lines = ["| answer | requests | upstream first byte ms | gate first byte ms | added | upstream last byte ms | "
             "gate last byte ms | added |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        kind = "streamed" if r["stream"] else "not streamed" + (", --stream-upstream" if r["stream_upstream"] else "")
        kind += f" ({words_per_s:g} words/s)"
        lines.append(f"| {kind} | {r['requests']} | {r['upstream_first_ms']:.0f} | {r['gate_first_ms']:.0f} | "
                     f"{r['added_first_ms']:+.0f} | {r['upstream_last_ms']:.0f} | {r['gate_last_ms']:.0f} | "
                     f"{r['added_last_ms']:+.0f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="A run directory or a detector name (numbers, ...).")
    parser.add_argument("--requests", type=int, default=400, help="Requests per concurrency level and run.")
    parser.add_argument("--repeats", type=int, default=1, help="Runs per level; the median run (by requests/s) is "
                        "reported, with every run's requests/s.")
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--max-batch", type=int, default=32)
    parser.add_argument("--max-wait-ms", type=float, default=10.0)
    parser.add_argument("--data", type=Path, default=None, help="Prepared records to send (default: the sample).")
    parser.add_argument("--context-chars", type=char_range, default=None, metavar="MIN-MAX",
                        help="Send only the records whose context has MIN to MAX characters, e.g. 1000-3000.")
    parser.add_argument("--max-response-chars", type=int, default=None,
                        help="Send only the records whose response is shorter than this, e.g. 700.")
    parser.add_argument("--device", default=None)
    parser.add_argument("--max-new-tokens", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None, help="The detector's own batch size (serve "
                        "--batch-size), e.g. equal to --max-batch.")
    parser.add_argument("--startup-timeout", type=float, default=600.0)
    parser.add_argument("--server-log", type=Path, default=Path("bench_serve_server.log"))
    parser.add_argument("--select", type=int, default=0, help="Also time /v1/select of this many candidates "
                        "against one /v1/detect, on new contexts (0: not).")
    parser.add_argument("--select-rounds", type=int, default=10)
    parser.add_argument("--gate", action="store_true", help="Also time the gate (serve --upstream) against a fake "
                        "upstream in this process.")
    parser.add_argument("--token-rate", type=float, default=50.0, help="The fake upstream's words per second.")
    parser.add_argument("--gate-requests", type=int, default=10)
    parser.add_argument("--stream-upstream", action="store_true", help="Run the gate with --stream-upstream: "
                        "answers the client wants whole are streamed from the upstream and checked as they arrive.")
    parser.add_argument("--runtimes", default=None, help="Comma-separated sentence-encoder runtimes (onnx-fp32, "
                        "onnx-int8, torch): one server each (serve --runtime), measured one after the other in "
                        "this run (default: the server's own choice).")
    parser.add_argument("--markdown", action="store_true", help="Also print a Markdown table.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the results here.")
    args = parser.parse_args()
    args.levels = [int(c) for c in args.concurrency.split(",")]

    items = load_items(args.data, args.context_chars, args.max_response_chars)
    args.upstream = None
    if args.gate:
        _, args.upstream = start_upstream(fake_upstream(items[0]["response"], args.token_rate))
    runtimes = args.runtimes.split(",") if args.runtimes else [None]
    results = {runtime: run_server(args, items, runtime) for runtime in runtimes}
    if args.runtimes:
        report_runtimes(args, results, len(items))
    else:
        report(args, *results[None], len(items))


def run_server(args: argparse.Namespace, items: list[dict[str, Any]],
               runtime: str | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One server (``--runtime runtime`` when given): the concurrency levels, then select and gate if asked."""
    args.runtime = runtime
    if runtime:
        print(f"runtime {runtime}:", flush=True)
    port = free_port()
    url = f"http://{HOST}:{port}"
    process = start_server(args, port)
    extra: dict[str, Any] = {}
    try:
        wait_ready(url, process, args.startup_timeout)
        rows = measure(args, url, items)
        if args.select:
            extra["select"] = measure_select(url, items, args.select, args.select_rounds)
        if args.gate:
            extra["gate"] = measure_gate(args, url, items[0])
    finally:
        stop_server(process)
    return rows, extra


def report(args: argparse.Namespace, rows: list[dict[str, Any]], extra: dict[str, Any], n_items: int) -> None:
    """Print the summary (and the tables with ``--markdown``); write ``--json``."""
    ratio = rows[-1]["requests_per_s"] / rows[0]["requests_per_s"]
    print(f"throughput at {args.levels[-1]} clients / at {args.levels[0]}: {ratio:.2f}x (target >= 1.5x)")
    if args.markdown:
        print(markdown(rows))
        if "gate" in extra:
            print(gate_markdown(extra["gate"], args.token_rate))
    if args.json:
        args.json.write_text(json.dumps({"model": args.model, "max_batch": args.max_batch, "max_wait_ms":
                                         args.max_wait_ms, "machine": platform.platform(), "cpus": os.cpu_count(),
                                         "items": n_items, "rows": rows, "scaling": ratio, **extra}, indent=2)
                             + "\n", encoding="utf-8")
    if any(r["lost"] or r["answered_twice"] or r["failures"] for r in rows):
        raise SystemExit("some requests were lost, answered twice or failed")


def runtimes_markdown(results: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]) -> str:
    """One row per runtime: single-client p50 / p95 of a repeated request (context and answer seen before), of a
    new answer to a context seen before and of a new context (``--select``'s detects), the highest level's
    requests/s, select, the gate's added ms."""
    lines = ["| runtime | 1 client p50 / p95 ms: repeated request | new answer, seen context | new context | "
             "requests/s (most clients) | select / detect | gate added, streamed ms | gate added, not streamed ms |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for runtime, (rows, extra) in results.items():
        chosen = extra.get("select")
        select = f"{chosen['ratio']:.2f}x" if chosen else "–"
        new = f"{chosen['detect_ms']:.0f} / {chosen['detect_p95_ms']:.0f}" if chosen else "–"
        seen = f"{chosen['seen_context_ms']:.0f} / {chosen['seen_context_p95_ms']:.0f}" if chosen else "–"
        gate = {r["stream"]: f"{r['added_last_ms']:+.0f}" for r in extra.get("gate", [])}
        lines.append(f"| {runtime} | {rows[0]['p50_ms']:.0f} / {rows[0]['p95_ms']:.0f} | {seen} | {new} | "
                     f"{rows[-1]['requests_per_s']:.1f} | {select} | {gate.get(True, '–')} | "
                     f"{gate.get(False, '–')} |")
    return "\n".join(lines)


def report_runtimes(args: argparse.Namespace, results: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]],
                    n_items: int) -> None:
    """Each runtime's summary, the side-by-side table with ``--markdown``; ``--json`` keyed by runtime."""
    for runtime, (rows, _) in results.items():
        ratio = rows[-1]["requests_per_s"] / rows[0]["requests_per_s"]
        print(f"{runtime}: throughput at {args.levels[-1]} clients / at {args.levels[0]}: {ratio:.2f}x")
    if args.markdown:
        print(runtimes_markdown(results))
    if args.json:
        args.json.write_text(json.dumps({"model": args.model, "machine": platform.platform(), "cpus": os.cpu_count(),
                                         "items": n_items, "runtimes": {
                                             r: {"rows": rows, **extra} for r, (rows, extra) in results.items()}},
                                        indent=2) + "\n", encoding="utf-8")
    if any(r["lost"] or r["answered_twice"] or r["failures"] for rows, _ in results.values() for r in rows):
        raise SystemExit("some requests were lost, answered twice or failed")


if __name__ == "__main__":
    main()
