"""The gate's block policy never fails open: an answer it cannot check is withheld (replace) or marked (annotate),
every choice is checked, streamed and plain answers agree, and load never decides a verdict."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from fake_upstream import ANSWER, CONTEXT, GOOD, fake_upstream
from server_thread import EchoDetector, ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app
from ragtruth_spans.serving.settings import ServeSettings

UNCHECKABLE = ["tool_calls", "parts", "refusal", "empty", "too-long"]


@pytest.fixture(scope="module")
def upstream():
    app, _ = fake_upstream()
    with ServerThread(app) as server:
        yield server


def gate_app(upstream, detector=None, **settings):
    return create_app(detector or load_detector("numbers"),
                      settings=ServeSettings(upstream=f"{upstream.url}/v1", **settings))


def ask(gate, model: str, stream: bool) -> tuple[dict[int, str], dict[int, dict], httpx.Response]:
    """The text each choice delivers (streamed: its deltas joined; tool calls and refusals included) and the
    final ``hallucinations`` of each choice."""
    body = {"model": "ok" if model == "too-long" else model, "messages": [], "context": CONTEXT, "stream": stream}
    response = httpx.post(f"{gate.url}/v1/chat/completions", json=body, timeout=60)
    texts: dict[int, str] = {}
    extras: dict[int, str] = {}  # streamed: tool calls, refusals, content parts
    found: dict[int, dict] = {}
    if not stream:
        answer = response.json()
        for choice in answer["choices"]:
            message = choice["message"]
            content = message.get("content")
            texts[choice["index"]] = (content if isinstance(content, str) else json.dumps(content)) + \
                json.dumps(message.get("tool_calls")) + json.dumps(message.get("refusal"))
            found[choice["index"]] = choice.get("hallucinations", answer["hallucinations"])
        return texts, found, response
    for event in response.text.split("\n\n"):
        if not event or event == "data: [DONE]":
            continue
        chunk = json.loads(event.removeprefix("data: "))
        for choice in chunk["choices"]:
            delta, index = choice["delta"], choice["index"]
            content = delta.get("content")
            texts[index] = texts.get(index, "") + (content if isinstance(content, str) else "")
            others = {k: v for k, v in delta.items() if k in ("tool_calls", "refusal") or (k == "content" and
                      not isinstance(v, str) and v is not None)}
            extras[index] = extras.get(index, "") + (json.dumps(others) if others else "")
        if chunk.get("hallucinations", {}).get("object") == "hallucinations":
            found[chunk["hallucinations"]["index"]] = chunk["hallucinations"]
    return {i: text + extras.get(i, "") for i, text in texts.items()}, found, response


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", UNCHECKABLE)
def test_an_answer_that_cannot_be_checked_is_withheld_in_replace_mode(upstream, model, stream) -> None:
    limits = {"max_chars": 120} if model == "too-long" else {}  # the context fits, context and answer do not
    with ServerThread(gate_app(upstream, block_above=0.5, block_mode="replace", **limits)) as gate:
        texts, found, response = ask(gate, model, stream)
    assert "withheld by the hallucination gate: the answer could not be checked" in texts[0]
    assert "1998" not in texts[0]  # nor in its tool calls or refusal
    assert found[0]["status"] == "unchecked" and found[0]["blocked"] is True and found[0]["score"] is None
    assert found[0]["error"].startswith("not checked")
    if not stream:
        assert response.headers["x-hallucination-check"].startswith("unchecked; ")


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("model", UNCHECKABLE)
def test_an_answer_that_cannot_be_checked_says_so_in_annotate_mode_and_in_no_mode(upstream, model, stream) -> None:
    limits = {"max_chars": 120} if model == "too-long" else {}
    with ServerThread(gate_app(upstream, block_above=0.5, block_mode="annotate", **limits)) as gate:
        texts, found, _ = ask(gate, model, stream)
    assert "[hallucination gate: this answer was not checked (" in texts[0] and found[0]["blocked"] is True
    with ServerThread(gate_app(upstream, **limits)) as gate:
        texts, found, _ = ask(gate, model, stream)
    assert "hallucination gate" not in texts[0]
    assert found[0]["status"] == "unchecked" and found[0]["blocked"] is False and found[0]["error"]


@pytest.mark.parametrize("mode", ["replace", "annotate"])
def test_every_choice_is_checked_and_streamed_and_plain_agree(upstream, mode: str) -> None:
    with ServerThread(gate_app(upstream, block_above=0.1, block_mode=mode)) as gate:
        plain_texts, plain, _ = ask(gate, "n2", stream=False)
        streamed_texts, streamed, _ = ask(gate, "n2", stream=True)
    for texts, found in ((plain_texts, plain), (streamed_texts, streamed)):
        assert set(found) == {0, 1} and found[0]["index"] == 0 and found[1]["index"] == 1
        assert found[0]["blocked"] is False and GOOD in texts[0] and "hallucination gate" not in texts[0]
        assert found[1]["blocked"] is True and [s["text"] for s in found[1]["spans"]] == ["1998", "3"]
        if mode == "replace":
            assert "1998" not in texts[1] and "withheld" in texts[1] and found[1]["answer"] == ANSWER
        else:
            assert ANSWER in texts[1] and "may state things its sources do not support" in texts[1]
    for index in (0, 1):
        assert {k: plain[index][k] for k in ("spans", "score", "blocked", "status")} == \
            {k: streamed[index][k] for k in ("spans", "score", "blocked", "status")}


@pytest.mark.parametrize("stream", [False, True])
def test_a_detector_error_is_an_unchecked_answer_withheld(upstream, stream: bool) -> None:
    detector = EchoDetector(fail_on=ANSWER)
    with ServerThread(gate_app(upstream, detector, block_above=0.9, block_mode="replace")) as gate:
        texts, found, _ = ask(gate, "ok", stream)
    assert "1998" not in texts[0] and found[0]["status"] == "unchecked" and "internal error" in found[0]["error"]


@pytest.mark.parametrize("mode", ["replace", "annotate"])
def test_under_load_every_answer_is_checked_and_none_is_delivered_unjudged(upstream, mode: str) -> None:
    """30 concurrent requests against a queue of one item and one evidence slot: each check waits its turn."""
    detector = EchoDetector(delay=0.02)  # flags each answer's first word, score 0.5
    limits = {"max_items": 1, "max_queue": 1, "max_batch": 1, "evidence_workers": 1, "evidence_queue": 1}
    with ServerThread(gate_app(upstream, detector, block_above=0.1, block_mode=mode, **limits)) as gate, \
            ThreadPoolExecutor(30) as pool:
        results = list(pool.map(lambda i: ask(gate, "ok", i % 2 == 1), range(30)))
    for texts, found, _ in results:
        assert found[0]["status"] == "checked" and found[0]["score"] == 0.5 and found[0]["blocked"] is True
        assert ("1998" not in texts[0]) if mode == "replace" else ("may state things" in texts[0])
