"""The gate mode of ``fault_inject_serve.py`` (``--gate``): ``serve --upstream`` against misbehaving upstreams.

Three servers run as subprocesses on 127.0.0.1, each with ``--upstream`` pointing at one fake upstream in this
process (``lying_upstream.py``: raw HTTP, so it can lie about its framing):

- **framing and slow** (``--upstream-timeout 2 --upstream-stream-timeout 4 --max-body-mb 0.25``, no policy): a
  ``Content-Length`` shorter and longer than the body, a reset mid-body, malformed events, events ending in mixed
  LF/CRLF/CR, JSON answered to a stream request, a gzip'd body, a redirect (plain and streamed where both exist),
  then a good request on the same pool; a stream that trickles past the stream timeout, an upstream that never
  answers (504), a huge answer (502, or the stream's ``error`` event), a 5,000-character answer in 5-character
  chunks — all at once, while ``/health`` is polled back to back (each poll within ``--health-limit`` seconds);
- **replace** and **annotate** (``--block-above 0.5``, ``--max-chars 400``, a batch and an evidence pool of one, a
  queue of two items): answers that cannot be checked (content parts, tool calls, a refusal, over ``--max-chars``)
  withheld;
  ``n=2`` with a hallucinated second choice withheld or flagged, plain and streamed; ``--gate-concurrent``
  requests of hallucinated answers at once: none delivered unblocked (replace), all warned (annotate).

Each check is one line, ``PASS`` or ``FAIL`` with its figures; a verdict is honest when a ``checked`` answer's
spans are the detector's on the text the client got (computed here, in-process), or the answer says ``unchecked``;
a stream must end with ``data: [DONE]`` or an ``error`` event, every verdict before it. The servers' logs must hold
no traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import logging
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from bench_serve import free_port, stop_server, wait_ready  # scripts/ is on sys.path when run as a script
from lying_upstream import ANSWER, CONTEXT, GOOD, HOST, LyingUpstream

logger = logging.getLogger(__name__)

POLICY = ["--block-above", "0.5", "--max-chars", "400", "--max-items", "2", "--max-queue", "2", "--max-batch", "1",
          "--evidence-workers", "1", "--evidence-queue", "1"]
SERVERS = {"framing": ["--upstream-timeout", "2", "--upstream-stream-timeout", "4", "--max-body-mb", "0.25"],
           "replace": [*POLICY, "--block-mode", "replace"], "annotate": [*POLICY, "--block-mode", "annotate"]}
TIMEOUT, STREAM_TIMEOUT = 2.0, 4.0


@dataclasses.dataclass
class Reply:
    """What the client got: status, seconds, header, each choice's text (tool calls, refusals and content parts
    included) and verdict (``found``), a stream's end (``done``, ``error``), whether every verdict came first and
    how many events were not JSON."""

    status: int
    seconds: float
    check: str
    stream: bool
    texts: dict[int, str] = dataclasses.field(default_factory=dict)
    found: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)
    error: dict[str, Any] | None = None
    done: bool = False
    verdicts_first: bool = True
    not_json: int = 0
    raw: bytes = b""


def _plain(reply: Reply, answer: Any) -> None:
    if not isinstance(answer, dict):
        return
    reply.error = answer.get("error") if isinstance(answer.get("error"), dict) else None
    for choice in answer.get("choices") or []:
        message, index = choice.get("message") or {}, choice.get("index", 0)
        content = message.get("content")
        reply.texts[index] = (content if isinstance(content, str) else json.dumps(content or "")) + "".join(
            json.dumps(message[k]) for k in ("tool_calls", "refusal") if message.get(k))
        found = choice.get("hallucinations", answer.get("hallucinations") if index == 0 else None)
        if found is not None:
            reply.found[index] = found


def _streamed(reply: Reply, text: str) -> None:
    for event in text.split("\n\n"):
        data = event.removeprefix("data: ")
        if not event.startswith("data: "):
            continue
        if data == "[DONE]":
            reply.done = True
            continue
        try:
            chunk = json.loads(data)
        except ValueError:
            reply.not_json += 1  # an upstream's malformed event, passed on as it came
            continue
        if "error" in chunk and "choices" not in chunk:
            reply.error = chunk["error"]
            continue
        reply.verdicts_first = reply.verdicts_first and not (reply.done or reply.error)
        for choice in chunk["choices"]:
            delta, index = choice["delta"], choice["index"]
            content = delta.get("content")
            extra = "".join(json.dumps(v) for k, v in delta.items() if k in ("tool_calls", "refusal") or (
                k == "content" and v is not None and not isinstance(v, str)))
            reply.texts[index] = reply.texts.get(index, "") + (content if isinstance(content, str) else "") + extra
        found = chunk.get("hallucinations")
        if isinstance(found, dict) and found.get("object") == "hallucinations":
            reply.found[found["index"]] = found


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every client of this process: httpx builds one per client otherwise (~20-100 ms of the
    interpreter lock each, loading the CA bundle), which, 18 clients at once, stalled this process's ``/health``
    poller for up to 0.21 s and was counted against the server."""
    return ssl.create_default_context()


