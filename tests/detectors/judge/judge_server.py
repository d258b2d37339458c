"""A scripted OpenAI-compatible chat-completions server for the judge tests (FastAPI + uvicorn, 127.0.0.1 only).

Run as a subprocess: ``python judge_server.py [--model NAME]``. It binds a free loopback port,
prints ``{"port": N}`` on one line, then serves:

- ``POST /v1/chat/completions``: an unknown ``model`` gets the 404 vLLM gives; otherwise the next scripted step
  is consumed (``{"status": 429, "retry_after": "0.3"}``, ``{"status": 500}``, ``{"delay": 2.0}``,
  ``{"content": "garbage"}``, ``{"not_json": "..."}``, ``{"no_usage": true}``); without a step the answer comes
  from a rule-based oracle (numbers of the response absent from the source are hallucinated);
- ``POST /_control/script`` ``{"steps": [...], "delay": s}``, ``POST /_control/reset``, ``GET /_control/log``
  (every chat request: its body, Authorization header, the usage answered; and the most requests seen in flight).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import socket
import sys
import time
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from ragtruth_spans.detectors.rules import numbers_in

app = FastAPI()
STATE: dict[str, Any] = {"steps": [], "delay": 0.0, "log": [], "generation": 0, "in_flight": {}, "max_in_flight": 0}
"""``in_flight`` counts requests per reset generation, so requests still running from before a reset (a test's
slow scripted answers) do not count in the next test's ``max_in_flight``."""
SERVED = {"model": "judge-test"}
_ANSWER_INTRO = re.compile(r"\n\nBelow is (?:an answer|a summary|an overview)[^\n]*:\n")


def _split_prompt(text: str) -> tuple[str, str]:
    """(source, rest) of one of the judge's prompts: the rest starts with the response."""
    match = _ANSWER_INTRO.search(text)
    return (text[:match.start()], text[match.end():]) if match else (text, "")


def _unsupported_numbers(source: str, text: str) -> list[str]:
    known = {value for _, _, value in numbers_in(source)}
    return [text[a:b] for a, b, value in numbers_in(text) if value not in known]


def oracle(prompt: str) -> str:
    """The rule judge: span mode lists the response's numbers absent from the source; claims mode says
    'no claim' for a question, 'unsupported' for a statement with such a number, else 'supported'."""
    source, rest = _split_prompt(prompt)
    if "numbered statements:" in rest:
        block = rest.split("numbered statements:\n", 1)[1].split("\n\nJudge every", 1)[0]
        verdicts = {}
        for line in block.splitlines():
            number, _, statement = line.partition(". ")
            verdicts[number] = ("no claim" if statement.rstrip().endswith("?") else
                                "unsupported" if _unsupported_numbers(source, statement) else "supported")
        return json.dumps(verdicts)
    response = rest.split("\n\nYour task is", 1)[0]
    return json.dumps({"hallucination list": _unsupported_numbers(source, response)})


def _completion(body: dict[str, Any], content: str, *, usage: bool = True) -> dict[str, Any]:
    prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
    answer: dict[str, Any] = {
        "id": f"chatcmpl-{len(STATE['log'])}", "object": "chat.completion", "created": int(time.time()),
        "model": body["model"], "choices": [{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": content}}]}
    if usage:
        prompt_tokens, completion_tokens = prompt_chars // 4 + 1, len(content) // 4 + 1
        answer["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens}
    return answer


@app.post("/v1/chat/completions")
async def chat(request: Request):
    body = await request.json()
    generation = STATE["generation"]
    STATE["in_flight"][generation] = STATE["in_flight"].get(generation, 0) + 1
    STATE["max_in_flight"] = max(STATE["max_in_flight"], STATE["in_flight"][generation])
    entry = {"body": body, "authorization": request.headers.get("authorization"), "usage": None}
    STATE["log"].append(entry)
    try:
        step = STATE["steps"].pop(0) if STATE["steps"] else {}
        delay = step.get("delay", STATE["delay"])
        if delay:
            await asyncio.sleep(delay)
        if body.get("model") != SERVED["model"]:
            return JSONResponse({"object": "error", "message": f"The model `{body.get('model')}` does not exist."},
                                status_code=404)
        if "status" in step:
            headers = {"Retry-After": step["retry_after"]} if "retry_after" in step else {}
            return JSONResponse({"error": {"message": "scripted failure"}}, status_code=step["status"],
                                headers=headers)
        if "not_json" in step:
            return PlainTextResponse(step["not_json"])
        prompt = "\n".join(m.get("content") or "" for m in body["messages"])
        content = step["content"] if "content" in step else oracle(prompt)
        answer = _completion(body, content, usage=not step.get("no_usage"))
        entry["usage"] = answer.get("usage")
        return answer
    finally:
        STATE["in_flight"][generation] -= 1


@app.post("/_control/script")
async def script(request: Request):
    data = await request.json()
    STATE["steps"] = list(data.get("steps", []))
    STATE["delay"] = float(data.get("delay", 0.0))
    return {"ok": True}


@app.post("/_control/reset")
async def reset():
    STATE.update(steps=[], delay=0.0, log=[], max_in_flight=0, generation=STATE["generation"] + 1)
    return {"ok": True}


@app.get("/_control/log")
async def log():
    return {"requests": STATE["log"], "max_in_flight": STATE["max_in_flight"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="judge-test")
    args = parser.parse_args()
    SERVED["model"] = args.model
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    server.run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()
