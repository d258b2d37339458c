"""A misbehaving OpenAI-compatible upstream for ``fault_inject_gate.py``: raw HTTP/1.1 over asyncio on 127.0.0.1
(in a thread of its own), so it can lie about its framing as no web framework would let it. The request's
``model`` picks the behaviour (``stream`` in the body picks server-sent events or JSON):

- ``ok``: the answer ANSWER (hallucinated: 1998 and 3 are not in CONTEXT), JSON or a chunked event stream.
- ``cl-short`` / ``cl-long``: a ``Content-Length`` 25 bytes shorter (the rest left on the kept-alive connection)
  or 50 bytes longer than the body (then the connection is closed).
- ``reset``: half the answer, then a TCP reset.
- ``malformed``: events that are not JSON (a cut-off object, bare text) among the answer's.
- ``line-ends``: events ending in LF then CRLF, CRLF CRLF, CR CR and LF LF in turn.
- ``json``: a JSON completion even to a stream request. ``gzip``: the answer gzip-compressed.
- ``redirect``: 307 to ``/v1/elsewhere`` on this server (whose hits are counted: the gate must never follow).
- ``trickle``: an endless stream, one piece every 0.2 s. ``never``: reads the request and never answers.
- ``huge``: a 1 MB answer (streamed: 8 KB events of ~745 short sentences each, the splitter's costliest text).
- ``tiny-chunks``: a 5,000-character answer in 5-character chunks.
- ``parts``, ``tool_calls``, ``refusal``: a first choice of that kind. ``too-long``: an answer of ~600 characters.
- ``n2``: two choices, index 1 listed first and hallucinated, index 0 GOOD.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import socket
import struct
import threading
from collections import Counter
from typing import Any

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
CONTEXT = "The Harbour Hotel opened in 1999. It has 120 rooms and a rooftop pool."
ANSWER = "The Harbour Hotel opened in 1998. It has 120 rooms.\nIt also has 3 restaurants and a spa."
GOOD = "The Harbour Hotel opened in 1999. It has 120 rooms."
"""An answer the numbers detector finds nothing in."""
PIECES = ["The Harbour", " Hotel opened", " in 1998.", " It has 120", " rooms.\nIt also", " has 3 restau",
          "rants and a spa."]
LONG = ANSWER + " The rooftop pool is open all year." * 15
HEAD = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def message(model: str) -> dict[str, Any]:
    """The first choice's message for ``model``."""
    if model == "tool_calls":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "book", "arguments": "{\"year\": 1998}"}}]}
    if model == "parts":
        return {"role": "assistant", "content": [{"type": "text", "text": ANSWER}]}
    if model == "refusal":
        return {"role": "assistant", "content": None, "refusal": "The hotel opened in 1998, I refuse."}
    return {"role": "assistant", "content": LONG if model == "too-long" else ANSWER}


def completion(model: str) -> bytes:
    """The JSON answer for ``model``."""
    choices = [{"index": 0, "finish_reason": "stop", "message": message(model)}]
    if model == "n2":
        choices = [{"index": 1, "finish_reason": "stop", "message": {"role": "assistant", "content": ANSWER}},
                   {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": GOOD}}]
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
                       "choices": choices, "usage": {"prompt_tokens": 5, "completion_tokens": 9,
                                                     "total_tokens": 14}}).encode()


def sse(choices: list[dict[str, Any]], end: str = "\n\n") -> bytes:
    return f"data: {json.dumps(HEAD | {'choices': choices})}{end}".encode()