def ask(url: str, model: str, stream: bool, n: int | None = None) -> Reply:
    """One chat completion through the gate (a loopback Host, JSON, no Origin), parsed."""
    body = {"model": model, "messages": [{"role": "user", "content": "Tell me about the hotel."}],
            "context": CONTEXT, "stream": stream} | ({"n": n} if n else {})
    started = time.perf_counter()
    response = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60, verify=_tls())
    reply = Reply(response.status_code, round(time.perf_counter() - started, 2),
                  response.headers.get("x-hallucination-check", ""), stream, raw=response.content)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        _streamed(reply, response.text)
    else:
        reply.stream = False
        with contextlib.suppress(ValueError):  # a body that is not JSON: judged by its status and header
            _plain(reply, response.json())
    return reply


class Judge:
    """The checks' bookkeeping: the detector's spans of a text (the reference) and one line per check."""

    def __init__(self, model: str) -> None:
        from ragtruth_spans.detectors.loader import load_detector

        self.detector = load_detector(model)
        self.lines: list[dict[str, Any]] = []

    def spans(self, text: str) -> list[str]:
        """The texts of the spans the detector finds in ``text`` on its own (the gate's task without a question)."""
        found = self.detector.detect(context=CONTEXT, response=text, task="Summary")
        return [text[s.start:s.end] for s in found.spans]

    def honest(self, reply: Reply, index: int = 0) -> bool:
        """An error in OpenAI's shape, an answer passed through as ``unchecked``, or a verdict that matches what
        was delivered (``checked``: the detector's spans of the delivered text; else ``unchecked``); a stream
        ends with ``[DONE]`` or an ``error`` event, its verdicts first."""
        if reply.status != 200:
            return reply.error is not None and bool(reply.error.get("message"))
        if reply.stream and not ((reply.done or reply.error) and reply.verdicts_first):
            return False
        found = reply.found.get(index)
        if found is None:
            return reply.check.startswith("unchecked")
        if found.get("status") == "checked":
            return [s["text"] for s in found["spans"]] == self.spans(reply.texts.get(index, ""))
        return found.get("status") == "unchecked"

    def record(self, name: str, ok: bool, figures: str) -> None:
        print(f"{'PASS' if ok else 'FAIL'} {name}: {figures}", flush=True)
        self.lines.append({"check": name, "pass": bool(ok), "figures": figures})


def figures(reply: Reply) -> str:
    """A reply in a few words: status, header, verdict, end, seconds."""
    found = reply.found.get(0, {})
    end = "[DONE]" if reply.done else f"error {reply.error.get('type')}" if reply.error else "no end"
    verdict = f"{found.get('status')}" + (f" score {found['score']}" if found.get("score") is not None else "")
    error = f" ({reply.error.get('message', '')[:60]})" if reply.error else ""
    return (f"{reply.status}{error}, {'streamed' if reply.stream else 'plain'}, header '{reply.check[:40]}', "
            f"verdict {verdict if found else 'none'}, {end if reply.stream else 'json'}, {reply.seconds} s")


