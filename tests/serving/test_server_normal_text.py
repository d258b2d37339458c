"""One text model over HTTP: an item in NFD (or NFC context with an NFD response) gets the decision and
the evidence of its NFC spelling, with every offset and text in the request's own strings."""

from __future__ import annotations

import unicodedata

import httpx
import pytest
from server_thread import ServerThread

from ragtruth_spans.core.text import NormalText
from ragtruth_spans.detectors.similarity.detector import SimilarityDetector
from ragtruth_spans.serving.app import ServeSettings, create_app

TEXTS = [("L'hôtel de Genève a ouvert en 1950. Il a 40 chambres et un petit jardin.",
          "L'hôtel de Genève a ouvert en 1950 et a 40 chambres."),
         ("Le musée de Besançon a ouvert en 1999. Il a 300 tableaux.",
          "Le musée de Besançon a ouvert en 1999. Ses élèves dînent à Orléans.")]


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


@pytest.fixture(scope="module")
def client():
    app = create_app(SimilarityDetector("overlap"), settings=ServeSettings(max_items=4, evidence_mode="lexical"))
    with ServerThread(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        yield http


def _detect(client, context: str, response: str) -> dict:
    answer = client.post("/v1/detect", json={"context": context, "response": response, "task": "Summary",
                                             "evidence": True})
    assert answer.status_code == 200, answer.text
    return answer.json()


@pytest.mark.parametrize(("context_form", "response_form"), [(nfd, nfd), (nfc, nfd), (nfd, nfc)])
@pytest.mark.parametrize(("original_context", "original_response"), TEXTS)
def test_http_decides_the_same_for_any_spelling_in_the_callers_offsets(client, context_form, response_form,
                                                                      original_context, original_response):
    expected = _detect(client, original_context, original_response)
    context, response = context_form(original_context), response_form(original_response)
    got = _detect(client, context, response)
    assert got["score"] == pytest.approx(expected["score"])
    normal_response, normal_context = NormalText.of(response), NormalText.of(context)
    assert [normal_response.span_from_original(s["start"], s["end"]) for s in got["spans"]] == \
        [(s["start"], s["end"]) for s in expected["spans"]]
    for span, want in zip(got["spans"], expected["spans"]):
        assert span["text"] == response[span["start"]:span["end"]] and nfc(span["text"]) == want["text"]
        assert span["verdict"] == want["verdict"]
        assert [normal_context.span_from_original(p["start"], p["end"]) for p in span["evidence"]] == \
            [(p["start"], p["end"]) for p in want["evidence"]]
