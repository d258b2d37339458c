"""The service's body and connection limits at the ASGI level (fast): a body read within its size and time
limits before any route runs (413, 408), a client that leaves mid-body ends its request quietly (counted, never an
internal error), and heavy validation runs off the event loop with its errors capped."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from fastapi.testclient import TestClient
from server_thread import EchoDetector

from ragtruth_spans.serving import body as body_module
from ragtruth_spans.serving.app import ServeSettings, create_app
from ragtruth_spans.serving.limits import BodyReader, ConnectionStats

ITEM = {"context": "Passage 1: The hotel opened in 1999.", "response": "It opened in 1998.", "task": "QA"}


def _scope(path: str = "/v1/detect", length: int | None = None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json")]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    return {"type": "http", "method": "POST", "path": path, "headers": headers, "query_string": b"",
            "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 1),
            "root_path": "", "raw_path": path.encode(), "asgi": {"version": "3.0"}}


async def _call(app: Any, messages: list[dict[str, Any] | float], scope: dict[str, Any]) -> list[dict[str, Any]]:
    """Run ``app`` with a client that sends ``messages`` in order (a float: a pause of that many seconds before
    the next one; after the last one the client sends nothing more)."""
    sent: list[dict[str, Any]] = []
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        while queue and isinstance(queue[0], float):
            await asyncio.sleep(queue.pop(0))
        if not queue:
            await asyncio.sleep(3600)
        return queue.pop(0)  # type: ignore[return-value]

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, receive, send), 10)
    return sent


async def _never_called(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the app must not run")


def _status(sent: list[dict[str, Any]]) -> tuple[int, dict[bytes, bytes], dict[str, Any]]:
    start = sent[0]
    return start["status"], dict(start["headers"]), json.loads(sent[1]["body"])


def test_a_body_that_stops_gets_408_and_the_connection_closes() -> None:
    stats = ConnectionStats()
    reader = BodyReader(_never_called, max_bytes=1000, timeout=5, read_timeout=0.2, stats=stats)
    sent = asyncio.run(_call(reader, [{"type": "http.request", "body": b"{", "more_body": True}], _scope(length=50)))
    status, headers, answer = _status(sent)
    assert status == 408 and headers[b"connection"] == b"close" and "--body-read-timeout" in answer["error"]
    assert stats.body_timeouts == 1


def test_a_body_that_trickles_gets_408_at_its_total_deadline() -> None:
    chunk = {"type": "http.request", "body": b" ", "more_body": True}
    trickle = [m for _ in range(40) for m in (0.05, chunk)]  # a byte every 50 ms: never idle for read_timeout
    reader = BodyReader(_never_called, max_bytes=1000, timeout=0.5, read_timeout=0.3)
    status, _, answer = _status(asyncio.run(_call(reader, trickle, _scope())))
    assert status == 408 and "--body-timeout" in answer["error"]


def test_a_body_over_the_limit_is_413_declared_or_counted() -> None:
    reader = BodyReader(_never_called, max_bytes=10)
    assert _status(asyncio.run(_call(reader, [], _scope(length=11))))[0] == 413
    big = {"type": "http.request", "body": b"x" * 11, "more_body": True}
    assert _status(asyncio.run(_call(reader, [big], _scope())))[0] == 413


def test_a_client_that_leaves_mid_body_is_one_debug_line_and_a_count(caplog: pytest.LogCaptureFixture) -> None:
    app = create_app(EchoDetector())
    partial = {"type": "http.request", "body": json.dumps(ITEM).encode()[:20], "more_body": True}
    with caplog.at_level(logging.DEBUG, logger="ragtruth_spans"):
        sent = asyncio.run(_call(app, [partial, 0.01, {"type": "http.disconnect"}], _scope()))
    assert sent == []  # nothing to answer: the client is gone
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()] == [
        "client disconnected before its request body was complete (POST /v1/detect)"]
    with TestClient(app, base_url="http://localhost") as client:
        assert client.get("/health").json()["connections"]["client_disconnects"] == 1


def test_a_body_with_300000_unknown_keys_is_refused_by_its_count_with_a_small_answer() -> None:
    body = json.dumps(ITEM | {f"k{i}": 1 for i in range(300_000)}).encode()
    with TestClient(create_app(EchoDetector()), base_url="http://localhost") as client:
        answer = client.post("/v1/detect", content=body, headers={"content-type": "application/json"})
    assert answer.status_code == 422 and len(answer.content) < 1000, len(answer.content)
    assert "300003 keys" in answer.json()["error"] and answer.json()["error_count"] == 1


def test_many_errors_are_capped_to_the_first_few_and_a_count() -> None:
    bad = [{"context": 1, "response": 2, "task": "nope", "question": 3, "id": 1.5, "evidence": "yes"}] * 8
    app = create_app(EchoDetector(), settings=ServeSettings(max_errors=4))
    with TestClient(app, base_url="http://localhost") as client:
        answer = client.post("/v1/detect", json=bad).json()
    assert len(answer["detail"]) == 4 and answer["error_count"] == 48
    assert answer["error"].endswith("(and 44 more)"), answer["error"]


def test_parsing_and_validation_run_off_the_event_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    where: list[bool] = []
    original = body_module.validated

    def spying(*args: Any, **kwargs: Any) -> Any:
        try:
            asyncio.get_running_loop()
            where.append(True)
        except RuntimeError:
            where.append(False)
        return original(*args, **kwargs)

    monkeypatch.setattr(body_module, "validated", spying)
    with TestClient(create_app(EchoDetector()), base_url="http://localhost") as client:
        assert client.post("/v1/detect", json=ITEM).status_code == 200
        assert client.post("/v1/select", json={"context": "c", "task": "QA", "candidates": ["a b"]}).status_code \
            == 200
    assert where == [False, False]  # both routes validated in a worker thread


def test_a_large_body_is_parsed_in_another_process_with_the_same_outcome() -> None:
    from ragtruth_spans.serving.parse import BodyParser, max_values

    parser = BodyParser(process_bytes=100)
    small, large = json.dumps(ITEM).encode(), json.dumps([ITEM] * 4).encode()
    try:
        assert asyncio.run(parser.parse(small, max_values(4))) == ("ok", ITEM) and not parser._worker.started
        assert asyncio.run(parser.parse(large, max_values(4))) == ("ok", [ITEM] * 4) and parser._worker.started
        assert asyncio.run(parser.parse(json.dumps(list(range(1000))).encode(), max_values(4)))[0] == "invalid"
        assert asyncio.run(parser.parse(b"[" * 50 + b"x", max_values(4)))[0] == "json"
    finally:
        parser.close()