def _checked_answer(judge: Judge, reply: Reply) -> bool:
    found = reply.found.get(0, {})
    return reply.status == 200 and found.get("status") == "checked" and reply.texts.get(0) == ANSWER and \
        judge.honest(reply)


FRAMING: list[tuple[str, str, bool, Callable[[Judge, Reply], bool]]] = [
    ("Content-Length shorter than the body", "cl-short", False, Judge.honest),
    ("Content-Length shorter than the body", "cl-short", True, Judge.honest),
    ("Content-Length longer than the body", "cl-long", False, lambda j, r: r.status == 502 and j.honest(r)),
    ("Content-Length longer than the body", "cl-long", True,
     lambda j, r: (r.error is not None or r.texts.get(0) == ANSWER) and j.honest(r)),
    ("reset mid-body", "reset", False, lambda j, r: r.status == 502 and j.honest(r)),
    ("reset mid-body", "reset", True, lambda j, r: r.error is not None and j.honest(r)),
    ("malformed SSE", "malformed", True,
     lambda j, r: j.honest(r) and r.found.get(0, {}).get("status") == "unchecked"),
    ("events ending in mixed LF/CRLF/CR", "line-ends", True,
     lambda j, r: _checked_answer(j, r) and r.done and b"\r" not in r.raw),
    ("JSON answered to a stream request", "json", True,
     lambda j, r: _checked_answer(j, r) and not r.stream and b"data:" not in r.raw),
    ("gzip'd body", "gzip", False, _checked_answer),
    ("gzip'd body", "gzip", True, _checked_answer),
    ("a good answer after the lies (same pool)", "ok", False, _checked_answer),
    ("a good answer after the lies (same pool)", "ok", True, _checked_answer),
]


def framing_phase(judge: Judge, url: str, upstream: LyingUpstream, repeats: int) -> None:
    """The lying-framing checks, each ``repeats`` times, and the redirect (never followed)."""
    for name, model, stream, passes in FRAMING:
        replies = [ask(url, model, stream) for _ in range(repeats)]
        bad = [r for r in replies if not passes(judge, r)]
        judge.record(f"{name}, {'streamed' if stream else 'plain'}", not bad,
                     f"{len(replies) - len(bad)}/{len(replies)} as expected; {figures((bad or replies)[0])}")
    for stream in (False, True):
        replies = [ask(url, "redirect", stream) for _ in range(repeats)]
        followed = upstream.hits["/v1/elsewhere"]
        ok = followed == 0 and all(r.status != 200 and r.check.startswith("unchecked") for r in replies)
        judge.record(f"redirect, {'streamed' if stream else 'plain'}", ok,
                     f"statuses {sorted({r.status for r in replies})}, header '{replies[0].check}', "
                     f"redirect target reached {followed} times")


def _health_waits(url: str, running: threading.Event) -> list[float]:
    """Seconds each ``/health`` took, polled back to back while ``running`` is set."""
    waits: list[float] = []
    with httpx.Client(base_url=url, timeout=30, verify=_tls()) as client:
        while running.is_set():
            started = time.perf_counter()
            client.get("/health")
            waits.append(time.perf_counter() - started)
    return waits


SLOW: list[tuple[str, str, bool, Callable[[Judge, Reply], bool]]] = [
    ("a stream that trickles past --upstream-stream-timeout", "trickle", True,
     lambda j, r: (r.error or {}).get("type") == "upstream_timeout" and r.seconds <= STREAM_TIMEOUT + 2
     and j.honest(r)),
    ("an upstream that never answers", "never", False, lambda j, r: r.status == 504 and r.seconds <= TIMEOUT + 2),
    ("an upstream that never answers", "never", True, lambda j, r: r.status == 504 and r.seconds <= TIMEOUT + 2),
    ("a huge answer", "huge", False, lambda j, r: r.status == 502 and "over" in (r.error or {}).get("message", "")),
    ("a huge answer", "huge", True, lambda j, r: "over" in (r.error or {}).get("message", "") and j.honest(r)),
    ("5,000 characters in 5-character chunks", "tiny-chunks", True,
     lambda j, r: r.found.get(0, {}).get("status") == "checked" and len(r.texts.get(0, "")) == 5000
     and j.honest(r)),
]


