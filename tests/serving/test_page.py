"""The page to try a detector (``GET /``): self-contained (no external URL, a CSP that allows only its own inline
style and script), served only when asked for (``ui``; the CLI's default: loopback hosts only), and it tells no
more than ``/health`` does."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest
from fastapi.testclient import TestClient

from ragtruth_spans.cli.serve import is_loopback, page_wanted
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import ServeSettings, create_app
from ragtruth_spans.serving.page import EXAMPLES


def _client(**settings) -> TestClient:
    return TestClient(create_app(load_detector("numbers"), settings=ServeSettings(**settings)),
                      base_url="http://localhost")


def _inline(html: str, tag: str) -> str:
    return re.search(rf"<{tag}>(.*?)</{tag}>", html, re.S).group(1)


def test_the_page_is_one_self_contained_html_document() -> None:
    with _client(ui=True) as client:
        page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
    html = page.text
    assert re.findall(r"(?:https?:)?//[\w.-]+\.\w+", html) == []  # no CDN, no external URL of any kind
    assert not re.search(r"<(?:link|img|iframe)\b|\bsrc=", html)
    for tag, directive in (("style", "style-src"), ("script", "script-src")):
        digest = base64.b64encode(hashlib.sha256(_inline(html, tag).encode()).digest()).decode()
        assert f"{directive} 'sha256-{digest}'" in page.headers["content-security-policy"]
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    for label in ("context", "question", "response", "task", "example"):
        assert f'<label for="{label}"' in html
    assert all(example["name"] in html for example in EXAMPLES) and 'id="api-key"' not in html


def test_the_page_is_off_unless_asked_for_and_not_in_the_schema() -> None:
    with _client() as client:
        assert client.get("/").status_code == 404
    with _client(ui=True) as client:
        assert "/" not in client.get("/openapi.json").json()["paths"]


def test_with_a_token_the_page_asks_for_it_and_the_api_still_requires_it() -> None:
    with _client(ui=True, api_key="secret-key") as client:
        html = client.get("/").text
        assert 'id="api-key"' in html and "secret-key" not in html
        assert client.post("/v1/detect", json={"context": "a 1", "response": "a 2", "task": "QA"}).status_code == 401
        assert client.get("/v1/model").status_code == 401


def test_the_page_says_no_more_than_health() -> None:
    with _client(ui=True, max_items=3) as client:
        html, health = client.get("/").text, client.get("/health").json()
    assert health["detector"]["name"] in html
    assert "max_items" not in html and "load_options" not in html  # limits and settings stay behind /v1/model


def test_every_example_has_a_number_the_rule_flags() -> None:
    detector = load_detector("numbers")
    for example in EXAMPLES:
        detection = detector.detect(context=example["context"], response=example["response"], task=example["task"],
                                    question=example["question"] or None)
        assert len(detection.spans) == 1, example["name"]


@pytest.mark.parametrize(("ui", "host", "served"), [
    (None, "127.0.0.1", True), (None, "localhost", True), (None, "::1", True), (None, "[::1]", True),
    (None, "0.0.0.0", False), (None, "192.168.1.4", False), (None, "example.org", False),
    (True, "0.0.0.0", True), (False, "127.0.0.1", False)])
def test_by_default_the_page_is_served_on_loopback_only(ui, host, served) -> None:
    assert page_wanted(ui, host) is served
    assert is_loopback(host) is (host in ("127.0.0.1", "localhost", "::1", "[::1]"))
