"""The service: one request cannot hold it (a cost budget per request, evidence in its own bounded
pool), and nothing silently wrong or leaky (server paths, duplicate keys, two Authorization headers, select ids)."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import ServeSettings, create_app

ITEM = {"context": "Passage 1: The hotel opened in 1999 and has 120 rooms.", "question": "When did it open?",
        "response": "It opened in 1998 and has 120 rooms.", "task": "QA"}


@pytest.fixture(scope="module")
def budget_server():
    settings = ServeSettings(max_items=8, max_chars=1000, max_request_chars=2500, max_evidence_items=2,
                             max_evidence_chars=300, evidence_queue=1, light_evidence_chars=100, api_key="k3y")
    app = create_app(load_detector("numbers"), settings=settings)
    with ServerThread(app) as running, httpx.Client(base_url=running.url, timeout=30,
                                                    headers={"authorization": "Bearer k3y"}) as client:
        yield client, app.state.service


@pytest.mark.parametrize(("body", "message"), [
    ([ITEM | {"context": "x" * 900}] * 3, "--max-request-chars"),
    ([ITEM | {"evidence": True}] * 3, "3 items ask for evidence; the limit is 2 per request (--max-evidence-items)"),
    ([ITEM | {"evidence": True, "context": "y" * 200}] * 2, "400 characters of context; the limit is 300"),
])
def test_the_cost_budget_is_a_413_naming_the_limit(budget_server, body, message) -> None:
    client, _ = budget_server
    response = client.post("/v1/detect", json=body)
    assert response.status_code == 413 and message in response.json()["error"], response.text


def test_the_select_413_names_the_candidates_own_size(budget_server) -> None:
    client, _ = budget_server
    body = {"context": "c" * 500, "task": "Summary", "candidates": ["short", "r" * 600]}
    response = client.post("/v1/select", json=body)
    assert response.status_code == 413, response.text
    assert response.json()["error"].startswith("candidate 1 has 1100 characters (context + question + its response)")


def test_select_echoes_ids_as_given(budget_server) -> None:
    client, _ = budget_server
    body = {"context": "It opened in 1999.", "task": "Summary",
            "candidates": [{"response": "It opened in 1998.", "id": 1}, {"response": "It opened in 1999.", "id": "b"}]}
    answer = client.post("/v1/select", json=body).json()
    assert [c["id"] for c in answer["candidates"]] == [1, "b"] and answer["id"] == "b"


def test_two_authorization_headers_are_refused(budget_server) -> None:
    client, _ = budget_server
    headers = [("authorization", "Bearer wrong"), ("authorization", "Bearer k3y")]
    with httpx.Client(base_url=str(client.base_url), timeout=30) as bare:
        response = bare.post("/v1/detect", json=ITEM, headers=headers)
    assert response.status_code == 400 and "2 Authorization headers" in response.json()["error"]


@pytest.mark.parametrize("content", [
    b'{"context": "a", "response": "b", "task": "QA", "task": "Summary"}',
    b'[{"context": "a", "response": "b", "task": "QA", "id": 1, "id": 2}]',
])
def test_duplicate_keys_in_a_body_are_refused(budget_server, content) -> None:
    client, _ = budget_server
    response = client.post("/v1/detect", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 422 and "duplicate key" in response.json()["error"], response.text


def test_evidence_runs_in_its_own_bounded_pools_and_never_holds_detection(budget_server, monkeypatch) -> None:
    client, service = budget_server
    release, entered = threading.Event(), threading.Event()
    original = service._attach
    heavy_item = ITEM | {"evidence": True, "context": ITEM["context"] + " More text." * 16}  # over 100 characters

    def slow_attach(items, detections):
        if len(items[0].context) > 100:  # only the heavy evidence is held
            entered.set()
            release.wait(30)
        return original(items, detections)

    monkeypatch.setattr(service, "_attach", slow_attach)
    heavy: dict[str, int] = {}

    def send_heavy(name: str) -> None:
        heavy[name] = client.post("/v1/detect", json=heavy_item).status_code

    first = threading.Thread(target=send_heavy, args=("first",))
    first.start()
    assert entered.wait(10)  # the heavy evidence worker is now held
    second = threading.Thread(target=send_heavy, args=("queued",))
    second.start()
    time.sleep(0.5)  # it waits for the one heavy evidence worker (evidence_queue=1)
    try:
        for body in (ITEM, ITEM | {"evidence": True}):  # detection, and a small evidence request, do not wait
            started = time.perf_counter()
            small = client.post("/v1/detect", json=body)
            assert small.status_code == 200 and time.perf_counter() - started < 2.0, small.text
        assert "evidence" in json.dumps(client.post("/v1/detect", json=ITEM | {"evidence": True}).json())
        third = client.post("/v1/detect", json=heavy_item)
        assert third.status_code == 503 and "evidence" in third.json()["error"]  # bounded: no pile-up
        assert client.get("/health").status_code == 200
    finally:
        release.set()
        first.join(30)
        second.join(30)
    assert heavy == {"first": 200, "queued": 200}


def test_v1_model_shows_no_server_path_anywhere(tmp_path) -> None:
    secret = str(tmp_path / "secret-dir")
    run_info = {"data_sha256": {f"{secret}/train.jsonl": "ab", f"{secret}/dev.jsonl": "cd"},
                "base": f"file://{secret}/model.gguf", "note": f"converted from {secret}/model.gguf (Q4)",
                "list": [f"{secret}/a", "relative/b"]}
    with ServerThread(create_app(load_detector("numbers"), run_info=run_info)) as running:
        text = httpx.get(f"{running.url}/v1/model").text
    assert str(tmp_path) not in text and "secret-dir" not in text, text
    model = json.loads(text)["run_info"]
    assert model["data_sha256"] == {"train.jsonl": "ab", "dev.jsonl": "cd"}
    assert model["base"] == "model.gguf" and model["note"] == "converted from model.gguf (Q4)"
    assert model["list"] == ["a", "relative/b"]