def slow_phase(judge: Judge, url: str, repeats: int, health_limit: float) -> None:
    """The slow upstreams, all at once (``repeats`` of each), while ``/health`` is polled."""
    running = threading.Event()
    running.set()
    with ThreadPoolExecutor(1 + len(SLOW) * repeats) as pool:
        poller = pool.submit(_health_waits, url, running)
        time.sleep(0.2)
        sent = [(case, pool.submit(ask, url, case[1], case[2])) for case in SLOW for _ in range(repeats)]
        results = [(case, future.result()) for case, future in sent]
        running.clear()
        waits = sorted(poller.result())
    for name, model, stream, passes in SLOW:
        replies = [r for case, r in results if case[1] == model and case[2] == stream]
        bad = [r for r in replies if not passes(judge, r)]
        judge.record(f"{name}, {'streamed' if stream else 'plain'}", not bad,
                     f"{len(replies) - len(bad)}/{len(replies)} as expected; {figures((bad or replies)[0])}")
    worst = waits[-1] if waits else float("inf")
    judge.record("/health while the slow upstreams run", worst <= health_limit,
                 f"{len(waits)} polls, median {waits[len(waits) // 2] if waits else 0:.3f} s, max {worst:.3f} s "
                 f"(limit {health_limit:g} s)")


def _withheld(reply: Reply, index: int = 0) -> bool:
    found = reply.found.get(index, {})
    return reply.status == 200 and found.get("blocked") is True and "withheld" in reply.texts.get(index, "") \
        and "1998" not in reply.texts.get(index, "")


def _warned(reply: Reply, index: int = 0) -> bool:
    found, text = reply.found.get(index, {}), reply.texts.get(index, "")
    return reply.status == 200 and found.get("blocked") is True and text.startswith(ANSWER) \
        and "[hallucination gate:" in text


def policy_phase(judge: Judge, replace: str, annotate: str, repeats: int) -> None:
    """Unchecked answers withheld (replace); ``n=2`` with a hallucinated choice 1 withheld or flagged."""
    for model, why in (("parts", "content as a list of parts"), ("tool_calls", "tool_calls"),
                       ("refusal", "a refusal"), ("too-long", "over --max-chars")):
        for stream in (False, True):
            replies = [ask(replace, model, stream) for _ in range(repeats)]
            ok = [r for r in replies if _withheld(r) and r.found[0].get("status") == "unchecked"]
            judge.record(f"replace mode, an answer that cannot be checked ({why}), "
                         f"{'streamed' if stream else 'plain'}", len(ok) == len(replies),
                         f"{len(ok)}/{len(replies)} withheld; {figures(replies[0])}")
    for mode, url, judged in (("replace", replace, _withheld), ("annotate", annotate, _warned)):
        for stream in (False, True):
            replies = [ask(url, "n2", stream, n=2) for _ in range(repeats)]
            ok = [r for r in replies if judged(r, 1) and r.texts.get(0) == GOOD
                  and r.found.get(0, {}).get("blocked") is False]
            judge.record(f"{mode} mode, n=2 with a hallucinated second choice, {'streamed' if stream else 'plain'}",
                         len(ok) == len(replies), f"{len(ok)}/{len(replies)} with choice 1 "
                         f"{'withheld' if mode == 'replace' else 'flagged'} and choice 0 delivered; "
                         f"{figures(replies[0])}")


def load_phase(judge: Judge, replace: str, annotate: str, concurrent: int) -> None:
    """``concurrent`` hallucinated answers at once (half streamed) on a queue and evidence pool of one."""
    for mode, url, judged in (("replace", replace, _withheld), ("annotate", annotate, _warned)):
        started = time.perf_counter()
        with ThreadPoolExecutor(concurrent) as pool:
            replies = list(pool.map(lambda i, u=url: ask(u, "ok", i % 2 == 1), range(concurrent)))
        seconds = time.perf_counter() - started
        good = sum(judged(r) for r in replies)
        checked = sum(r.found.get(0, {}).get("status") == "checked" for r in replies)
        judge.record(f"{mode} mode, {concurrent} concurrent hallucinated answers", good == concurrent,
                     f"{good}/{concurrent} {'withheld' if mode == 'replace' else 'warned'}, "
                     f"{concurrent - good} delivered unblocked, {checked} checked (the rest unchecked), "
                     f"slowest {max(r.seconds for r in replies):.2f} s, {seconds:.2f} s in all")


