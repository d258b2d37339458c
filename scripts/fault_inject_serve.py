"""Fault injection against ``ragtruth-spans serve``: valid and hostile requests mixed, under concurrency.

Usage::

    python scripts/fault_inject_serve.py [--model numbers] [--requests 600] [--hostile-share 0.35]
                                         [--concurrency 16] [--deadline 180] [--seed 0] [--json OUT]

It starts the server as a subprocess on 127.0.0.1 only (a free port; nothing else is contacted), with small limits
(``--max-items 8 --max-chars 5000 --max-body-mb 0.25``) and a batching window (``--max-wait-ms 20``) so valid and
hostile requests share micro-batches, sends exactly ``--requests`` requests from ``--concurrency`` threads — each a
valid item with a unique id (some carrying terminal escapes or non-ASCII digits, which are valid text) or one of
the hostile bodies below, drawn with ``--seed`` — then checks ``/health`` and stops the server (it also stops by
itself at ``--deadline`` seconds).

Hostile bodies: lone surrogates (question, id, candidate), ``"id": true``, an integer of 5,000 digits, nesting
5,000 deep, ``NaN``, a 20,000-character unknown key, a form body, ``text/plain``, bytes that are not UTF-8, invalid
JSON, an empty body, too many items, an item over the character limit, a body over the byte limit, a list mixing a
valid item with a poisoned one.

Heavy evidence beside small requests (``--heavy N``, default 3, 0 skips it): a second server with the
default cost budget and ``--max-chars 100000`` gets N concurrent requests, each one item with a fresh ~98,000-
character context (never seen before, so nothing is cached) and ``"evidence": true``, plus one request of three
such items (over ``--max-request-chars``: must be 413); meanwhile three threads send, back to back, small
``/v1/detect`` requests, small ``/v1/detect`` requests with ``"evidence": true`` and small ``/v1/select``
requests. Reported: the heavy requests' statuses and seconds, the small requests' latency (median, p95, max)
before and while the heavy ones run. Exit status 1 also when a small
request took longer than ``--small-latency-limit`` seconds (default 2) while heavy ones ran.

Connection attacks (``--attack-connections N``, default 60, 0 skips them), on a third server with the default
limits but ``--header-timeout``/``--body-read-timeout`` of ``--attack-timeout`` seconds (default 2): a body of
``--attack-keys`` unknown keys (default 300,000, about 4 MB: within the byte limit) while ``/health`` is polled (422,
a small answer, ``/health`` within ``--small-latency-limit``); N requests whose body stops after a few bytes and N
whose headers stop halfway (each answered 408 and closed within the timeout plus 3 s, ``/health`` answering
meanwhile); N clients that close the connection mid-body (each counted in ``/health``'s ``connections``, and no
``ERROR`` line or traceback in the server's log). Exit status 1 when any of these fails.

Reported: requests sent, answered, lost (no answer: a transport error or timeout), duplicated (an answer carrying
another request's id, or one id answered twice), wrongly failed (a valid request not answered 200 with the spans
the detector gives that item alone), hostile answered 4xx as expected, hostile answered 5xx or 200 (mishandled),
and the server alive at the end. Exit status 1 when anything was lost, duplicated, wrongly failed or mishandled.

Gate mode (``--gate [--gate-repeats 3] [--gate-concurrent 30] [--health-limit 0.1]``): only ``serve --upstream``
against misbehaving fake upstreams in this process — lying framing, slow upstreams while ``/health`` is timed, the
block policy on answers it cannot check, on ``n=2`` and under load (``fault_inject_gate.py``); one ``PASS`` or
``FAIL`` line per check, exit status 1 on any ``FAIL``.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from typing import Any

import fault_inject_gate  # scripts/ is on sys.path when this file runs as a script
import httpx
from bench_serve import stop_server, wait_ready

HOST = "127.0.0.1"
JSON_TYPE = {"content-type": "application/json"}
LIMITS = {"max_items": 8, "max_chars": 5000, "max_body_mb": 0.25}
CONTEXT = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms; a suite costs 1,200 dollars."
RESPONSES = ["It opened in 1998 and has 120 rooms.", "It has 150 rooms and opened in 1999.",
             "A suite costs 1,200 dollars.", "It opened in ١٩٩٩ with １２０ rooms.",
             "Opened in 2001.\x1b[2J\x1b]8;;https://evil.example\x07link\x1b]8;;\x07", "Café opened in 1999."]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _raw(obj: Any) -> bytes:
    return json.dumps(obj).encode()  # ensure_ascii: a lone surrogate travels as the escape \ud800


def valid_item(i: int, rng: random.Random) -> dict[str, Any]:
    return {"id": f"v{i}", "context": CONTEXT, "question": "When did it open?", "task": "QA",
            "response": RESPONSES[rng.randrange(len(RESPONSES))]}


def hostile_bodies() -> list[tuple[str, str, bytes, dict[str, str]]]:
    """``(name, path, body, headers)`` of each hostile request (every one must get a 4xx, never 5xx or 200)."""
    item = {"context": CONTEXT, "response": "It opened in 1998.", "task": "QA"}
    big = LIMITS["max_chars"] + 1
    return [
        ("surrogate question", "/v1/detect", _raw(item | {"question": "\ud800"}), JSON_TYPE),
        ("surrogate id", "/v1/detect", _raw(item | {"id": "x\udfff"}), JSON_TYPE),
        ("surrogate candidate", "/v1/select", _raw({"context": CONTEXT, "task": "QA", "candidates": ["a", "\ud800"]}),
         JSON_TYPE),
        ("id true", "/v1/detect", _raw(item | {"id": True}), JSON_TYPE),
        ("5000-digit integer", "/v1/detect", b'{"context": "c", "response": "r", "task": "QA", "id": '
         + b"9" * 5000 + b"}", JSON_TYPE),
        ("nesting 5000 deep", "/v1/detect", b"[" * 5000 + b"]" * 5000, JSON_TYPE),
        ("NaN", "/v1/detect", b'{"context": NaN}', JSON_TYPE),
        ("20,000-char unknown key", "/v1/detect", _raw(item | {"k" * 20_000: 1}), JSON_TYPE),
        ("form body", "/v1/detect", b"context=c&response=r&task=QA",
         {"content-type": "application/x-www-form-urlencoded"}),
        ("text/plain", "/v1/detect", _raw(item), {"content-type": "text/plain"}),
        ("not UTF-8", "/v1/detect", b'{"context": "caf\xe9", "response": "r", "task": "QA"}', JSON_TYPE),
        ("invalid JSON", "/v1/detect", b'{"context": ', JSON_TYPE),
        ("empty body", "/v1/detect", b"", JSON_TYPE),
        ("too many items", "/v1/detect", _raw([item] * (LIMITS["max_items"] + 1)), JSON_TYPE),
        ("item over the character limit", "/v1/detect", _raw(item | {"context": "x" * big}), JSON_TYPE),
        ("body over the byte limit", "/v1/detect", _raw(item | {"context": "x" * int(LIMITS["max_body_mb"] * 2**21)}),
         JSON_TYPE),
        ("valid + poisoned list", "/v1/detect", _raw([item, item | {"response": "\ud800"}]), JSON_TYPE),
        ("missing task", "/v1/detect", _raw({"context": "c", "response": "r"}), JSON_TYPE),
    ]


def start_server(model: str, port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "ragtruth_spans", "serve", "--model", model, "--host", HOST, "--port", str(port),
               "--max-items", str(LIMITS["max_items"]), "--max-chars", str(LIMITS["max_chars"]),
               "--max-body-mb", str(LIMITS["max_body_mb"]), "--max-batch", "16", "--max-wait-ms", "20",
               "--log-level", "error"]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def expected_spans(model: str) -> dict[str, list[list[int]]]:
    """What the detector gives each valid response alone (in this process): the reference answers."""
    from ragtruth_spans.detectors.loader import load_detector

    detector = load_detector(model)
    return {r: [[s.start, s.end] for s in detector.detect(context=CONTEXT, response=r, task="QA",
                                                          question="When did it open?").spans] for r in RESPONSES}


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    rng = random.Random(args.seed)
    hostile = hostile_bodies()
    plan = []  # (kind, payload) in a fixed, seeded order
    for i in range(args.requests):
        plan.append(("hostile", hostile[rng.randrange(len(hostile))]) if rng.random() < args.hostile_share
                    else ("valid", valid_item(i, rng)))
    reference = expected_spans(args.model)
    counts: Counter[str] = Counter()
    seen_ids: Counter[str] = Counter()
    hostile_status: dict[str, Counter[int]] = {}
    lost_by: Counter[str] = Counter()
    lock = threading.Lock()
    cursor = iter(range(len(plan)))
    stop_at = time.monotonic() + args.deadline

    def worker() -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while time.monotonic() < stop_at:
                with lock:
                    index = next(cursor, None)
                if index is None:
                    return
                kind, payload = plan[index]
                with lock:
                    counts["sent"] += 1
                try:
                    if kind == "valid":
                        response = client.post("/v1/detect", content=_raw(payload), headers=JSON_TYPE)
                    else:
                        _, path, body, headers = payload
                        response = client.post(path, content=body, headers=headers)
                except httpx.HTTPError:
                    with lock:
                        counts["lost"] += 1
                        lost_by[payload[0] if kind == "hostile" else "valid"] += 1
                    continue
                with lock:
                    counts["answered"] += 1
                    if kind == "valid":
                        _check_valid(payload, response, reference, counts, seen_ids)
                    else:
                        hostile_status.setdefault(payload[0], Counter())[response.status_code] += 1
                        counts["hostile"] += 1
                        counts["hostile_4xx" if 400 <= response.status_code < 500 else "hostile_mishandled"] += 1

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(args.deadline + 60)
    elapsed = time.perf_counter() - started
    counts["duplicated"] += sum(n - 1 for n in seen_ids.values() if n > 1)
    health = httpx.get(f"{url}/health", timeout=10)
    return {"requests_planned": len(plan), **{k: counts[k] for k in (
                "sent", "answered", "lost", "duplicated", "valid", "valid_ok", "wrongly_failed", "hostile",
                "hostile_4xx", "hostile_mishandled")},
            "lost_by_kind": dict(lost_by), "seconds": round(elapsed, 2), "server_alive": health.status_code == 200,
            "server_stats": health.json().get("stats"),
            "hostile_statuses": {name: dict(c) for name, c in sorted(hostile_status.items())}}


def fresh_context(index: int, chars: int = 98_000) -> str:
    """A context of about ``chars`` characters that no other request sends (so no cache helps)."""
    rng = random.Random(index)
    cities = ["Leeds", "Paris", "Oslo", "Rome", "Lima", "Kyoto", "Cairo", "Perth"]
    parts, size = [], 0
    while size < chars:
        sentence = (f"Hotel {index}-{len(parts)} in {rng.choice(cities)} opened in {rng.randint(1900, 2020)} and "
                    f"has {rng.randint(10, 900)} rooms. ")
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:chars]


def _percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def _latencies(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "median_s": _percentile(values, 0.5), "p95_s": _percentile(values, 0.95),
            "max_s": round(max(values), 3) if values else None}


def heavy_phase(args: argparse.Namespace) -> dict[str, Any]:
    """Heavy evidence requests beside small ones (module docstring) on a server of its own."""
    port = free_port()
    url = f"http://{HOST}:{port}"
    command = [sys.executable, "-m", "ragtruth_spans", "serve", "--model", args.model, "--host", HOST, "--port",
               str(port), "--max-chars", "100000", "--max-body-mb", "4", "--log-level", "error"]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    small = {"context": CONTEXT, "question": "When did it open?", "task": "QA", "response": RESPONSES[0]}
    select = {"context": CONTEXT, "task": "QA", "candidates": RESPONSES[:3]}
    try:
        wait_ready(url, server, 120)
        with httpx.Client(base_url=url, timeout=300) as client:
            baseline = []
            for _ in range(20):
                started = time.perf_counter()
                client.post("/v1/detect", json=small).raise_for_status()
                baseline.append(time.perf_counter() - started)
            heavy: list[dict[str, Any]] = []
            running = threading.Event()
            running.set()

            def send_heavy(index: int, items: int) -> None:
                context = fresh_context(1000 + index)
                body = [{"context": context, "response": "Hotel 1 opened in 1850 and has 5 rooms.", "task": "Summary",
                         "evidence": True} for _ in range(items)]
                started = time.perf_counter()
                status = client.post("/v1/detect", json=body if items > 1 else body[0]).status_code
                heavy.append({"items": items, "status": status, "seconds": round(time.perf_counter() - started, 2)})

            def send_small(path: str, body: dict[str, Any], into: list[float], statuses: Counter[int]) -> None:
                with httpx.Client(base_url=url, timeout=300) as own:
                    while running.is_set():
                        started = time.perf_counter()
                        statuses[own.post(path, json=body).status_code] += 1
                        into.append(time.perf_counter() - started)

            during, during_evidence, during_select = [], [], []
            small_status: Counter[int] = Counter()
            evidence_status: Counter[int] = Counter()
            select_status: Counter[int] = Counter()
            heavy_threads = [threading.Thread(target=send_heavy, args=(i, 1)) for i in range(args.heavy)]
            heavy_threads.append(threading.Thread(target=send_heavy, args=(args.heavy, 3)))
            small_threads = [threading.Thread(target=send_small, args=("/v1/detect", small, during, small_status)),
                             threading.Thread(target=send_small, args=("/v1/detect", small | {"evidence": True},
                                                                       during_evidence, evidence_status)),
                             threading.Thread(target=send_small, args=("/v1/select", select, during_select,
                                                                       select_status))]
            started = time.perf_counter()
            for thread in small_threads + heavy_threads:
                thread.start()
            for thread in heavy_threads:
                thread.join(600)
            heavy_seconds = time.perf_counter() - started
            running.clear()
            for thread in small_threads:
                thread.join(60)
    finally:
        stop_server(server)
    return {"heavy_requests": sorted(heavy, key=lambda h: (h["items"], h["seconds"])),
            "heavy_phase_seconds": round(heavy_seconds, 2), "small_detect_before": _latencies(baseline),
            "small_detect_during": _latencies(during) | {"statuses": dict(small_status)},
            "small_evidence_during": _latencies(during_evidence) | {"statuses": dict(evidence_status)},
            "small_select_during": _latencies(during_select) | {"statuses": dict(select_status)}}


def _health_waits(url: str, running: threading.Event) -> list[float]:
    """Seconds each ``/health`` took, polled back to back while ``running`` is set (bounded: 2,000 polls)."""
    waits: list[float] = []
    with httpx.Client(base_url=url, timeout=30) as client:
        while running.is_set() and len(waits) < 2000:
            started = time.perf_counter()
            client.get("/health")
            waits.append(time.perf_counter() - started)
    return waits


def _closed_after(sock: socket.socket, limit: float) -> tuple[bytes, float]:
    """What the server sent on ``sock`` until it closed it, and after how many seconds (``limit`` at most)."""
    started, data = time.monotonic(), b""
    sock.settimeout(limit)
    while time.monotonic() - started < limit:
        try:
            chunk = sock.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - started


def attack_many_keys(url: str, keys: int) -> dict[str, Any]:
    """A body of ``keys`` unknown keys (within the byte limit) while ``/health`` is polled."""
    body = json.dumps({"context": CONTEXT, "response": "r", "task": "QA"} | {f"k{i}": 1 for i in range(keys)})
    running = threading.Event()
    running.set()
    waits: list[float] = []
    poller = threading.Thread(target=lambda: waits.extend(_health_waits(url, running)))
    poller.start()
    started = time.perf_counter()
    answer = httpx.post(f"{url}/v1/detect", content=body.encode(), headers=JSON_TYPE, timeout=120)
    seconds = time.perf_counter() - started
    running.clear()
    poller.join(60)
    return {"keys": keys, "body_bytes": len(body), "status": answer.status_code, "answer_bytes": len(answer.content),
            "seconds": round(seconds, 2), "health": _latencies(waits)}


def attack_stalled(url: str, port: int, connections: int, timeout: float) -> dict[str, Any]:
    """``connections`` requests whose body stops after a few bytes, and as many whose headers stop halfway: each
    must be answered 408 and closed within the timeout (plus 3 s), while ``/health`` answers."""
    head = (b"POST /v1/detect HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 500\r\n"
            b"\r\n{\"context\": \"")
    socks = []
    for i in range(connections * 2):
        sock = socket.create_connection((HOST, port), timeout=10)
        sock.sendall(head if i < connections else b"POST /v1/detect HTTP/1.1\r\nhost: localhost\r\n")
        socks.append(sock)
    running = threading.Event()
    running.set()
    waits: list[float] = []
    poller = threading.Thread(target=lambda: waits.extend(_health_waits(url, running)))
    poller.start()
    deadline = time.monotonic() + timeout + 3  # one deadline for all: the server closes them in parallel
    outcomes = []
    for sock in socks:
        data, _ = _closed_after(sock, max(0.01, deadline - time.monotonic()))
        outcomes.append((data, time.monotonic() - (deadline - timeout - 3)))
    running.clear()
    poller.join(60)
    for sock in socks:
        sock.close()
    closed_408 = [data.startswith(b"HTTP/1.1 408") and seconds < timeout + 3 for data, seconds in outcomes]
    return {"stalled_bodies": connections, "stalled_headers": connections, "answered_408_and_closed":
            sum(closed_408), "slowest_close_s": round(max(s for _, s in outcomes), 2), "health": _latencies(waits)}


def attack_vanishing(url: str, port: int, connections: int) -> dict[str, Any]:
    """``connections`` clients that close mid-body: each counted in ``/health``, none an internal error."""
    before = httpx.get(f"{url}/health", timeout=10).json()["connections"]["client_disconnects"]
    for _ in range(connections):
        with socket.create_connection((HOST, port), timeout=10) as sock:
            sock.sendall(b"POST /v1/detect HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                         b"content-length: 500\r\n\r\n{\"context\": \"")
    counted, deadline = 0, time.monotonic() + 10
    while counted < connections and time.monotonic() < deadline:
        counted = httpx.get(f"{url}/health", timeout=10).json()["connections"]["client_disconnects"] - before
        time.sleep(0.1)
    return {"clients": connections, "counted": counted}


def attack_phase(args: argparse.Namespace) -> dict[str, Any]:
    """The three connection attacks on a server of its own (default limits, ``--attack-timeout`` for the header
    and body read times), its log read afterwards for internal errors."""
    import tempfile

    port = free_port()
    url = f"http://{HOST}:{port}"
    command = [sys.executable, "-m", "ragtruth_spans", "serve", "--model", args.model, "--host", HOST, "--port",
               str(port), "--header-timeout", str(args.attack_timeout), "--body-read-timeout",
               str(args.attack_timeout), "--log-level", "info"]
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_ready(url, server, 120)
            result = {"many_keys": attack_many_keys(url, args.attack_keys),
                      "stalled": attack_stalled(url, port, args.attack_connections, args.attack_timeout),
                      "vanishing": attack_vanishing(url, port, args.attack_connections),
                      "server_alive": httpx.get(f"{url}/health", timeout=10).status_code == 200}
        finally:
            stop_server(server)
        log.seek(0)
        lines = log.read().decode("utf-8", "replace").splitlines()
    result["error_log_lines"] = sum(" ERROR " in line or "Traceback" in line for line in lines)
    return result


def attacks_failed(phase: dict[str, Any], args: argparse.Namespace) -> bool:
    """Whether an attack got through: a large or slow 422, ``/health`` slower than the limit, a stalled connection
    left open, a vanished client not counted, an error in the server's log."""
    keys, stalled = phase["many_keys"], phase["stalled"]
    return (keys["status"] != 422 or keys["answer_bytes"] > 10_000
            or max(keys["health"]["max_s"] or 0, stalled["health"]["max_s"] or 0) > args.small_latency_limit
            or stalled["answered_408_and_closed"] != 2 * args.attack_connections
            or phase["vanishing"]["counted"] != args.attack_connections or phase["error_log_lines"] > 0
            or not phase["server_alive"])


