"""A misbehaving OpenAI-compatible upstream for the gate's tests (run with ``ServerThread``): the request's
``model`` picks the behaviour, so one server serves a whole test module.

- ``ok`` (or anything else): the answer ANSWER, plain or streamed in PIECES.
- ``long-N-S``: a streamed answer of N characters in chunks of S, as fast as the socket takes them (``short-N-S``:
  the same of 11-character sentences).
- ``slow``: an endless stream, one piece every 50 ms (``state["pieces"]`` counts the pieces sent).
- ``line-ends``: a stream whose events end with LF then CRLF, CRLF CRLF, CR CR and LF LF in turn.
- ``json``: a JSON chat completion even to a stream request.
- ``n2``: two choices, listed index 1 first; choice 1 (only) hallucinates.
- ``tool_calls``, ``parts``, ``refusal``, ``empty``: a first choice of that kind (content: null with tool calls,
  a list of content parts, a refusal, the empty string).
- ``limited``: 429 with ``Retry-After``, ``x-ratelimit-*`` and ``x-request-id`` headers (``limited-ok``: the same
  headers on a 200).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

CONTEXT = "The Harbour Hotel opened in 1999. It has 120 rooms and a rooftop pool."
ANSWER = "The Harbour Hotel opened in 1998. It has 120 rooms.\nIt also has 3 restaurants and a spa."
PIECES = ["The Harbour", " Hotel opened", " in 1998.", " It has 120", " rooms.\nIt also", " has 3 restau",
          "rants and a spa."]
GOOD = "The Harbour Hotel opened in 1999. It has 120 rooms."
"""An answer the numbers detector finds nothing in."""
RATE_HEADERS = {"retry-after": "7", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "7s",
                "x-request-id": "req-123"}
HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def _message(model: str) -> dict[str, Any]:
    if model == "tool_calls":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "book", "arguments": "{\"year\": 1998}"}}]}
    if model == "parts":
        return {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}
    if model == "refusal":
        return {"role": "assistant", "content": None, "refusal": "The hotel opened in 1998, I refuse."}
    return {"role": "assistant", "content": "" if model == "empty" else ANSWER}


def completion(model: str) -> dict[str, Any]:
    """The plain answer for ``model``."""
    choices = [{"index": 0, "finish_reason": "stop", "message": _message(model)}]
    if model == "n2":
        choices = [{"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}},
                   {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": GOOD}}]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model, "choices": choices,
            "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14}}


def sse(choices: list[dict[str, Any]], end: str = "\n\n") -> str:
    return f"data: {json.dumps(HEAD | {'choices': choices})}{end}"


def _deltas(model: str) -> list[list[dict[str, Any]]]:
    """The ``choices`` of each streamed chunk for ``model`` (role first, finish last)."""
    if model == "n2":
        pieces = [[{"index": i, "delta": {"content": p}}] for a, b in zip(PIECES, [GOOD[:20], GOOD[20:]] + [""] * 5)
                  for i, p in ((1, a), (0, b)) if p]
        return [[{"index": 0, "delta": {"role": "assistant"}}, {"index": 1, "delta": {"role": "assistant"}}],
                *pieces, [{"index": 0, "delta": {}, "finish_reason": "stop"},
                          {"index": 1, "delta": {}, "finish_reason": "stop"}]]
    message = _message(model)
    delta = {k: v for k, v in message.items() if k != "content"} | (
        {} if message.get("content") is None else {"content": message["content"]})
    if isinstance(message.get("content"), str) and model != "empty":
        middle = [[{"index": 0, "delta": {"content": p}}] for p in PIECES]
        delta = {"role": "assistant"}
    else:
        middle = []
    return [[{"index": 0, "delta": delta}], *middle, [{"index": 0, "delta": {}, "finish_reason": "stop"}]]


async def stream_events(model: str, state: dict[str, Any], usage: bool = False) -> AsyncIterator[str]:
    """The streamed answer for ``model`` (see the module docstring); ``usage``: a last chunk with the usage and no
    choices, as ``stream_options: {"include_usage": true}`` asks."""
    if model.startswith(("long-", "short-")):
        kind, chars, size = model.split("-")
        sentence = "The hotel opened in 1999 and it has 120 rooms and a pool. " if kind == "long" else "More text. "
        text = (sentence * (int(chars) // len(sentence) + 1))[:int(chars)]
        yield sse([{"index": 0, "delta": {"role": "assistant"}}])
        for i in range(0, len(text), int(size)):
            yield sse([{"index": 0, "delta": {"content": text[i:i + int(size)]}}])
    elif model == "slow":
        yield sse([{"index": 0, "delta": {"role": "assistant"}}])
        while True:
            await asyncio.sleep(0.05)
            state["pieces"] = state.get("pieces", 0) + 1
            yield sse([{"index": 0, "delta": {"content": "More text. "}}])
    else:
        ends = ["\n\r\n", "\r\n\r\n", "\r\r", "\n\n"] if model == "line-ends" else ["\n\n"]
        for i, choices in enumerate(_deltas(model)):
            yield sse(choices, ends[i % len(ends)])
    if usage:
        yield f"data: {json.dumps(HEAD | {'choices': [], 'usage': completion(model)['usage']})}\n\n"
    yield "data: [DONE]\n\n"


def fake_upstream() -> tuple[FastAPI, dict[str, Any]]:
    """The app and its state (``seen``: the bodies received; ``pieces``: of the ``slow`` stream)."""
    app, state = FastAPI(), {"seen": []}

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Any:
        body = await request.json()
        state["seen"].append(body)
        model = str(body.get("model"))
        if model == "limited":
            return JSONResponse({"error": {"message": "slow down", "type": "rate_limit", "code": None}},
                                status_code=429, headers=RATE_HEADERS)
        headers = RATE_HEADERS if model == "limited-ok" else {}
        if not body.get("stream") or model == "json":
            return JSONResponse(completion(model), headers=headers)
        options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
        return StreamingResponse(stream_events(model, state, usage=options.get("include_usage") is True),
                                 media_type="text/event-stream", headers=headers)

    return app, state
