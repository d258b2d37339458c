"""``--stream-upstream``: an answer the client wants whole, streamed from the upstream and checked as it arrives,
answered as the chat completion its chunks make: the same answer and verdict as without the option, for every kind
of choice and under the block policy; checked ahead and reused; errors of the stream in OpenAI's shape."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from fake_upstream import ANSWER, CONTEXT, HEAD, fake_upstream
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings


def gate_app(upstream_url: str, detector=None, **settings) -> FastAPI:
    return create_app(detector or load_detector("numbers"),
                      settings=ServeSettings(upstream=f"{upstream_url}/v1", **settings))


def _post(gate, model: str, **extra) -> httpx.Response:
    body = {"model": model, "messages": [], "context": CONTEXT} | extra
    return httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=30)


def _comparable(payload: dict) -> dict:
    """A completion with its choices in index order and their null log probabilities left out, without its model
    (the fake upstream's chunks name theirs ``m``)."""
    choices = [{k: v for k, v in c.items() if not (k == "logprobs" and v is None)}
               for c in sorted(payload["choices"], key=lambda c: c["index"])]
    return {k: v for k, v in payload.items() if k != "model"} | {"choices": choices}


@pytest.mark.parametrize("policy", [{}, {"block_above": 0.1, "block_mode": "replace"},
                                    {"block_above": 0.1, "block_mode": "annotate"}])
def test_the_assembled_answer_and_its_check_equal_the_forwarded_ones(policy) -> None:
    app, state = fake_upstream()
    with ServerThread(app) as up, ServerThread(gate_app(up.url, **policy)) as plain, \
            ServerThread(gate_app(up.url, stream_upstream=True, **policy)) as streaming:
        for model in ("ok", "n2", "parts", "refusal", "empty", "limited-ok", "json"):
            before, after = _post(plain, model), _post(streaming, model)
            assert state["seen"][-1]["stream"] is True and state["seen"][-1]["stream_options"] == {
                "include_usage": True}, model
            assert after.status_code == before.status_code == 200, model
            assert _comparable(after.json()) == _comparable(before.json()), model
            assert after.headers["x-hallucination-check"] == before.headers["x-hallucination-check"], model
            assert after.headers.get("x-request-id") == before.headers.get("x-request-id"), model
        assert _post(streaming, "ok").json()["usage"]["total_tokens"] == 14  # from the stream's last chunk
        limited = _post(streaming, "limited")
        assert limited.status_code == 429 and limited.json()["error"]["type"] == "rate_limit"  # passed through


def test_a_request_with_tools_or_without_context_is_forwarded_as_it_came() -> None:
    app, state = fake_upstream()
    with ServerThread(app) as up, ServerThread(gate_app(up.url, stream_upstream=True)) as gate:
        tools = [{"type": "function", "function": {"name": "book", "parameters": {"type": "object"}}}]
        answer = _post(gate, "tool_calls", tools=tools)
        assert "stream" not in state["seen"][-1] and answer.json()["choices"][0]["message"]["tool_calls"]
        assert answer.json()["hallucinations"]["status"] == "unchecked"
        bare = httpx.post(f"{gate.url}/v1/chat/completions", json={"model": "ok", "messages": []}, timeout=30)
        assert "stream" not in state["seen"][-1] and bare.headers["x-hallucination-check"].startswith("unchecked")


def test_the_whole_answer_is_checked_ahead_of_the_stream_end_and_reused() -> None:
    """The upstream sends its last chunks only once the whole answer's detection has begun (at its last
    sentence's end): the final check reuses it (the answer detected once) and equals ``/v1/detect``'s."""
    detector = load_detector("numbers")
    texts: list[str] = []
    seen = threading.Event()
    detect_batch = detector.detect_batch

    def recording(items):
        texts.extend(item.response for item in items)
        if any(item.response == ANSWER for item in items):
            seen.set()
        return detect_batch(items)

    detector.detect_batch = recording
    waited: list[bool] = []
    upstream = FastAPI()

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request):
        async def events():
            yield f"data: {json.dumps(HEAD | {'choices': [{'index': 0, 'delta': {'content': ANSWER}}]})}\n\n"
            for _ in range(1000):  # up to 10 s
                if seen.is_set():
                    break
                await asyncio.sleep(0.01)
            waited.append(seen.is_set())
            yield f"data: {json.dumps(HEAD | {'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\n"
            yield "data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    with ServerThread(upstream) as up, ServerThread(gate_app(up.url, detector, stream_upstream=True)) as gate:
        answer = _post(gate, "m", question="When did it open?")
        item = {"context": CONTEXT, "question": "When did it open?", "response": ANSWER, "evidence": True}
        detected = httpx.post(f"{gate.url}/v1/detect", json=item, timeout=30).json()
    assert waited == [True] and texts.count(ANSWER) == 2  # once in the gate (reused), once by /v1/detect
    found = answer.json()["hallucinations"]
    assert answer.json()["choices"][0]["message"]["content"] == ANSWER
    assert found["spans"] == detected["spans"] and found["score"] == detected["score"]


def _broken(kind: str) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        if kind == "status":
            return JSONResponse({"error": {"message": "stream_options is not supported", "type": "bad"}}, 400)
        first = f"data: {json.dumps(HEAD | {'choices': [{'index': 0, 'delta': {'content': 'It opened.'}}]})}\n\n"
        rest = {"cut": "", "error": 'data: {"error": {"message": "the model crashed"}}\n\n',
                "garbage": "data: {not json\n\ndata: [DONE]\n\n",
                "no-choices": f"data: {json.dumps(HEAD | {'choices': []})}\n\ndata: [DONE]\n\n"}[kind]
        if kind == "no-choices":
            first = ""
        return StreamingResponse(iter([first, rest]), media_type="text/event-stream")

    return app


@pytest.mark.parametrize(("kind", "status", "says"), [
    ("status", 400, "stream_options is not supported"), ("cut", 502, "without data: [DONE]"),
    ("error", 502, "the model crashed"), ("garbage", 502, "not a JSON chunk"), ("no-choices", 502, "no choices")])
def test_a_broken_stream_is_an_error_in_openai_shape(kind, status, says) -> None:
    with ServerThread(_broken(kind)) as up, ServerThread(gate_app(up.url, stream_upstream=True)) as gate:
        answer = _post(gate, "m")
        assert answer.status_code == status and says in answer.json()["error"]["message"]
        assert _post(gate, "m").status_code == status  # the gate goes on answering