def _check_valid(item: dict[str, Any], response: httpx.Response, reference: dict[str, list[list[int]]],
                 counts: Counter[str], seen_ids: Counter[str]) -> None:
    counts["valid"] += 1
    if response.status_code != 200:
        counts["wrongly_failed"] += 1
        return
    answer = response.json()
    seen_ids[str(answer.get("id"))] += 1
    if answer.get("id") != item["id"]:
        counts["duplicated"] += 1  # another request's answer
    elif [[s["start"], s["end"]] for s in answer["spans"]] != reference[item["response"]]:
        counts["wrongly_failed"] += 1
    else:
        counts["valid_ok"] += 1


def _write_json(path: str, result: dict[str, Any]) -> None:
    """``result`` written to ``path`` atomically (a file beside it, then renamed)."""
    import os

    temporary = f"{path}.tmp"
    with open(temporary, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(result, indent=2) + "\n")
    os.replace(temporary, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="numbers", help="A cheap named detector (numbers, flag-all, flag-none).")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--hostile-share", type=float, default=0.35)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--deadline", type=float, default=180.0, help="Seconds after which sending stops.")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None, help="Also write the result here.")
    parser.add_argument("--heavy", type=int, default=3, help="Heavy evidence requests beside small ones (0: skip).")
    parser.add_argument("--small-latency-limit", type=float, default=2.0,
                        help="Seconds a small request (or /health) may take while heavy ones or attacks run.")
    parser.add_argument("--attack-connections", type=int, default=60,
                        help="Connections of each connection attack: stalled bodies, stalled headers, clients that "
                        "vanish mid-body (0: skip the attacks).")
    parser.add_argument("--attack-keys", type=int, default=300_000, help="Unknown keys of the many-keys body.")
    parser.add_argument("--attack-timeout", type=float, default=2.0,
                        help="--header-timeout and --body-read-timeout of the attacked server.")
    fault_inject_gate.add_arguments(parser)
    args = parser.parse_args()
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    if args.gate:
        gate_result = fault_inject_gate.gate_mode(args)
        if args.json:
            _write_json(args.json, gate_result)
        sys.exit(1 if gate_result["failed"] else 0)
    port = free_port()
    url = f"http://{HOST}:{port}"
    server = start_server(args.model, port)
    try:
        wait_ready(url, server, 120)
        result = run(args, url)
    finally:
        stop_server(server)
    result["server_exit_status"] = server.returncode
    if args.heavy:
        result["heavy_evidence"] = heavy_phase(args)
    if args.attack_connections:
        result["connection_attacks"] = attack_phase(args)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        _write_json(args.json, result)
    bad = result["lost"] or result["duplicated"] or result["wrongly_failed"] or result["hostile_mishandled"]
    if args.heavy:
        phase = result["heavy_evidence"]
        small_kinds = ("small_detect_during", "small_evidence_during", "small_select_during")
        slowest = max(phase[kind]["max_s"] or 0 for kind in small_kinds)
        over_budget = [h for h in phase["heavy_requests"] if h["items"] > 1 and h["status"] != 413]
        refused_small = {status for kind in small_kinds for status in phase[kind]["statuses"]} - {200}
        bad = bad or slowest > args.small_latency_limit or over_budget or refused_small
    if args.attack_connections:
        bad = bad or attacks_failed(result["connection_attacks"], args)
    sys.exit(1 if bad or not result["server_alive"] else 0)


if __name__ == "__main__":
    main()
