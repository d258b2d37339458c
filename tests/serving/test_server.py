"""The HTTP service on a real server (uvicorn on 127.0.0.1, started and stopped by each test): every endpoint,
every error status, micro-batching under concurrent clients, back-pressure, graceful shutdown, the command line
in a subprocess, and the tiny generative run end to end."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from server_thread import EchoDetector, ServerThread, free_port

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.runs.run_info import read_run_info
from ragtruth_spans.serving.app import ServeSettings, create_app

ITEM = {"context": "Passage 1: The hotel opened in 1999 and has 120 rooms.", "question": "When did it open?",
        "response": "It opened in 1998 and has 120 rooms.", "task": "QA"}
AUTH = {"Authorization": "Bearer test-key"}


@pytest.fixture(scope="module")
def numbers_server():
    app = create_app(load_detector("numbers"), settings=ServeSettings(max_items=4, max_chars=2000,
                                                                      max_body_bytes=50_000, api_key="test-key"))
    with ServerThread(app) as server, httpx.Client(base_url=server.url, headers=AUTH, timeout=30) as client:
        yield server, client


def test_detect_one_item_and_a_list(numbers_server) -> None:
    _, client = numbers_server
    one = client.post("/v1/detect", json=ITEM | {"id": "a"})
    assert one.status_code == 200
    assert one.json() == {"id": "a", "spans": [{"start": 13, "end": 17, "text": "1998", "type": "Evident Conflict",
                                                "score": 1.0}], "score": 1.0, "error": None, "diagnostics": {},
                          "detector": {"kind": "rules", "name": "numbers", "fingerprint": None}}
    many = client.post("/v1/detect", json=[ITEM, ITEM | {"response": "It has 120 rooms.", "id": 2}])
    assert many.status_code == 200
    results = many.json()["results"]
    assert [r["id"] for r in results] == [None, 2] and [len(r["spans"]) for r in results] == [1, 0]


def test_select_model_health_and_docs(numbers_server) -> None:
    _, client = numbers_server
    chosen = client.post("/v1/select", json={"context": ITEM["context"], "task": "Summary", "candidates": [
        "It opened in 1998.", {"response": "It opened in 1999 with 120 rooms.", "id": "good"}]})
    assert chosen.status_code == 200
    body = chosen.json()
    assert body["index"] == 1 and body["id"] == "good" and body["scores"] == [1.0, 0.0]
    assert body["candidates"][0]["spans"] == [{"start": 13, "end": 17, "type": "Evident Conflict", "score": 1.0}]
    model = client.get("/v1/model").json()
    assert model["detector"] == {"kind": "rules", "name": "numbers"} and model["run_info"] is None
    assert model["serving"]["max_items"] == 4 and model["serving"]["auth"] is True and "api_key" not in model["serving"]
    health = httpx.get(f"{numbers_server[0].url}/health").json()  # no token needed
    assert health["status"] == "ok" and health["stats"]["items"] >= 1
    spec = httpx.get(f"{numbers_server[0].url}/openapi.json").json()
    assert {"/v1/detect", "/v1/select", "/v1/model", "/health"} <= set(spec["paths"])
    assert httpx.get(f"{numbers_server[0].url}/docs").status_code == 404  # off by default: its page loads a CDN


@pytest.mark.parametrize(("body", "field", "message"), [
    (ITEM | {"task": "Chat"}, "task", "Input should be 'QA', 'Summary' or 'Data2txt'"),
    ({k: v for k, v in ITEM.items() if k != "response"}, "response", "Field required"),
    (ITEM | {"response": ""}, "response", "at least 1 character"),
    (ITEM | {"context": 5}, "context", "valid string"),
    (ITEM | {"colour": "red"}, "colour", "Extra inputs are not permitted"),
    ([ITEM, ITEM | {"task": None}], "[1].task", "Input should be"),
    ({"context": "c", "task": "QA", "candidates": []}, "candidates", "at least 1 item"),
])
def test_malformed_bodies_get_422_naming_the_field(numbers_server, body, field, message) -> None:
    _, client = numbers_server
    path = "/v1/select" if isinstance(body, dict) and "candidates" in body else "/v1/detect"
    response = client.post(path, json=body)
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert any(d["field"] == field and message in d["message"] for d in detail), detail
    assert all(set(d) == {"field", "message"} for d in detail)  # the request's own text is not echoed back


def test_invalid_json_and_empty_list_get_422(numbers_server) -> None:
    _, client = numbers_server
    bad = client.post("/v1/detect", content=b'{"context": ', headers={"content-type": "application/json"})
    assert bad.status_code == 422 and "invalid JSON" in bad.json()["error"]
    empty = client.post("/v1/detect", json=[])
    assert empty.status_code == 422 and "empty" in empty.json()["error"]


def test_oversized_requests_get_413(numbers_server) -> None:
    _, client = numbers_server
    too_many = client.post("/v1/detect", json=[ITEM] * 5)
    assert too_many.status_code == 413 and "5 items in one request; the limit is 4" in too_many.json()["error"]
    too_long = client.post("/v1/detect", json=ITEM | {"context": "x" * 2500})
    assert too_long.status_code == 413 and "limit is 2000" in too_long.json()["error"]
    too_big = client.post("/v1/detect", json=ITEM | {"context": "x" * 60_000})
    assert too_big.status_code == 413 and "over the limit of 50000 bytes" in too_big.json()["error"]
    chunked = client.post("/v1/detect", content=iter([b'{"context": "', b"x" * 60_000, b'"}']),
                          headers={"content-type": "application/json"})
    assert chunked.status_code == 413
    candidates = client.post("/v1/select", json={"context": "c", "task": "QA", "candidates": ["a"] * 5})
    assert candidates.status_code == 413


def test_bearer_token_is_required_on_v1(numbers_server) -> None:
    server, _ = numbers_server
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "test-key"}):
        response = httpx.post(f"{server.url}/v1/detect", json=ITEM, headers=headers)
        assert response.status_code == 401 and response.headers["www-authenticate"] == "Bearer"
        assert "bearer token" in response.json()["error"]
    assert httpx.get(f"{server.url}/v1/model").status_code == 401
    assert httpx.post(f"{server.url}/v1/detect", content=b"{bad", headers={}).status_code == 401  # before parsing


def test_detector_failure_gives_500_with_an_id_and_no_trace(caplog) -> None:
    app = create_app(EchoDetector(fail_on="boom"))
    with caplog.at_level(logging.ERROR, logger="ragtruth_spans.serving"), ServerThread(app) as server:
        response = httpx.post(f"{server.url}/v1/detect", json=ITEM | {"response": "boom"})
        fine = httpx.post(f"{server.url}/v1/detect", json=ITEM)
    assert response.status_code == 500
    error = response.json()["error"]
    assert "error_id" in error and "secret internal detail" not in response.text and "Traceback" not in response.text
    error_id = error.split("error_id ")[1].split(")")[0]
    logged = [r for r in caplog.records if error_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None  # the trace is in the server log, under the same id
    assert fine.status_code == 200


def test_concurrent_clients_are_micro_batched_and_each_answered_once() -> None:
    detector = EchoDetector(delay=0.05)
    app = create_app(detector, settings=ServeSettings(max_batch=16, max_wait_ms=20))
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        def call(i: int) -> dict:
            return client.post("/v1/detect", json=ITEM | {"response": f"w{i} rest", "id": i}).json()
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(call, range(64)))
        stats = client.get("/health").json()["stats"]
    assert [a["id"] for a in answers] == list(range(64))
    assert all(a["diagnostics"]["seen"] == f"w{a['id']} rest" and a["spans"][0]["text"] == f"w{a['id']}"
               for a in answers)
    assert stats["items"] == 64 and stats["requests"] == 64
    assert stats["batches"] < 64 and stats["largest_batch"] > 1  # requests shared detect_batch calls


def test_full_queue_gives_503_and_shutdown_finishes_requests_in_flight() -> None:
    gate = threading.Event()
    detector = EchoDetector(gate=gate)
    app = create_app(detector, settings=ServeSettings(max_batch=1, max_wait_ms=0, max_queue=1, max_items=1))
    server = ServerThread(app).__enter__()
    with ThreadPoolExecutor(2) as pool:
        in_flight = pool.submit(httpx.post, f"{server.url}/v1/detect", json=ITEM | {"response": "first"}, timeout=30)
        assert detector.started.wait(10)
        queued = pool.submit(httpx.post, f"{server.url}/v1/detect", json=ITEM | {"response": "second"}, timeout=30)
        deadline = time.monotonic() + 10
        while httpx.get(f"{server.url}/health").json()["pending_items"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        busy = httpx.post(f"{server.url}/v1/detect", json=ITEM, timeout=30)
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        assert "server busy" in busy.json()["error"]
        server.server.should_exit = True  # graceful shutdown while two requests are in flight
        time.sleep(0.3)
        gate.set()
        assert in_flight.result(30).status_code == 200 and queued.result(30).status_code == 200
        assert queued.result().json()["diagnostics"]["seen"] == "second"
    server.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/health", timeout=2)


def _serve(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ragtruth_spans", "serve", *args], env=os.environ | env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_command_line_serves_and_stops_on_sigterm() -> None:
    port = free_port()
    process = _serve(["--model", "numbers", "--port", str(port), "--api-key-env", "RS_TEST_KEY"],
                     {"RS_TEST_KEY": "test-key"})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.2)
        answer = httpx.post(f"http://127.0.0.1:{port}/v1/detect", json=ITEM, headers=AUTH)
        assert answer.status_code == 200 and answer.json()["spans"][0]["text"] == "1998"
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0]
    assert process.returncode in (0, -signal.SIGTERM), output  # uvicorn re-raises the signal once it has stopped
    assert "serving rules detector numbers" in output and "shutting down" in output
    assert "Application shutdown complete" in output and "Traceback" not in output


def test_command_line_refuses_an_unset_key_variable() -> None:
    process = _serve(["--model", "numbers", "--api-key-env", "RS_UNSET_VARIABLE"], {})
    output = process.communicate(timeout=60)[0]
    assert process.returncode == 2
    assert output.strip() == ("error: field '--api-key-env': environment variable RS_UNSET_VARIABLE is not set or "
                              "empty (it must hold the API key)")


def test_generative_run_end_to_end(overfit_run) -> None:
    detector = load_detector(overfit_run.output_dir, device="cpu", max_new_tokens=128)
    run_info = read_run_info(overfit_run.output_dir)
    records = [r for r in overfit_run.records if r.id in ("sum-1", "qa-2")]
    with ServerThread(create_app(detector, run_info=run_info)) as server, \
            httpx.Client(base_url=server.url, timeout=120) as client:
        model = client.get("/v1/model").json()
        answer = client.post("/v1/detect", json=[{"context": r.context, "question": r.question, "response": r.response,
                                                  "task": r.task_type, "id": r.id} for r in records])
        clean = records[1]
        chosen = client.post("/v1/select", json={"context": clean.context, "question": clean.question, "task": "QA",
                                                 "candidates": [clean.response, clean.response + " It is 9 km high."],
                                                 "strategy": "max-confidence"})
    assert model["fingerprint"] == run_info["fingerprint"] and model["detector"]["kind"] == "generative"
    assert model["run_info"]["kind"] == "generative"
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["detector"] == {"kind": "generative", "name": None, "fingerprint": run_info["fingerprint"]}
    assert chosen.status_code == 200, chosen.text
    selection = chosen.json()
    assert selection["index"] in (0, 1) and len(selection["candidates"]) == 2
    assert all(0.0 <= c["score"] <= 1.0 for c in selection["candidates"])  # max-confidence: the response scores
    failed = selection["detection_failed"]  # a candidate the detector could not judge ranks last (score None)
    assert selection["scores"] == [None if i in failed else c["score"] for i, c in enumerate(selection["candidates"])]
    assert 0 not in failed and (selection["index"] == 0 or not failed)
    assert selection["detector"]["fingerprint"] == run_info["fingerprint"]
    for result, record in zip(body["results"], records):
        assert [(s["start"], s["end"], s["text"]) for s in result["spans"]] == \
               [(s.start, s.end, s.text) for s in record.spans], record.id
        assert 0.0 <= result["score"] <= 1.0 and result["diagnostics"]["parse_ok"] is True
