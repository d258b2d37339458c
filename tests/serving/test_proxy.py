"""The gate (``serve --upstream``): an OpenAI-compatible chat completions route in front of a fake upstream run
in process (uvicorn on 127.0.0.1), called with the real OpenAI Python client and with raw HTTP."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from server_thread import ServerThread, free_port

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings

openai = pytest.importorskip("openai")

CONTEXT = "The Harbour Hotel opened in 1999. It has 120 rooms and a rooftop pool."
QUESTION = "Tell me about the hotel."
ANSWER = "The Harbour Hotel opened in 1998. It has 120 rooms.\nIt also has 3 restaurants and a spa."
PIECES = ["The Harbour", " Hotel opened", " in 1998.", " It has 120", " rooms.\nIt also", " has 3 restau",
          "rants and a spa."]
KEY = "sk-upstream-secret-123"


def fake_upstream(delay: float = 0.0) -> tuple[FastAPI, list[dict]]:
    """An OpenAI-compatible server answering ANSWER (streamed in PIECES, ``delay`` s apart); ``model`` picks a
    failure: ``rate-limited`` (429), ``slow`` (answers after 3 s), ``empty`` (no content)."""
    app, seen = FastAPI(), []

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        body = await request.json()
        seen.append({"body": body, "authorization": request.headers.get("authorization")})
        model = body.get("model")
        if model == "rate-limited":
            return JSONResponse({"error": {"message": "slow down", "type": "rate_limit", "code": None}},
                                status_code=429)
        if model == "slow":
            await asyncio.sleep(3)
        content = "" if model == "empty" else ANSWER
        if not body.get("stream"):
            return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}

        async def events():
            head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model}
            yield f"data: {json.dumps(head | {'choices': [{'index': 0, 'delta': {'role': 'assistant'}}]})}\n\n"
            for piece in PIECES if content else []:
                await asyncio.sleep(delay)
                chunk = head | {"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}
                yield f"data: {json.dumps(chunk)}\n\n"
            yield f"data: {json.dumps(head | {'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    return app, seen


def gate_app(upstream_url: str, **settings) -> FastAPI:
    return create_app(load_detector("numbers"), settings=ServeSettings(upstream=f"{upstream_url}/v1", **settings))


@pytest.fixture(scope="module")
def servers():
    upstream, seen = fake_upstream(delay=0.05)
    with ServerThread(upstream) as up, ServerThread(gate_app(up.url)) as gate:
        yield gate, seen


def _client(gate) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gate.url}/v1", api_key=KEY, max_retries=0, timeout=30)


def _detect(gate) -> dict:
    item = {"context": CONTEXT, "question": QUESTION, "response": ANSWER, "task": "QA", "evidence": True}
    return httpx.post(f"{gate.url}/v1/detect", json=item, timeout=30).json()


def _same_check(hallucinations: dict, detected: dict) -> None:
    assert hallucinations["spans"] == detected["spans"] and hallucinations["score"] == detected["score"]


def test_a_completion_keeps_the_upstream_answer_and_adds_its_hallucinated_spans(servers, caplog) -> None:
    gate, seen = servers
    caplog.set_level(logging.DEBUG)
    answer = _client(gate).chat.completions.create(
        model="m", messages=[{"role": "user", "content": QUESTION}],
        extra_body={"context": CONTEXT, "question": QUESTION})
    assert answer.choices[0].message.content == ANSWER and answer.usage.total_tokens == 14
    found = answer.model_extra["hallucinations"]
    assert [s["text"] for s in found["spans"]] == ["1998", "3"]
    assert found["object"] == "hallucinations" and found["blocked"] is False and found["detector"]["kind"]
    assert all("evidence" in s and "verdict" in s for s in found["spans"])
    _same_check(found, _detect(gate))
    forwarded = seen[-1]
    assert "context" not in forwarded["body"] and "question" not in forwarded["body"]
    assert forwarded["authorization"] == f"Bearer {KEY}"
    assert KEY not in caplog.text


def test_a_list_of_passages_is_one_context(servers) -> None:
    gate, _ = servers
    body = {"model": "m", "messages": [{"role": "user", "content": QUESTION}], "question": QUESTION,
            "context": ["The Harbour Hotel opened in 1999.", "It has 120 rooms and a rooftop pool."]}
    found = httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=30).json()["hallucinations"]
    assert [s["text"] for s in found["spans"]] == ["1998", "3"]


def test_a_stream_passes_every_upstream_event_through_and_ends_with_the_whole_answers_check(servers) -> None:
    gate, _ = servers
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": QUESTION}],
            "context": CONTEXT, "question": QUESTION}
    with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body, timeout=30) as response:
        assert response.status_code == 200 and response.headers["x-hallucination-check"] == "checked"
        events = [e for e in response.read().decode().split("\n\n") if e]
    datas = [e.removeprefix("data: ") for e in events]
    assert datas[-1] == "[DONE]"
    chunks = [json.loads(d) for d in datas[:-1]]
    ours = [c for c in chunks if "hallucinations" in c]
    theirs = [c for c in chunks if "hallucinations" not in c]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in theirs) == ANSWER
    assert [c["choices"][0]["delta"].get("content") for c in theirs[1:-1]] == PIECES  # unchanged, in order
    assert all(c["choices"][0]["delta"] == {} for c in ours)
    final = ours[-1]["hallucinations"]
    assert final["object"] == "hallucinations" and chunks[-1] is ours[-1]
    _same_check(final, _detect(gate))
    deltas = [c["hallucinations"] for c in ours[:-1]]
    assert deltas and all(d["object"] == "hallucinations.delta" for d in deltas)
    reported = [ANSWER[a:b] for d in deltas for a, b in d["sentences"]]
    assert reported[0] == "The Harbour Hotel opened in 1998."
    assert {s["text"] for d in deltas for s in d["spans"]} <= {"1998", "3"}


def test_the_openai_client_streams_through_the_gate(servers) -> None:
    gate, _ = servers
    stream = _client(gate).chat.completions.create(
        model="m", messages=[{"role": "user", "content": QUESTION}], stream=True,
        extra_body={"context": CONTEXT, "question": QUESTION})
    text, extras = "", []
    for chunk in stream:
        text += chunk.choices[0].delta.content or ""  # the added chunks have an empty delta: nothing to add
        if (chunk.model_extra or {}).get("hallucinations"):
            extras.append(chunk.model_extra["hallucinations"])
    assert text == ANSWER
    assert extras[-1]["object"] == "hallucinations" and [s["text"] for s in extras[-1]["spans"]] == ["1998", "3"]


def test_chunks_are_passed_on_as_they_arrive() -> None:
    upstream, _ = fake_upstream(delay=0.4)
    with ServerThread(upstream) as up, ServerThread(gate_app(up.url)) as gate:
        body = {"model": "m", "stream": True, "messages": [], "context": CONTEXT}
        started = time.monotonic()
        with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body, timeout=30) as response:
            lines = response.iter_lines()
            first_content = next(line for line in lines if '"content"' in line)
            first_at = time.monotonic() - started
            for _ in lines:
                pass
        total = time.monotonic() - started
    assert "The Harbour" in first_content
    assert first_at < 1.2 and total > 2.5  # the first piece came long before the upstream finished


def test_upstream_errors_and_timeouts_keep_their_status() -> None:
    upstream, _ = fake_upstream()
    with ServerThread(upstream) as up, ServerThread(gate_app(up.url, upstream_timeout=1.0)) as gate:
        client = _client(gate)
        with pytest.raises(openai.RateLimitError) as error:
            client.chat.completions.create(model="rate-limited", messages=[], extra_body={"context": CONTEXT})
        assert error.value.body["message"] == "slow down"
        for stream in (False, True):
            body = {"model": "slow", "messages": [], "context": CONTEXT, "stream": stream}
            response = httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=30)
            assert response.status_code == 504 and response.json()["error"]["type"] == "upstream_timeout"
        streamed = httpx.post(f"{gate.url}/v1/chat/completions", timeout=30,
                              json={"model": "rate-limited", "messages": [], "context": CONTEXT, "stream": True})
        assert streamed.status_code == 429 and streamed.json()["error"]["message"] == "slow down"
    with ServerThread(gate_app(f"http://127.0.0.1:{free_port()}")) as gate:
        response = httpx.post(f"{gate.url}/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
        assert response.status_code == 502 and response.json()["error"]["type"] == "upstream_error"


def test_without_a_context_the_request_is_forwarded_unchecked_or_refused(servers) -> None:
    gate, _ = servers
    response = httpx.post(f"{gate.url}/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
    assert response.status_code == 200 and "hallucinations" not in response.json()
    assert response.headers["x-hallucination-check"].startswith("unchecked")
    upstream, seen = fake_upstream()
    with ServerThread(upstream) as up, ServerThread(gate_app(up.url, require_context=True)) as strict:
        refused = httpx.post(f"{strict.url}/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
        assert refused.status_code == 422 and "context" in refused.json()["error"]["message"] and not seen


@pytest.mark.parametrize("body, message", [
    ({"context": ""}, "context"), ({"context": []}, "context"), ({"context": ["ok", 3]}, "context[1]"),
    ({"context": "ok", "task": "Poem"}, "task"), ({"context": "ok", "question": 5}, "question")])
def test_a_malformed_check_is_a_422_naming_the_field(servers, body, message) -> None:
    gate, _ = servers
    response = httpx.post(f"{gate.url}/v1/chat/completions", json={"model": "m", "messages": []} | body, timeout=30)
    assert response.status_code == 422 and message in response.json()["error"]["message"]


def test_an_empty_answer_is_reported_not_failed(servers) -> None:
    gate, _ = servers
    answer = httpx.post(f"{gate.url}/v1/chat/completions", timeout=30,
                        json={"model": "empty", "messages": [], "context": CONTEXT}).json()
    assert answer["hallucinations"]["spans"] == [] and "empty" in answer["hallucinations"]["error"]


@pytest.mark.parametrize("mode", ["replace", "annotate"])
def test_block_above_replaces_or_annotates_the_answer(mode: str) -> None:
    upstream, _ = fake_upstream()
    with ServerThread(upstream) as up, ServerThread(gate_app(up.url, block_above=0.1, block_mode=mode)) as gate:
        body = {"model": "m", "messages": [], "context": CONTEXT}
        answer = httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=30).json()
        content, found = answer["choices"][0]["message"]["content"], answer["hallucinations"]
        assert found["blocked"] is True
        if mode == "replace":
            assert content.startswith("[withheld") and found["answer"] == ANSWER
        else:
            assert content.startswith(ANSWER) and "hallucination gate" in content[len(ANSWER):]
        with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body | {"stream": True},
                          timeout=30) as response:
            chunks = [json.loads(e.removeprefix("data: ")) for e in response.read().decode().split("\n\n")
                      if e and e != "data: [DONE]"]
        text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
        if mode == "replace":
            assert text.startswith("[withheld") and "1998" not in text
            assert all(c["hallucinations"]["object"] == "hallucinations" for c in chunks if "hallucinations" in c)
        else:
            assert text.startswith(ANSWER) and "hallucination gate" in text
        assert chunks[-1]["hallucinations"]["blocked"] is True


def test_the_gate_key_and_the_upstream_key_are_kept_apart(monkeypatch) -> None:
    upstream, seen = fake_upstream()
    with ServerThread(upstream) as up, ServerThread(gate_app(up.url, api_key="gate-key",
                                                             upstream_api_key="upstream-key")) as gate:
        refused = httpx.post(f"{gate.url}/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
        assert refused.status_code == 401 and not seen
        answer = openai.OpenAI(base_url=f"{gate.url}/v1", api_key="gate-key", max_retries=0).chat.completions.create(
            model="m", messages=[], extra_body={"context": CONTEXT})
        assert answer.choices[0].message.content == ANSWER and seen[-1]["authorization"] == "Bearer upstream-key"
        model = httpx.get(f"{gate.url}/v1/model", headers={"Authorization": "Bearer gate-key"}).json()
        assert "upstream-key" not in json.dumps(model) and model["serving"]["gate"] is True


@pytest.mark.slow
def test_the_shipped_detectors_final_stream_event_equals_detect() -> None:
    upstream, _ = fake_upstream()
    with ServerThread(upstream) as up:
        app = create_app(load_detector("default"), settings=ServeSettings(upstream=f"{up.url}/v1"))
        with ServerThread(app) as gate:
            stream = _client(gate).chat.completions.create(
                model="m", messages=[], stream=True, extra_body={"context": CONTEXT, "question": QUESTION})
            extras = [c.model_extra["hallucinations"] for c in stream if (c.model_extra or {}).get("hallucinations")]
            _same_check(extras[-1], _detect(gate))


def test_a_text_that_ends_a_sentence_is_checked_ahead_once_and_reused() -> None:
    """The answer's first sentence and the whole answer are checked as soon as their last piece arrives (the
    upstream here sends nothing more until it sees that check), the sentence check and the final check reuse those
    detections (each text detected once), and the final event is still ``/v1/detect``'s result."""
    import threading

    detector = load_detector("numbers")
    texts: list[str] = []
    seen = {text: threading.Event() for text in (ANSWER[:ANSWER.index(".") + 1], ANSWER)}
    detect_batch = detector.detect_batch

    def recording(items):
        texts.extend(item.response for item in items)
        for item in items:
            if item.response in seen:
                seen[item.response].set()
        return detect_batch(items)

    detector.detect_batch = recording
    waited: list[bool] = []

    async def until(event: threading.Event) -> None:
        for _ in range(1000):  # up to 10 s
            if event.is_set():
                waited.append(True)
                return
            await asyncio.sleep(0.01)
        waited.append(False)

    upstream = FastAPI()

    @upstream.post("/v1/chat/completions")
    async def chat(request: Request):
        async def events():
            head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
            for piece in PIECES:
                yield f"data: {json.dumps(head | {'choices': [{'index': 0, 'delta': {'content': piece}}]})}\n\n"
                if piece.endswith("1998."):
                    await until(seen[ANSWER[:ANSWER.index(".") + 1]])
            await until(seen[ANSWER])
            yield f"data: {json.dumps(head | {'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\n"
            yield "data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")

    with ServerThread(upstream) as up, ServerThread(create_app(
            detector, settings=ServeSettings(upstream=f"{up.url}/v1"))) as gate:
        body = {"model": "m", "messages": [], "stream": True, "context": CONTEXT, "question": QUESTION}
        with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body, timeout=30) as response:
            events = [json.loads(e.removeprefix("data: ")) for e in response.read().decode().split("\n\n")
                      if e and e != "data: [DONE]"]
        streamed = list(texts)
        final = [e["hallucinations"] for e in events if e.get("hallucinations", {}).get("object") == "hallucinations"]
        _same_check(final[-1], _detect(gate))
    assert waited == [True, True]  # both checks began before the upstream sent anything after their text
    assert all(streamed.count(text) == 1 for text in seen)  # and were reused, not made again
    first = next(e["hallucinations"] for e in events if e.get("hallucinations", {}).get("object") ==
             "hallucinations.delta")
    assert first["checked"] == ANSWER.index(".") + 1 and first["spans"][0]["text"] == "1998"
