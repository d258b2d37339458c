"""``POST /v1/detect`` with ``"evidence": true``: each span of the answer carries its verdict and passages (characters
of the context), only for the items that asked; a bad value of the field is a 422."""

from __future__ import annotations

import httpx
import pytest
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import ServeSettings, create_app

CONTEXT = "Passage 1: Le Café Zoë 🍣 opened in 1999.\r\nIt has 120 rooms."
ITEM = {"context": CONTEXT, "question": "When did it open?", "response": "Zoë's café opened in 2003.", "task": "QA"}


@pytest.fixture(scope="module")
def client():
    app = create_app(load_detector("numbers"), settings=ServeSettings(max_items=4, evidence_mode="lexical"))
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        yield http


def test_evidence_on_request(client) -> None:
    one = client.post("/v1/detect", json=ITEM | {"evidence": True})
    assert one.status_code == 200, one.text
    [span] = one.json()["spans"]
    assert span["text"] == "2003" and span["verdict"] == "contradicted" and "1999" in span["reason"]
    best = span["evidence"][0]
    assert CONTEXT[best["start"]:best["end"]] == "Passage 1: Le Café Zoë 🍣 opened in 1999."
    assert [CONTEXT[a:b] for a, b in best["conflicts"]] == ["1999"]
    many = client.post("/v1/detect", json=[ITEM, ITEM | {"evidence": True, "id": 2}])
    first, second = many.json()["results"]
    assert not {"verdict", "reason", "evidence"} & set(first["spans"][0])
    assert second["spans"][0]["verdict"] == "contradicted" and second["id"] == 2
    assert client.get("/v1/model").json()["serving"]["evidence_mode"] == "lexical"


def test_a_bad_evidence_field_is_422(client) -> None:
    bad = client.post("/v1/detect", json=ITEM | {"evidence": "please"})
    assert bad.status_code == 422 and "evidence" in bad.json()["error"]
