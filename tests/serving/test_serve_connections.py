"""Connection limits against a real uvicorn server on 127.0.0.1 (raw sockets, bounded loops): headers and bodies
that trickle or stop are answered 408 and closed in bounded time, the connection cap refuses clearly (503), idle
keep-alive connections close, and ``/health`` keeps answering through it all."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx
import pytest
from server_thread import EchoDetector, ServerThread

from ragtruth_spans.serving.app import ServeSettings, create_app

pytestmark = pytest.mark.slow

LIMITS = {"header_timeout": 0.6, "body_timeout": 3.0, "body_read_timeout": 0.6, "keep_alive_timeout": 0.5}
HEAD = b"POST /v1/detect HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n"


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    return sock


def _read_until_closed(sock: socket.socket, limit: float = 8.0) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and after how many seconds (bounded)."""
    started, data = time.monotonic(), b""
    sock.settimeout(limit)
    while time.monotonic() - started < limit:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            break
        if not chunk:
            break
        data += chunk
    return data, time.monotonic() - started


@pytest.fixture(scope="module")
def server():
    with ServerThread(create_app(EchoDetector(), settings=ServeSettings(**LIMITS, max_connections=40))) as running:
        yield running


def test_sixty_stalled_bodies_are_408_and_closed_while_health_answers(server) -> None:
    with ServerThread(create_app(EchoDetector(), settings=ServeSettings(**LIMITS))) as big:
        socks = [_connect(big.port) for _ in range(60)]
        for sock in socks:
            sock.sendall(HEAD + b'{"context": "')
        health = httpx.get(f"{big.url}/health", timeout=5)
        assert health.status_code == 200
        results = [_read_until_closed(sock) for sock in socks]
        for sock in socks:
            sock.close()
        assert all(data.startswith(b"HTTP/1.1 408") and seconds < 4 for data, seconds in results), results[:2]
        assert httpx.get(f"{big.url}/health", timeout=5).json()["connections"]["body_timeouts"] == 60


def test_a_trickling_body_ends_at_its_total_deadline(server) -> None:
    sock = _connect(server.port)
    sock.sendall(HEAD)
    started, closed = time.monotonic(), False
    while time.monotonic() - started < 6 and not closed:  # a byte every 0.3 s: never idle for 0.6 s
        try:
            sock.sendall(b" ")
        except OSError:
            closed = True
        time.sleep(0.3)
    data, _ = _read_until_closed(sock, 2)
    sock.close()
    assert data.startswith(b"HTTP/1.1 408") and b"--body-timeout" in data, data
    assert time.monotonic() - started < 5.5


@pytest.mark.parametrize("sent", [b"", b"POST /v1/detect HTTP/1.1\r\nhost: localhost\r\n"])
def test_headers_that_never_finish_are_closed_at_the_header_deadline(server, sent) -> None:
    sock = _connect(server.port)
    sock.sendall(sent)
    data, seconds = _read_until_closed(sock)
    sock.close()
    assert seconds < 3
    assert data.startswith(b"HTTP/1.1 408") if sent else data == b""


def test_headers_sent_a_byte_at_a_time_are_cut_at_the_deadline(server) -> None:
    sock = _connect(server.port)
    started, closed = time.monotonic(), False
    for byte in b"GET /health HTTP/1.1\r\nx-slow: " + b"a" * 200:
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            closed = True
            break
        time.sleep(0.05)
        if time.monotonic() - started > 5:
            break
    data, _ = _read_until_closed(sock, 2)
    sock.close()
    assert (closed or data.startswith(b"HTTP/1.1 408")) and time.monotonic() - started < 4


def test_an_idle_keep_alive_connection_is_closed(server) -> None:
    sock = _connect(server.port)
    sock.sendall(b"GET /health HTTP/1.1\r\nhost: localhost\r\n\r\n")
    data, seconds = _read_until_closed(sock, 5)
    sock.close()
    assert data.startswith(b"HTTP/1.1 200") and seconds < 3


def test_over_the_connection_cap_a_request_gets_503_and_later_ones_are_served() -> None:
    settings = ServeSettings(**LIMITS | {"header_timeout": 1.5}, max_connections=5)
    with ServerThread(create_app(EchoDetector(), settings=settings)) as capped:
        idle = [_connect(capped.port) for _ in range(5)]
        time.sleep(0.2)
        refused = httpx.get(f"{capped.url}/health", timeout=5)
        assert refused.status_code == 503 and refused.headers["connection"] == "close"
        for sock in idle:
            _read_until_closed(sock)  # the header deadline frees their slots
            sock.close()
        health = httpx.get(f"{capped.url}/health", timeout=5).json()["connections"]
        assert health["refused_connections"] == 1 and health["header_timeouts"] == 5  # counted, not logged


def test_a_client_that_leaves_mid_body_is_counted_not_logged_as_an_error(server, caplog) -> None:
    before = httpx.get(f"{server.url}/health").json()["connections"]["client_disconnects"]
    for _ in range(5):
        sock = _connect(server.port)
        sock.sendall(HEAD + b'{"context": "')
        sock.close()
    deadline = time.monotonic() + 5
    while httpx.get(f"{server.url}/health").json()["connections"]["client_disconnects"] < before + 5:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")], caplog.text


def test_health_stays_fast_while_a_heavy_body_is_validated(server) -> None:
    body = json.dumps({"context": "c", "response": "r", "task": "QA"} | {f"k{i}": 1 for i in range(300_000)})
    answer: dict[str, httpx.Response] = {}
    heavy = threading.Thread(target=lambda: answer.update(r=httpx.post(
        f"{server.url}/v1/detect", content=body, headers={"content-type": "application/json"}, timeout=30)))
    heavy.start()
    waits = []
    while heavy.is_alive() and len(waits) < 200:
        started = time.monotonic()
        assert httpx.get(f"{server.url}/health", timeout=10).status_code == 200
        waits.append(time.monotonic() - started)
    heavy.join(30)
    assert answer["r"].status_code == 422 and len(answer["r"].content) < 1000
    assert max(waits) < 0.5, waits  # parsed in another process (before: /health waited 8.9 s at this size)


def test_headers_over_the_size_limit_are_refused_and_counted(server) -> None:
    before = httpx.get(f"{server.url}/health").json()["connections"]["bad_requests"]
    sock = _connect(server.port)
    sock.sendall(b"GET /health HTTP/1.1\r\nhost: localhost\r\nx-big: " + b"a" * 20_000 + b"\r\n\r\n")
    data, _ = _read_until_closed(sock, 5)
    sock.close()
    assert data.startswith(b"HTTP/1.1 431")  # whole in one read: h11 took it, the app refuses it
    assert httpx.get(f"{server.url}/health").json()["connections"]["bad_requests"] == before + 1
