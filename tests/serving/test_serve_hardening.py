"""The service: one bad request never harms another (batch isolation), hostile bodies get one clear
4xx, and the server says nothing about itself that a client should not know."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from server_thread import EchoDetector, ServerThread

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import ServeSettings, create_app
from ragtruth_spans.serving.batcher import MicroBatcher, TooLarge
from ragtruth_spans.serving.body import without_server_paths

ITEM = {"context": "Passage 1: The hotel opened in 1999 and has 120 rooms.", "question": "When did it open?",
        "response": "It opened in 1998 and has 120 rooms.", "task": "QA"}


def _items(*responses: str) -> list[DetectItem]:
    return [DetectItem(context="c", response=r, task="QA") for r in responses]


def test_a_poisoned_item_fails_only_its_own_request_in_a_shared_batch() -> None:
    gate = threading.Event()
    detector = EchoDetector(gate=gate, fail_on="boom")
    batcher = MicroBatcher(detector.detect_batch, max_batch=8, max_wait_ms=5).start()
    first = batcher.submit(_items("warm up"))
    assert detector.started.wait(5)  # the worker is busy: the three requests below share the next batch
    good1, bad, good2 = batcher.submit(_items("a x", "b y")), batcher.submit(_items("boom")), \
        batcher.submit(_items("c z"))
    gate.set()
    assert first.result(5)[0].diagnostics["seen"] == "warm up"
    assert [d.diagnostics["seen"] for d in good1.result(5)] == ["a x", "b y"]
    assert [d.diagnostics["seen"] for d in good2.result(5)] == ["c z"]
    with pytest.raises(RuntimeError, match="secret internal detail"):
        bad.result(5)
    assert ["a x", "b y", "boom", "c z"] in detector.batches  # they were batched together, then isolated
    assert batcher.stats.isolated_batches == 1 and batcher.stats.failed_items == 1 and batcher.stats.items == 4
    batcher.close(5)


def test_a_request_the_queue_can_never_hold_is_too_large_not_overloaded() -> None:
    batcher = MicroBatcher(EchoDetector().detect_batch, max_queue=2).start()
    with pytest.raises(TooLarge, match="3 items in one request; the queue holds at most 2"):
        batcher.submit(_items("a", "b", "c"))
    batcher.close(5)


def test_settings_that_would_answer_503_forever_are_refused_at_start_up() -> None:
    with pytest.raises(InputError, match="--max-queue 2 is smaller than --max-items 8"):
        ServeSettings(max_items=8, max_queue=2)


@pytest.fixture(scope="module")
def server():
    app = create_app(load_detector("numbers"), settings=ServeSettings(max_items=4, max_chars=2000,
                                                                      max_body_bytes=50_000))
    with ServerThread(app) as running, httpx.Client(base_url=running.url, timeout=30) as client:
        yield client


@pytest.mark.parametrize(("body", "field", "message"), [
    (ITEM | {"question": "q\ud800"}, "question", "lone surrogate"),
    (ITEM | {"id": "x\udfff"}, "id", "lone surrogate"),
    (ITEM | {"id": True}, "id", "must be a string or an integer"),
    (ITEM | {"id": 1.5}, "id", "must be a string or an integer"),
    ({"context": "c", "task": "QA", "candidates": ["ok", {"response": "r", "id": "\ud800"}]}, "candidates[1].id",
     "lone surrogate"),
    ({"context": "c", "task": "QA", "candidates": ["ok"], "seed": True}, "seed", "valid integer"),
])
def test_lone_surrogates_and_coercions_are_refused_with_422(server, body, field, message) -> None:
    path = "/v1/select" if "candidates" in body else "/v1/detect"
    content = json.dumps(body).encode()  # escapes the surrogate as \ud800
    response = server.post(path, content=content, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert any(d["field"] == field and message in d["message"] for d in response.json()["detail"]), response.json()


def test_a_poisoned_request_next_to_good_ones_never_fails_them(server) -> None:
    bad = json.dumps([ITEM, ITEM | {"question": "\ud800"}]).encode()
    results: dict[str, int] = {}

    def send(name: str) -> None:
        if name == "bad":
            results[name] = server.post("/v1/detect", content=bad,
                                        headers={"content-type": "application/json"}).status_code
        else:
            results[name] = server.post("/v1/detect", json=ITEM).status_code

    threads = [threading.Thread(target=send, args=(n,)) for n in ("g1", "bad", "g2", "g3")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == {"g1": 200, "bad": 422, "g2": 200, "g3": 200}


@pytest.mark.parametrize(("content", "message"), [
    (b'{"context": ' + b"1" * 5000 + b"}", "Exceeds the limit"),
    (b"[" * 3000 + b"]" * 3000, "nested too deeply"),
    (b'{"context": NaN}', "NaN is not JSON"),
    (b"", "the body is empty"),
])
def test_json_the_parser_refuses_late_is_a_422_not_a_500(server, content, message) -> None:
    response = server.post("/v1/detect", content=content, headers={"content-type": "application/json"})
    assert response.status_code == 422 and message in response.json()["error"], response.text


def test_form_bodies_get_415_and_limits_apply_before_the_models(server) -> None:
    form = server.post("/v1/detect", data={"context": "c", "response": "r", "task": "QA"})
    assert form.status_code == 415 and "application/json" in form.json()["error"]
    # 5 malformed items: the item limit answers first (413), the models never see the list
    assert server.post("/v1/detect", json=[{"x": 1}] * 5).status_code == 413


def test_unknown_field_names_are_never_echoed_whole(server) -> None:
    key = "k" * 20_000
    response = server.post("/v1/detect", json=ITEM | {key: 1})
    assert response.status_code == 422
    assert len(response.text) < 1000 and key not in response.text and "Extra inputs" in response.text


def test_model_hides_server_paths_and_docs_are_off_by_default(server) -> None:
    assert server.get("/docs").status_code == 404 and server.get("/redoc").status_code == 404
    assert server.get("/openapi.json").status_code == 200
    info = {"run_dir": "/srv/secret/runs/model-a", "data": {"train": "/home/u/data/train.jsonl"},
            "python": "/opt/venv/bin/python", "relative": "runs/model-a", "name": "numbers"}
    assert without_server_paths(info) == {"run_dir": "model-a", "data": {"train": "train.jsonl"}, "python": "python",
                                          "relative": "runs/model-a", "name": "numbers"}
    with ServerThread(create_app(load_detector("numbers"), run_info={"data": "/srv/secret/train.jsonl"},
                                 settings=ServeSettings(docs=True))) as running:
        model = httpx.get(f"{running.url}/v1/model").json()
        assert model["run_info"] == {"data": "train.jsonl"} and "/srv" not in str(model)
        assert httpx.get(f"{running.url}/docs").status_code == 200


class Unjudging(Detector):
    """Could judge nothing: every detection carries an error."""

    kind = "unjudging"

    def detect_batch(self, items: Any) -> list[Detection]:
        return [Detection(spans=[], score=None, error="endpoint failed") for _ in items]


def test_select_with_no_judgeable_candidate_says_so_instead_of_naming_a_winner() -> None:
    with ServerThread(create_app(Unjudging())) as running:
        body = {"context": "c", "task": "QA", "candidates": ["one", "two"]}
        response = httpx.post(f"{running.url}/v1/select", json=body, timeout=30)
    assert response.status_code == 200
    answer = response.json()
    assert answer["no_judgement"] is True and answer["index"] is None and answer["id"] is None
    assert answer["scores"] == [None, None] and answer["detection_failed"] == [0, 1]
