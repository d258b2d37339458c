"""The gate's bodies under the limits of every route: parsed off the event loop (in another process when large) with
the structural bounds (keys per object, values per body), so a body of many keys gets a quick small 422 while
``/health`` keeps answering, and ``--max-body-mb`` refuses a body over it (413) before it is read further; neither
reaches the upstream."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from fastapi import FastAPI, Request
from server_thread import EchoDetector, ServerThread

from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.body import CHAT_MAX_KEYS, CHAT_MAX_VALUES
from ragtruth_spans.serving.settings import ServeSettings

CHAT = {"model": "m", "messages": [{"role": "user", "content": "When did it open?"}],
        "context": "The Harbour Hotel opened in 1999."}
JSON_TYPE = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def gate():
    upstream, seen = FastAPI(), []

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request) -> dict:
        seen.append(await request.body())
        return {"id": "c", "object": "chat.completion", "created": 1, "model": "m", "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "In 1999."}}]}

    with ServerThread(upstream) as up:
        settings = ServeSettings(upstream=f"{up.url}/v1", max_body_bytes=8 * 1024 * 1024)
        with ServerThread(create_app(EchoDetector(), settings=settings)) as server:
            yield server, seen


def _health_waits_during(url: str, send) -> tuple[list[float], httpx.Response]:
    """``/health``'s answer times while ``send()`` runs in another thread, and what ``send`` got."""
    got: dict = {}
    worker = threading.Thread(target=lambda: got.update(answer=send()))
    waits: list[float] = []
    with httpx.Client(timeout=10) as client:
        client.get(f"{url}/health")
        worker.start()
        while worker.is_alive():
            started = time.perf_counter()
            assert client.get(f"{url}/health").status_code == 200
            waits.append(time.perf_counter() - started)
            time.sleep(0.005)
    worker.join()
    return waits, got["answer"]


def test_a_body_of_many_keys_is_a_small_422_while_health_answers(gate) -> None:
    server, seen = gate
    before = len(seen)
    body = json.dumps(CHAT | {f"k{i}": 1 for i in range(250_000)}).encode()  # 3.4 MB; the audit's was 14 MiB
    waits, answer = _health_waits_during(server.url, lambda: httpx.post(
        f"{server.url}/v1/chat/completions", content=body, headers=JSON_TYPE, timeout=60))
    assert answer.status_code == 422 and len(answer.content) < 500, answer.text[:300]
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error" and "250003 keys" in error["message"], error
    assert len(seen) == before  # never forwarded
    assert waits and max(waits) <= 0.1, sorted(waits)[-5:]


def test_the_structural_bounds_of_a_small_body_too(gate) -> None:
    server, seen = gate
    before = len(seen)
    wide = CHAT | {"logit_bias": {str(i): 1 for i in range(CHAT_MAX_KEYS + 1)}}
    long = CHAT | {"messages": [{"role": "user", "content": "x"}] * (CHAT_MAX_VALUES // 3 + 1)}
    for body, message in ((wide, "logit_bias: has 1025 keys"), (long, f"more than {CHAT_MAX_VALUES} JSON values")):
        answer = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)
        assert answer.status_code == 422 and message in answer.json()["error"]["message"], answer.text[:300]
    assert len(seen) == before
    within = CHAT | {"logit_bias": {str(i): 1 for i in range(300)}}
    assert httpx.post(f"{server.url}/v1/chat/completions", json=within, timeout=30).status_code == 200
    assert len(seen) == before + 1


def test_max_body_mb_is_the_gates_limit_too(gate) -> None:
    server, seen = gate
    before = len(seen)
    body = json.dumps(CHAT | {"context": "x" * (8 * 1024 * 1024)}).encode()
    for path in ("/v1/chat/completions", "/v1/detect"):
        answer = httpx.post(f"{server.url}{path}", content=body, headers=JSON_TYPE, timeout=30)
        assert answer.status_code == 413 and "over the limit of 8388608 bytes" in answer.text, answer.text[:300]
    assert answer.json() == {"error": answer.json()["error"]} and len(seen) == before
    gate_error = httpx.post(f"{server.url}/v1/chat/completions", content=body, headers=JSON_TYPE, timeout=30).json()
    assert gate_error["error"]["type"] == "invalid_request_error"  # OpenAI's shape on the gate's route


def test_invalid_json_on_the_gate_is_a_422_naming_the_problem(gate) -> None:
    server, _ = gate
    answer = httpx.post(f"{server.url}/v1/chat/completions", content=b'{"model": NaN}', headers=JSON_TYPE)
    assert answer.status_code == 422 and "NaN" in answer.json()["error"]["message"], answer.text
