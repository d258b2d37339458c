"""The gate reads text by ``/v1/detect``'s blank rule (:func:`~ragtruth_spans.core.fields.is_blank`): a context or
question of invisible characters only is a 422 before the upstream is called, and an answer of invisible characters
only is "not checked: the answer is empty", plain or streamed, never a 500 or a stream cut off."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from server_thread import EchoDetector, ServerThread

from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings

INVISIBLE = "\u200b\u2060\ufeff"
CONTEXT = "The Harbour Hotel opened in 1999."


def _upstream(answer: str) -> tuple[FastAPI, list[dict]]:
    """An OpenAI-compatible upstream answering ``answer`` (streamed in 2-character pieces when asked)."""
    app, seen = FastAPI(), []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        seen.append(body)
        head = {"id": "c", "created": 1, "model": "m"}
        if not body.get("stream"):
            return head | {"object": "chat.completion", "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}]}

        async def events():
            chunk = head | {"object": "chat.completion.chunk"}
            for i in range(0, len(answer), 2):
                delta = {"index": 0, "delta": {"content": answer[i:i + 2]}, "finish_reason": None}
                yield f"data: {json.dumps(chunk | {'choices': [delta]})}\n\n"
            done = {"index": 0, "delta": {}, "finish_reason": "stop"}
            yield f"data: {json.dumps(chunk | {'choices': [done]})}\n\ndata: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app, seen


@pytest.fixture(scope="module", params=["replace", None])
def blank_answer(request):
    upstream, seen = _upstream(INVISIBLE + "\n" + INVISIBLE)
    block = {} if request.param is None else {"block_above": 0.5, "block_mode": request.param}
    with ServerThread(upstream) as up, ServerThread(create_app(EchoDetector(), settings=ServeSettings(
            upstream=f"{up.url}/v1", **block))) as gate:
        yield gate, seen


@pytest.mark.parametrize("fields", [{"context": INVISIBLE}, {"context": ["ok", INVISIBLE]},
                                    {"context": CONTEXT, "question": INVISIBLE}, {"context": " \u3000"}])
def test_a_blank_context_or_question_is_a_422_before_the_upstream(blank_answer, fields: dict) -> None:
    gate, seen = blank_answer
    before = len(seen)
    for stream in (False, True):
        answer = httpx.post(f"{gate.url}/v1/chat/completions", timeout=30,
                            json={"model": "m", "messages": [], "stream": stream} | fields)
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["type"] == "invalid_request_error" and "blank" in error["message"], error
    assert len(seen) == before


def test_an_invisible_answer_is_not_checked_never_a_500(blank_answer) -> None:
    gate, _ = blank_answer
    answer = httpx.post(f"{gate.url}/v1/chat/completions", timeout=30,
                        json={"model": "m", "messages": [], "context": CONTEXT})
    assert answer.status_code == 200, answer.text
    found = answer.json()["hallucinations"]
    assert found["score"] is None and found["spans"] == [] and "empty" in found["error"], found


def test_an_invisible_streamed_answer_ends_with_its_check_and_done(blank_answer) -> None:
    gate, _ = blank_answer
    with httpx.stream("POST", f"{gate.url}/v1/chat/completions", timeout=30,
                      json={"model": "m", "messages": [], "context": CONTEXT, "stream": True}) as response:
        assert response.status_code == 200
        events = [e for e in response.read().decode().split("\n\n") if e.strip()]
    assert events[-1] == "data: [DONE]", events[-3:]
    payloads = [json.loads(e.removeprefix("data: ")) for e in events[:-1]]
    assert not [p for p in payloads if "error" in p and "choices" not in p], payloads
    final = [p["hallucinations"] for p in payloads if p.get("hallucinations", {}).get("object") == "hallucinations"]
    assert final and "empty" in final[-1]["error"], final
