"""The gate against an upstream whose HTTP framing lies (raw sockets: no web framework sends a wrong
``Content-Length``): a stream cut short ends with an ``error`` event, a connection whose answer was mis-framed is
never reused (the next request is answered and checked), and the stream timeout is a deadline on the whole stream,
a silent upstream's included."""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from fake_upstream import CONTEXT, completion, sse
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings

SHORT = 25
"""Bytes the lying ``Content-Length`` leaves out (they stay on the connection)."""


def _stream(model: str) -> bytes:
    pieces = [sse([{"index": 0, "delta": {"role": "assistant"}}]),
              *(sse([{"index": 0, "delta": {"content": p}}]) for p in ("It opened in 1998. ", "It has 3 pools.")),
              sse([{"index": 0, "delta": {}, "finish_reason": "stop"}])]
    return "".join(pieces + ([] if model == "no-done" else ["data: [DONE]\n\n"])).encode()


class _Lying(socketserver.StreamRequestHandler):
    """Requests in turn on one kept-alive connection; the body's ``model`` picks the answer: ``cl-short`` a
    ``Content-Length`` :data:`SHORT` bytes short, ``no-done`` a stream without ``data: [DONE]``, ``silent`` one
    event then nothing; else a well-framed answer."""

    def handle(self) -> None:
        while True:
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                byte = self.rfile.read(1)
                if not byte:
                    return
                head += byte
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            body = json.loads(self.rfile.read(length))
            model, streamed = body["model"], body.get("stream") is True
            self.server.models.append(model)
            data = _stream(model) if streamed else json.dumps(completion(model)).encode()
            kind = b"text/event-stream" if streamed else b"application/json"
            status = b"200 OK"
            if model == "cl-short-500":  # an error page in plain text, just as mis-framed
                status, kind, data = b"500 Internal Server Error", b"text/plain", b"upstream broke: " + b"x" * 60
            declared = len(data) - (SHORT if model.startswith("cl-short") else 0)
            self.wfile.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: " + kind + b"\r\ncontent-length: "
                             + str(declared).encode() + b"\r\n\r\n" + (data[:120] if model == "silent" else data))
            self.wfile.flush()
            if model == "silent":
                time.sleep(6)
                return


@pytest.fixture(scope="module")
def lying() -> Iterator[socketserver.ThreadingTCPServer]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Lying)
    server.daemon_threads, server.models = True, []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _gate(server: socketserver.ThreadingTCPServer, **settings) -> ServerThread:
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    return ServerThread(create_app(load_detector("numbers"), settings=ServeSettings(upstream=url, **settings)))


def _ask(gate: ServerThread, model: str, stream: bool, context: bool = True) -> tuple[int, list[dict]]:
    body = {"model": model, "messages": [], "stream": stream} | ({"context": CONTEXT} if context else {})
    response = httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=60)
    if not stream:
        try:
            return response.status_code, [response.json()]
        except ValueError:  # a mis-framed answer passed through as it came
            return response.status_code, [{}]
    events = [e.removeprefix("data: ") for e in response.text.split("\n\n") if e]
    return response.status_code, [{"done": True} if e == "[DONE]" else _json(e) for e in events]


def _json(data: str) -> dict:
    """An event's JSON; a cut-off one (the upstream's, passed on as it came) as ``{"not_json": data}``."""
    try:
        return json.loads(data)
    except ValueError:
        return {"not_json": data}


@pytest.mark.parametrize("model", ["cl-short", "no-done"])
def test_a_stream_cut_short_ends_with_an_error_event(lying, model: str) -> None:
    with _gate(lying) as gate:
        status, events = _ask(gate, model, stream=True)
    assert status == 200
    assert events[-1]["error"]["type"] == "upstream_error" and "[DONE]" in events[-1]["error"]["message"]
    assert not any(e.get("done") for e in events)
    verdict = next(e for e in events if e.get("hallucinations", {}).get("object") == "hallucinations")
    assert events.index(verdict) < len(events) - 1  # the verdict on what arrived comes before the error


@pytest.mark.parametrize("stream", [False, True])
def test_after_a_lying_content_length_the_next_request_is_answered_and_checked(lying, stream: bool) -> None:
    with _gate(lying) as gate:
        _ask(gate, "cl-short", stream)  # its leftover bytes must not be read as the next answer
        status, events = _ask(gate, "ok", stream)
    assert status == 200, events
    found = events[0]["hallucinations"] if not stream else next(
        e["hallucinations"] for e in events if e.get("hallucinations", {}).get("object") == "hallucinations")
    assert found["status"] == "checked" and found["spans"]
    assert stream or events[0]["choices"][0]["message"]["content"].startswith("The Harbour Hotel")


@pytest.mark.parametrize(("model", "context"), [("cl-short", False), ("cl-short-500", False), ("cl-short-500", True)])
def test_after_a_lying_content_length_passed_through_unparsed_the_next_request_is_answered(lying, model: str,
                                                                                          context: bool) -> None:
    """An answer passed through as it came (no context in the request; an error status, here in plain text) is
    not parsed, so its framing cannot be confirmed: its connection is closed, never reused."""
    with _gate(lying) as gate:
        status, _ = _ask(gate, model, stream=False, context=context)
        assert status == (500 if model == "cl-short-500" else 200)
        status, events = _ask(gate, "ok", stream=False)
    assert status == 200, events
    assert events[0]["hallucinations"]["status"] == "checked"
    assert events[0]["choices"][0]["message"]["content"].startswith("The Harbour Hotel")


def test_the_stream_timeout_is_a_deadline_on_the_whole_stream(lying) -> None:
    """An upstream that starts a stream and falls silent: ended at --upstream-stream-timeout, not after a read
    timeout (--upstream-timeout) for each read."""
    with _gate(lying, upstream_timeout=5.0, upstream_stream_timeout=1.0) as gate:
        started = time.perf_counter()
        status, events = _ask(gate, "silent", stream=True)
        elapsed = time.perf_counter() - started
    assert status == 200 and events[-1]["error"]["type"] == "upstream_timeout"
    assert "--upstream-stream-timeout" in events[-1]["error"]["message"]
    assert elapsed < 3.0, f"{elapsed:.2f} s against a 1 s stream timeout"


def test_the_raw_upstream_really_lies() -> None:
    """The fixture's premise: the bytes past a short ``Content-Length`` wait on the connection."""
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Lying)
    server.daemon_threads, server.models = True, []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with socket.create_connection(server.server_address, timeout=10) as sock:
            body = json.dumps({"model": "cl-short"}).encode()
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            time.sleep(0.3)
            raw = sock.recv(65536)
        head, _, rest = raw.partition(b"\r\n\r\n")
        declared = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                            if line.startswith(b"content-length")))
        assert len(rest) == declared + SHORT
    finally:
        server.shutdown()
        server.server_close()
