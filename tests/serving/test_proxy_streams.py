"""The gate's streams under load: a long stream in tiny chunks is fast and never holds up ``/health``; a stream is
bounded in size and duration; a client that leaves stops the gate reading the upstream."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from fake_upstream import CONTEXT, fake_upstream
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings


def gate_app(upstream_url: str, **settings) -> object:
    return create_app(load_detector("numbers"), settings=ServeSettings(upstream=f"{upstream_url}/v1", **settings))


@pytest.fixture(scope="module")
def upstream():
    app, state = fake_upstream()
    with ServerThread(app) as server:
        yield server, state


def _events(response: httpx.Response) -> list[dict]:
    text = response.read().decode()
    return [json.loads(e.removeprefix("data: ")) for e in text.split("\n\n") if e and e != "data: [DONE]"]


HEALTH_BOUND = 0.25
"""Seconds ``/health`` may wait here. The 0.1 s target is measured by ``scripts/fault_inject_serve.py --gate`` on
quiet cores; this bound still catches the stalls these tests guard against (0.4-6 s before their fixes) without
timing a shared CI machine."""


def _health_waits(url: str, running: threading.Event, into: list[float], polling: threading.Event) -> None:
    """Poll ``/health`` until ``running`` is cleared, each wait into ``into``; ``polling`` is set after the first
    poll (so that the streams start only once the poller is under way: its client takes ~0.1 s to make)."""
    with httpx.Client(base_url=url, timeout=30) as client:
        while running.is_set():
            started = time.perf_counter()
            client.get("/health").raise_for_status()
            into.append(time.perf_counter() - started)
            polling.set()
            time.sleep(0.01)


def _streams_beside_health(url: str, body: dict, count: int = 1) -> tuple[list[list[dict]], float, list[float]]:
    """``count`` streams of ``body`` at once through the gate at ``url`` while ``/health`` is polled: each stream's
    events, the seconds they took in all, and each ``/health`` wait."""
    from concurrent.futures import ThreadPoolExecutor

    httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)  # first use: imports, the splitter's process

    def one(_: int) -> list[dict]:
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body, timeout=120) as response:
            return _events(response)

    running, polling, waits = threading.Event(), threading.Event(), []
    running.set()
    poller = threading.Thread(target=_health_waits, args=(url, running, waits, polling))
    poller.start()
    try:
        assert polling.wait(30), "/health did not answer"
        waits.clear()  # the first poll, before any stream, is not timed beside one
        started = time.perf_counter()
        with ThreadPoolExecutor(count) as pool:
            streams = list(pool.map(one, range(count)))
        elapsed = time.perf_counter() - started
    finally:
        running.clear()
        poller.join(30)
    assert waits, "/health was never polled while the streams ran"
    assert max(waits) < HEALTH_BOUND, f"/health took up to {max(waits):.3f} s ({len(waits)} polls)"
    return streams, elapsed, waits


def test_a_long_answer_in_tiny_chunks_is_fast_and_health_answers_meanwhile(upstream) -> None:
    up, _ = upstream
    with ServerThread(gate_app(up.url)) as gate:
        body = {"model": "long-5000-5", "stream": True, "messages": [], "context": CONTEXT}
        [chunks], elapsed, _ = _streams_beside_health(gate.url, body)
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if "hallucinations" not in c)
    assert len(text) == 5000 and chunks[-1]["hallucinations"]["object"] == "hallucinations"
    assert elapsed < 5.0, f"{elapsed:.2f} s for 1,000 chunks"


def test_events_of_many_short_sentences_never_hold_up_health(upstream) -> None:
    """8 KB events of ~745 sentences each: their split (~0.3 s an event on the event loop) runs off the loop, so
    ``/health`` answers meanwhile; the sentence events still cover the answer."""
    up, _ = upstream
    with ServerThread(gate_app(up.url)) as gate:
        body = {"model": "short-40960-8192", "stream": True, "messages": [], "context": CONTEXT}
        [chunks], _, _ = _streams_beside_health(gate.url, body)
    deltas = [c["hallucinations"] for c in chunks
              if c.get("hallucinations", {}).get("object") == "hallucinations.delta"]
    assert deltas and sum(len(d["sentences"]) for d in deltas) > 1000
    assert chunks[-1]["hallucinations"]["status"] == "checked"


def test_several_streams_of_short_sentences_at_once_never_hold_up_health(upstream) -> None:
    """Four 8 KB-event streams of short sentences at once: their long splits run in the splitter's worker process
    (a thread would hold the interpreter lock against the event loop), so ``/health`` answers meanwhile; every
    stream is still checked."""
    up, _ = upstream
    with ServerThread(gate_app(up.url)) as gate:
        body = {"model": "short-40960-8192", "stream": True, "messages": [], "context": CONTEXT}
        streams, _, _ = _streams_beside_health(gate.url, body, count=4)
    assert all(chunks[-1]["hallucinations"]["status"] == "checked" for chunks in streams)
    assert all(any(c.get("hallucinations", {}).get("object") == "hallucinations.delta" for c in chunks)
               for chunks in streams)


def test_a_stream_is_bounded_in_size_and_in_duration(upstream) -> None:
    up, _ = upstream
    with ServerThread(gate_app(up.url, max_body_bytes=20_000, upstream_stream_timeout=1.0)) as gate:
        body = {"model": "long-100000-50", "stream": True, "messages": [], "context": CONTEXT}
        with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body, timeout=60) as response:
            chunks = _events(response)
        assert "over 20000 bytes" in chunks[-1]["error"]["message"]
        started = time.perf_counter()
        with httpx.stream("POST", f"{gate.url}/v1/chat/completions", timeout=60,
                          json=body | {"model": "slow"}) as response:
            chunks = _events(response)
        assert time.perf_counter() - started < 4.0
        error = chunks[-1]["error"]
        assert error["type"] == "upstream_timeout" and "--upstream-stream-timeout" in error["message"]


@pytest.mark.parametrize("settings", [{}, {"block_above": 0.5, "block_mode": "replace"}])
def test_a_client_that_leaves_stops_the_upstream_stream(upstream, settings) -> None:
    up, state = upstream
    with ServerThread(gate_app(up.url, **settings)) as gate:
        body = {"model": "slow", "stream": True, "messages": [], "context": CONTEXT}
        with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body, timeout=60) as response:
            assert response.status_code == 200
            time.sleep(0.3)
        time.sleep(0.5)  # the gate notices and closes the upstream stream
        left_at = state.get("pieces", 0)
        time.sleep(0.5)
        assert state.get("pieces", 0) - left_at <= 1