def events(model: str) -> list[bytes]:
    """The whole event stream for ``model`` (the endless and the lying ones excepted), ``[DONE]`` last."""
    role, stop = {"role": "assistant"}, {"index": 0, "delta": {}, "finish_reason": "stop"}
    if model == "n2":
        pieces = [sse([{"index": 1, "delta": {"content": p}}]) for p in PIECES]
        good = [sse([{"index": 0, "delta": {"content": GOOD[:20]}}]), sse([{"index": 0, "delta": {
            "content": GOOD[20:]}}])]
        out = [sse([{"index": 0, "delta": role}, {"index": 1, "delta": role}]), *pieces[:2], *good, *pieces[2:],
               sse([stop, stop | {"index": 1}])]
    elif model in ("parts", "tool_calls", "refusal"):
        out = [sse([{"index": 0, "delta": message(model)}]), sse([stop])]
    else:
        text = {"tiny-chunks": ((ANSWER + " ") * 57)[:5000], "too-long": LONG,
                "huge": "More text. " * (2**20 // 11)}.get(model)
        size = 8192 if model == "huge" else 5
        chunks = PIECES if text is None else [text[i:i + size] for i in range(0, len(text), size)]
        ends = ["\n\r\n", "\r\n\r\n", "\r\r", "\n\n"] if model == "line-ends" else ["\n\n"]
        body = [[{"index": 0, "delta": role}], *[[{"index": 0, "delta": {"content": c}}] for c in chunks], [stop]]
        out = [sse(choices, ends[i % len(ends)]) for i, choices in enumerate(body)]
        if model == "malformed":
            out[2:2] = [b'data: {"choices": [{"index": 0, "delta": {"content": "cut\n\n', b"data: not json\n\n"]
    return [*out, b"data: [DONE]\n\n"]


def _head(status: str, headers: dict[str, str]) -> bytes:
    return (f"HTTP/1.1 {status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode()


def _chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset (SO_LINGER 0), not a clean end."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class LyingUpstream:
    """``with LyingUpstream() as upstream: upstream.url`` (its base URL, ``/v1``); ``hits`` counts requests by
    path and by model."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind((HOST, 0))
            self.port = sock.getsockname()[1]
        self.url = f"http://{HOST}:{self.port}/v1"
        self.hits: Counter[str] = Counter()
        self._ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._serve(),), daemon=True)

    def __enter__(self) -> LyingUpstream:
        self._thread.start()
        if not self._ready.wait(10):
            raise SystemExit("the fake upstream did not start")
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._client, HOST, self.port)
        self._ready.set()
        await self._stop.wait()
        server.close()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests on one connection, answered in turn while the behaviour keeps the connection."""
        try:
            keep = True
            while keep:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                fields = dict(line.split(":", 1) for line in head[1:] if ":" in line)
                length = int(next((v for k, v in fields.items() if k.strip().lower() == "content-length"), "0"))
                body = json.loads(await reader.readexactly(length) or b"{}")
                path, model = head[0].split(" ")[1], str(body.get("model"))
                self.hits[path] += 1
                self.hits[model] += 1
                keep = await self._answer(path, model, body.get("stream") is True, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            pass
        finally:
            writer.close()

    async def _answer(self, path: str, model: str, stream: bool, writer: asyncio.StreamWriter) -> bool:
        """Write ``model``'s answer; whether the connection is kept for another request."""
        if path != "/v1/chat/completions" or model == "redirect":
            writer.write(_head("307 Temporary Redirect", {"location": f"http://{HOST}:{self.port}/v1/elsewhere",
                                                          "content-length": "0"}))
        elif model == "never":
            await self._stop.wait()
            return False
        elif model == "trickle" and stream:
            await self._trickle(writer)
            return False
        elif stream and model != "json":
            return await self._stream(model, writer)
        else:
            return await self._plain(model, writer)
        await writer.drain()
        return True

    async def _plain(self, model: str, writer: asyncio.StreamWriter) -> bool:
        data = completion(model) if model != "huge" else json.dumps({"choices": [{"index": 0, "message": {
            "role": "assistant", "content": "x" * 2**20}}]}).encode()
        headers = {"content-type": "application/json"}
        if model == "gzip":
            data, headers["content-encoding"] = gzip.compress(data), "gzip"
        length = len(data) + {"cl-short": -25, "cl-long": 50}.get(model, 0)
        writer.write(_head("200 OK", headers | {"content-length": str(length)}))
        if model == "reset":
            writer.write(data[:len(data) // 2])
            await writer.drain()
            _reset(writer)
            return False
        writer.write(data)
        await writer.drain()
        return model != "cl-long"

    async def _stream(self, model: str, writer: asyncio.StreamWriter) -> bool:
        """An event stream, chunked (``cl-short``/``cl-long``: with a lying ``Content-Length`` instead)."""
        parts = events(model)
        data = b"".join(parts)
        headers = {"content-type": "text/event-stream"}
        if model == "gzip":
            parts, headers["content-encoding"] = [gzip.compress(data)], "gzip"
        if model in ("cl-short", "cl-long"):
            length = len(data) + (-25 if model == "cl-short" else 50)
            writer.write(_head("200 OK", headers | {"content-length": str(length)}) + data)
            await writer.drain()
            return model == "cl-short"
        writer.write(_head("200 OK", headers | {"transfer-encoding": "chunked"}))
        for i, part in enumerate(parts):
            if model == "reset" and i == len(parts) // 2:
                await writer.drain()
                _reset(writer)
                return False
            writer.write(_chunked(part))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    async def _trickle(self, writer: asyncio.StreamWriter) -> None:
        """One piece every 0.2 s until the reader leaves or the server stops."""
        writer.write(_head("200 OK", {"content-type": "text/event-stream", "transfer-encoding": "chunked"}))
        writer.write(_chunked(sse([{"index": 0, "delta": {"role": "assistant"}}])))
        while not self._stop.is_set():
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.write(_chunked(sse([{"index": 0, "delta": {"content": "More text. "}}])))
