"""What the gate says about the answer, against a misbehaving upstream: any mix of SSE line ends, the choice with
index 0 wherever it is listed, JSON answered to a stream request, the upstream's rate-limit headers, a full
connection pool named as such, and a schema and errors in OpenAI's shape."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import httpx
import pytest
from fake_upstream import ANSWER, CONTEXT, RATE_HEADERS, fake_upstream
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving import proxy
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings


def gate_app(upstream_url: str, **settings) -> object:
    return create_app(load_detector("numbers"), settings=ServeSettings(upstream=f"{upstream_url}/v1", **settings))


@pytest.fixture(scope="module")
def servers():
    app, state = fake_upstream()
    with ServerThread(app) as up, ServerThread(gate_app(up.url)) as gate:
        yield gate, up, state


def _post(gate, model: str, stream: bool = False, **extra) -> httpx.Response:
    body = {"model": model, "messages": [], "context": CONTEXT, "stream": stream} | extra
    return httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=30)


def _chunks(response: httpx.Response) -> tuple[list[dict], list[str]]:
    events = [e for e in response.text.split("\n\n") if e]
    return [json.loads(e.removeprefix("data: ")) for e in events if e != "data: [DONE]"], events


def test_events_ending_in_any_mix_of_line_ends_are_split_and_checked(servers) -> None:
    gate, _, _ = servers
    response = _post(gate, "line-ends", stream=True)
    chunks, events = _chunks(response)
    assert "\r" not in response.text and events[-1] == "data: [DONE]"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if "hallucinations" not in c)
    assert text == ANSWER
    final = chunks[-1]["hallucinations"]
    assert final["object"] == "hallucinations" and [s["text"] for s in final["spans"]] == ["1998", "3"]


def test_the_plain_route_checks_the_choice_with_index_0_wherever_it_is_listed(servers) -> None:
    gate, _, _ = servers
    answer = _post(gate, "n2").json()
    found = answer["hallucinations"]
    assert found["index"] == 0 and found["spans"] == []  # index 0 is the good answer, listed second


@pytest.mark.parametrize("stream", [False, True])
def test_json_answered_to_a_stream_request_is_passed_on_as_json_and_checked(servers, stream: bool) -> None:
    gate, _, _ = servers
    response = _post(gate, "json", stream=stream)
    assert response.headers["content-type"].startswith("application/json") and "data:" not in response.text
    answer = response.json()
    assert answer["choices"][0]["message"]["content"] == ANSWER
    assert [s["text"] for s in answer["hallucinations"]["spans"]] == ["1998", "3"]
    assert response.headers["x-hallucination-check"] == "checked"


@pytest.mark.parametrize("model, status", [("limited", 429), ("limited-ok", 200)])
@pytest.mark.parametrize("stream", [False, True])
def test_the_upstreams_rate_limit_and_request_id_headers_come_back(servers, model, status, stream) -> None:
    gate, _, _ = servers
    response = _post(gate, model, stream=stream)
    assert response.status_code == status
    for name, value in RATE_HEADERS.items():
        assert response.headers.get(name) == value, name


def test_a_full_connection_pool_to_the_upstream_is_a_503_naming_the_cap(monkeypatch) -> None:
    real = proxy.add_gate_route

    def small_pool(app, service, upstream, detection_out):
        return real(app, service, dataclasses.replace(upstream, connections=2, pool_timeout=0.3), detection_out)

    monkeypatch.setattr(proxy, "add_gate_route", small_pool)
    app, _ = fake_upstream()
    with ServerThread(app) as up, ServerThread(gate_app(up.url)) as gate:
        body = {"model": "slow", "stream": True, "messages": [], "context": CONTEXT}
        opened, stop = threading.Barrier(3), threading.Event()

        def hold() -> None:
            with httpx.stream("POST", f"{gate.url}/v1/chat/completions", json=body, timeout=30) as response:
                assert response.status_code == 200
                opened.wait(10)
                stop.wait(10)

        holders = [threading.Thread(target=hold) for _ in range(2)]
        for holder in holders:
            holder.start()
        opened.wait(10)
        started = time.monotonic()
        refused = _post(gate, "ok")
        waited = time.monotonic() - started
        stop.set()
        for holder in holders:
            holder.join(10)
    error = refused.json()["error"]
    assert refused.status_code == 503 and refused.headers["retry-after"] and waited < 5
    assert "2 connections" in error["message"] and "--max-connections" in error["message"]
    assert error["type"] == "server_busy"


def test_the_route_declares_its_body_and_statuses_and_errs_in_openais_shape(servers) -> None:
    gate, _, _ = servers
    schema = httpx.get(f"{gate.url}/openapi.json").json()
    operation = schema["paths"]["/v1/chat/completions"]["post"]
    body = operation["requestBody"]["content"]["application/json"]["schema"]
    assert {"model", "messages", "context", "question", "task", "stream", "n"} <= set(body["properties"])
    assert {"200", "413", "415", "422", "502", "503", "504"} <= set(operation["responses"])
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    assert operation["responses"]["422"]["content"]["application/json"]["schema"]["$ref"].endswith("/OpenAIError")
    for response in (httpx.get(f"{gate.url}/v1/chat/completions"),  # 405 from the router
                     httpx.post(f"{gate.url}/v1/chat/completions", content=b"{", timeout=30,
                                headers={"content-type": "application/json"})):
        error = response.json()["error"]
        assert response.status_code in (405, 422) and isinstance(error, dict), response.text
        assert error["message"] and error["type"]
