"""Other hosts and other sites: a request for a host the server does not answer for (DNS rebinding) is refused
before any route runs, a browser page on another site cannot post to any route (the gate's included, so it never
reaches the upstream with the operator's key), JSON is required by content type, and a public bind without a key
is refused at start."""

from __future__ import annotations

import json
import logging

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient
from server_thread import EchoDetector, ServerThread

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.origins import SiteGuard, allowed_name, host_name
from ragtruth_spans.serving.settings import ServeSettings

ITEM = {"context": "Passage 1: The hotel opened in 1999.", "response": "It opened in 1998.", "task": "QA"}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "When?"}], "context": ITEM["context"]}
UPSTREAM_KEY = "sk-operator-secret"


def _upstream() -> tuple[FastAPI, list[dict]]:
    """An OpenAI-compatible upstream that records what reached it."""
    app, seen = FastAPI(), []

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> dict:
        seen.append({"authorization": request.headers.get("authorization")})
        return {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": "It opened in 1998."}}]}

    return app, seen


@pytest.fixture(scope="module")
def gate():
    upstream, seen = _upstream()
    with ServerThread(upstream) as up:
        app = create_app(EchoDetector(), settings=ServeSettings(upstream=f"{up.url}/v1"))
        with ServerThread(app) as server:
            yield server, seen


def _post(server: ServerThread, path: str, body: dict, headers: dict | list | None = None) -> httpx.Response:
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    return httpx.post(f"{server.url}{path}", content=json.dumps(body).encode(), timeout=30,
                      headers=[("content-type", "application/json"), *pairs])


def test_a_foreign_host_is_refused_before_any_route_and_never_reaches_the_upstream(gate) -> None:
    server, seen = gate
    before = len(seen)
    rebound = {"Host": f"attacker.example:{server.port}"}
    for path, body in (("/v1/chat/completions", CHAT), ("/v1/detect", ITEM)):
        refused = _post(server, path, body, rebound)
        assert refused.status_code == 421, refused.text
        assert b"\n" not in refused.content and "attacker.example" in refused.text
    assert httpx.get(f"{server.url}/health", headers=rebound).status_code == 421
    assert httpx.get(f"{server.url}/v1/model", headers=rebound).status_code == 421
    assert len(seen) == before  # nothing was forwarded
    gate_error = _post(server, "/v1/chat/completions", CHAT, rebound).json()["error"]
    assert gate_error["type"] == "invalid_request_error" and "--allowed-host" in gate_error["message"]


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST:1234", "127.0.0.1:8000", "[::1]:8000", "[::1]"])
def test_the_loopback_names_are_answered_with_any_port(gate, host: str) -> None:
    server, _ = gate
    assert httpx.get(f"{server.url}/health", headers={"Host": host}).status_code == 200
    assert _post(server, "/v1/detect", ITEM, {"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["localhost.", "127.0.0.1:x", "[::1", "a b", ""])
def test_a_malformed_host_is_a_400(gate, host: str) -> None:
    server, _ = gate
    answer = httpx.get(f"{server.url}/health", headers={"Host": host})
    assert answer.status_code in (400, 421) and "error" in answer.json()


def test_allowed_host_adds_names_and_a_star_allows_any() -> None:
    settings = ServeSettings(allowed_hosts=("Gate.Example.org", "*.lan"))
    with TestClient(create_app(EchoDetector(), settings=settings), base_url="http://gate.example.org") as client:
        assert client.get("/health").status_code == 200
        assert client.get("/health", headers={"Host": "box.lan:9"}).status_code == 200
        assert client.get("/health", headers={"Host": "localhost"}).status_code == 200
        assert client.get("/health", headers={"Host": "gate.example.org.evil"}).status_code == 421
    with TestClient(create_app(EchoDetector(), settings=ServeSettings(allowed_hosts=("*",))),
                    base_url="http://anything.example") as client:
        assert client.get("/health").status_code == 200
        # any host, but never another site's page
        refused = client.post("/v1/detect", json=ITEM, headers={"Origin": "http://other.example"})
        assert refused.status_code == 403
        assert client.post("/v1/detect", json=ITEM, headers={"Origin": "http://anything.example:3000"}) \
            .status_code == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://attacker.example"}, {"Origin": "null"}, {"Origin": "http://localhost.attacker.example"},
    {"Sec-Fetch-Site": "cross-site"}, {"Origin": "http://localhost:8000", "Sec-Fetch-Site": "cross-site"}])
def test_another_sites_page_cannot_post_to_any_route(gate, headers: dict) -> None:
    server, seen = gate
    before = len(seen)
    select = {"context": ITEM["context"], "task": "QA", "candidates": ["a b"]}
    for path, body in (("/v1/chat/completions", CHAT), ("/v1/detect", ITEM), ("/v1/select", select)):
        refused = _post(server, path, body, headers)
        assert refused.status_code == 403, (path, refused.text)
    assert len(seen) == before


def test_this_machines_pages_may_post(gate) -> None:
    server, _ = gate
    for origin in (server.url, "http://localhost:3000", "http://[::1]:8000"):
        answer = _post(server, "/v1/detect", ITEM, {"Origin": origin, "Sec-Fetch-Site": "same-site"})
        assert answer.status_code == 200, (origin, answer.text)
    assert _post(server, "/v1/chat/completions", CHAT, {"Origin": server.url}).status_code == 200


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x", "application/json; charset=latin-1"])
def test_json_is_required_by_content_type_on_every_post_route(gate, content_type: str | None) -> None:
    server, seen = gate
    before = len(seen)
    headers = {} if content_type is None else {"content-type": content_type}
    for path, body in (("/v1/chat/completions", CHAT), ("/v1/detect", ITEM)):
        refused = httpx.post(f"{server.url}{path}", content=json.dumps(body).encode(), headers=headers)
        assert refused.status_code == 415, (path, refused.text)
    assert len(seen) == before
    accepted = httpx.post(f"{server.url}/v1/detect", content=json.dumps(ITEM).encode(),
                          headers={"content-type": "application/json; charset=UTF-8"})
    assert accepted.status_code == 200


def test_two_authorization_headers_are_refused_never_forwarded(gate) -> None:
    server, seen = gate
    before = len(seen)
    two = [("authorization", "Bearer first"), ("authorization", "Bearer second")]
    refused = _post(server, "/v1/chat/completions", CHAT, two)
    assert refused.status_code == 400 and "2 Authorization headers" in refused.json()["error"]["message"]
    assert _post(server, "/v1/detect", ITEM, two).status_code == 400
    assert len(seen) == before
    _post(server, "/v1/chat/completions", CHAT, [("authorization", "Bearer only")])
    assert seen[-1]["authorization"] == "Bearer only"


def test_two_host_headers_are_refused() -> None:
    guard = SiteGuard(None, ["localhost"])
    assert guard.problem("GET", [(b"host", b"localhost"), (b"host", b"attacker.example")])[0] == 400
    assert guard.problem("GET", [])[0] == 400
    assert guard.problem("GET", [(b"host", b"localhost:1")]) is None


def test_host_names_parse_and_allowed_names_are_checked() -> None:
    assert host_name("[::1]:80") == "[::1]" and host_name("[nope]:80") is None and host_name("x:99999") is None
    assert allowed_name(" ::1 ") == "[::1]" and allowed_name("*") == "*"
    for bad in ("a:80", "http://a", "", "a/b"):
        with pytest.raises(InputError, match="--allowed-host"):
            allowed_name(bad)


def test_a_public_bind_without_a_key_is_refused_unless_asked_for() -> None:
    with pytest.raises(InputError, match="--api-key-env is not set.*--allow-public-without-key"):
        ServeSettings(host="0.0.0.0")
    with pytest.raises(InputError, match="--api-key-env is not set"):
        ServeSettings(host="192.168.1.4", upstream="http://127.0.0.1:9/v1")
    assert ServeSettings(host="0.0.0.0", allow_public_without_key=True).api_key is None
    assert ServeSettings(host="0.0.0.0", api_key="k").host_names() == ("localhost", "127.0.0.1", "[::1]")
    assert ServeSettings(host="192.168.1.4", api_key="k").host_names() == ("192.168.1.4",)


def test_the_gate_never_relays_the_upstream_key_from_a_public_bind_without_its_own() -> None:
    with pytest.raises(InputError, match="would send the upstream key"):
        ServeSettings(host="0.0.0.0", upstream="http://127.0.0.1:9/v1", upstream_api_key=UPSTREAM_KEY,
                      allow_public_without_key=True)
    assert ServeSettings(host="0.0.0.0", upstream="http://127.0.0.1:9/v1", upstream_api_key=UPSTREAM_KEY,
                         api_key="gate-key").api_key == "gate-key"


def test_a_public_bind_without_a_key_is_a_loud_warning(monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    import uvicorn

    from ragtruth_spans.serving import server

    monkeypatch.setattr(uvicorn.Server, "run", lambda self: None)
    settings = ServeSettings(host="0.0.0.0", allow_public_without_key=True)
    with caplog.at_level(logging.WARNING, logger="ragtruth_spans"):
        server.run(create_app(EchoDetector(), settings=settings), settings)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("WITHOUT a key" in w for w in warnings), warnings
    assert any("--allowed-host" in w for w in warnings), warnings
