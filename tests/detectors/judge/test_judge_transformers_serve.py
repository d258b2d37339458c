"""The judge against ``transformers serve`` — the OpenAI-compatible server that ships with transformers — running
the tiny random Llama (built in code) on CPU on 127.0.0.1. A real model's answers (random text here) go through
the whole pipeline in both modes: nothing crashes, each answer is either read or counted as malformed, the usage
comes from the server, and a re-run is answered by the cache.

Slow (about 20 s: building the tiny model and starting a server that imports torch); it is the one test against
a real inference server, so it stays. Skipped when the server's extra dependencies (openai, fastapi, uvicorn)
are missing; the dev extra installs them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from ragtruth_spans.detectors.loader import load_detector

ITEMS = [
    {"task": "Summary", "context": "The Grand Hotel opened in 1999 on the harbour. It has 300 rooms.",
     "response": "The Grand Hotel opened in 1998 on the harbour. It has 300 rooms."},
    {"task": "QA", "question": "How many rooms?", "context": "Passage 1: The hotel has 300 rooms.",
     "response": "It has 300 rooms."},
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def transformers_server(tmp_path_factory):
    for module in ("openai", "fastapi", "uvicorn"):
        pytest.importorskip(module)
    import httpx

    from ragtruth_spans.models.tiny import build_tiny_llama

    root = tmp_path_factory.mktemp("transformers-serve")
    model_dir = build_tiny_llama(root / "tiny-llama")
    port = _free_port()
    log = (root / "serve.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "transformers.cli.transformers", "serve", str(model_dir), "--host", "127.0.0.1",
         "--port", str(port), "--device", "cpu"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, HF_HUB_OFFLINE="1"))
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=2.0, trust_env=False).raise_for_status()
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not start: {(root / 'serve.log').read_text()[-2000:]}")
                time.sleep(0.2)
        yield base_url, str(model_dir)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)
        log.close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["span", "claims"])
def test_judge_against_transformers_serve(transformers_server, tmp_path, mode):
    base_url, model = transformers_server
    options = {"base_url": base_url, "model": model, "mode": mode, "max_tokens": 24, "timeout": 60.0,
               "cache_dir": str(tmp_path / "cache"), "concurrency": 2}
    results = load_detector("llm-judge", **options).detect_batch(ITEMS)

    for item, detection in zip(ITEMS, results):
        d = detection.diagnostics
        assert d["requests"] >= 1 and d["failed_requests"] == 0 and d["usage_missing"] == 0
        assert d["prompt_tokens"] > 0 and 0 < d["completion_tokens"] <= 24 * d["requests"]
        assert detection.ok == (d["malformed"] == 0)  # read, or counted as malformed: never a crash
        assert detection.ok or (detection.spans == [] and detection.score is None)
        assert all(0 <= s.start < s.end <= len(item["response"]) for s in detection.spans)

    again = load_detector("llm-judge", **options).detect_batch(ITEMS)
    assert [d.diagnostics["cache_hits"] for d in again] == [d.diagnostics["requests"] for d in results]
    assert all(d.diagnostics["requests"] == 0 for d in again)
    assert [(d.spans, d.score, d.error) for d in again] == [(d.spans, d.score, d.error) for d in results]