def start_gates(model: str, upstream: str, logs: dict[str, Any]) -> dict[str, tuple[subprocess.Popen, str]]:
    """The three servers (:data:`SERVERS`), started together, each logging to its file in ``logs``."""
    gates = {}
    for name, flags in SERVERS.items():
        port = free_port()
        command = [sys.executable, "-m", "ragtruth_spans", "serve", "--model", model, "--host", HOST, "--port",
                   str(port), "--upstream", upstream, "--log-level", "warning", *flags]
        gates[name] = (subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=logs[name]),
                       f"http://{HOST}:{port}")
    for name, (process, url) in gates.items():
        try:
            wait_ready(url, process, 120)
        except SystemExit:
            logs[name].seek(0)
            print(logs[name].read().decode("utf-8", "replace")[-2000:], file=sys.stderr)
            for other, _ in gates.values():
                stop_server(other)
            raise
    return gates


def _tracebacks(logs: dict[str, Any]) -> dict[str, int]:
    counts = {}
    for name, log in logs.items():
        log.seek(0)
        counts[name] = log.read().decode("utf-8", "replace").count("Traceback")
    return counts


def gate_mode(args: argparse.Namespace) -> dict[str, Any]:
    """Every check of the module docstring; the result: its lines, seconds, whether all passed."""
    judge = Judge(args.model)
    started = time.perf_counter()
    with LyingUpstream() as upstream, tempfile.TemporaryFile() as f1, tempfile.TemporaryFile() as f2, \
            tempfile.TemporaryFile() as f3:
        logs = dict(zip(SERVERS, (f1, f2, f3)))
        gates = {}
        try:
            gates = start_gates(args.model, upstream.url, logs)
            urls = {name: url for name, (_, url) in gates.items()}
            framing_phase(judge, urls["framing"], upstream, args.gate_repeats)
            slow_phase(judge, urls["framing"], args.gate_repeats, args.health_limit)
            policy_phase(judge, urls["replace"], urls["annotate"], args.gate_repeats)
            load_phase(judge, urls["replace"], urls["annotate"], args.gate_concurrent)
            alive = {name: httpx.get(f"{url}/health", timeout=10).status_code == 200 for name, url in urls.items()}
        finally:
            for process, _ in gates.values():
                stop_server(process)
        tracebacks = _tracebacks(logs)
    judge.record("servers alive, no traceback in their logs", all(alive.values()) and not any(tracebacks.values()),
                 f"alive {alive}, tracebacks {tracebacks}")
    passed = sum(line["pass"] for line in judge.lines)
    print(f"gate mode: {passed}/{len(judge.lines)} checks passed in {time.perf_counter() - started:.1f} s",
          flush=True)
    return {"checks": judge.lines, "passed": passed, "failed": len(judge.lines) - passed,
            "seconds": round(time.perf_counter() - started, 1), "repeats": args.gate_repeats,
            "concurrent": args.gate_concurrent, "health_limit_s": args.health_limit}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gate mode's options, on ``fault_inject_serve.py``'s parser."""
    parser.add_argument("--gate", action="store_true", help="Run the gate mode only (serve --upstream against "
                        "misbehaving fake upstreams; see scripts/fault_inject_gate.py).")
    parser.add_argument("--gate-repeats", type=int, default=3, help="Gate mode: requests of each behaviour.")
    parser.add_argument("--gate-concurrent", type=int, default=30,
                        help="Gate mode: hallucinated answers sent at once to each policy server.")
    parser.add_argument("--health-limit", type=float, default=0.1,
                        help="Gate mode: seconds /health may take while the slow upstreams run.")
