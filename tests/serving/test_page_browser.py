"""The page to try a detector in a real headless browser (Debian's Chromium, driven by Playwright, as the HTML
report's browser tests are; they skip without Chromium): a real server on a free loopback port serves the
``numbers`` rule; the test types an example with the keyboard, submits with Ctrl+Enter, finds the highlighted
span, its type, score and evidence, the response score against the threshold, and the errors shown inline; no
request leaves the server's origin.

Set ``RAGTRUTH_SPANS_PAGE_SCREENSHOT=docs/img/try-page.png`` to also save the screenshot there.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from server_thread import ServerThread

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import ServeSettings, create_app

CONTEXT = ("Passage 1: The Grand Hotel opened in 1999 on the harbour front. It has 120 rooms and a rooftop "
           "restaurant.\nPassage 2: In 2015 the hotel was renovated and a spa was added.")
QUESTION = "When did the Grand Hotel open?"
ANSWER = "The Grand Hotel opened in 1998 on the harbour front and has 120 rooms."


@pytest.fixture(scope="module")
def server():
    app = create_app(load_detector("numbers"), settings=ServeSettings(ui=True, max_chars=1000))
    with ServerThread(app) as running:
        yield running


def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    elsewhere: list[str] = []

    def same_origin_only(route) -> None:
        if route.request.url.startswith(url):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    context.route("**/*", same_origin_only)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(url + "/")
    page.wait_for_selector("body[data-ready=true]")
    return context, page, elsewhere, errors


def _type_by_keyboard(page) -> None:
    """Fill the form as a keyboard user: Tab from the example picker through the fields in order."""
    page.focus("#example")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "task"
    for field, text in (("context", CONTEXT), ("question", QUESTION), ("response", ANSWER)):
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == field
        page.keyboard.insert_text(text)


def test_type_an_example_submit_and_find_the_highlighted_span(browser, server, tmp_path: Path) -> None:
    context, page, elsewhere, errors = _open(browser, server.url)
    _type_by_keyboard(page)
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("body[data-answered=true]")
    marks = page.eval_on_selector_all("#answer mark.span", "ms => ms.map(m => m.textContent)")
    assert marks == ["1998"]
    assert page.text_content("#answer") == ANSWER  # every character shown once, in order
    row = page.eval_on_selector_all("#spans tbody tr td", "tds => tds.map(td => td.textContent)")
    assert row[:4] == ["1998", "Evident Conflict", "1.000", "26–30"]
    assert row[4].startswith("contradicted — the context has 1999, not 1998")
    assert page.eval_on_selector("#spans mark.conflict", "m => m.textContent") == "1999"
    verdict = page.text_content("#verdict")
    assert "Likely hallucinated" in verdict and "response score 1.000" in verdict
    assert "no response threshold" in verdict  # the rule decides by its spans; /v1/model says so
    page.focus("#answer mark.span")
    assert page.eval_on_selector("#spans tbody tr", "tr => tr.classList.contains('active')")
    outline = page.eval_on_selector("#answer mark.span", "m => getComputedStyle(m).outlineStyle")
    assert outline != "none"  # focus is visible
    shot = tmp_path / "try-page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    target = os.environ.get("RAGTRUTH_SPANS_PAGE_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
    assert not elsewhere and not errors
    context.close()


def test_an_example_picked_and_a_clean_answer(browser, server) -> None:
    context, page, _, errors = _open(browser, server.url)
    page.select_option("#example", "1")
    assert page.input_value("#task") == "Summary" and "15%" in page.input_value("#response")
    page.fill("#response", "Revenue rose 12% to 3.4 billion euros.")
    page.click("#submit")
    page.wait_for_selector("body[data-answered=true]")
    assert page.locator("#answer mark.span").count() == 0
    assert "No hallucination found" in page.text_content("#verdict")
    assert page.text_content("#spans") == "No span flagged."
    assert not errors
    context.close()


def test_errors_are_shown_inline(browser, server) -> None:
    context, page, _, errors = _open(browser, server.url)
    page.fill("#context", "x" * 990)
    page.fill("#response", "It opened in 1998.")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#error:not([hidden])")
    assert page.text_content("#error").startswith("Error 413: item 0 has ")
    assert "(--max-chars)" in page.text_content("#error") and page.is_hidden("#result")
    page.fill("#context", "   ")
    page.click("#submit")
    assert page.text_content("#error") == "Error: give a context and an answer"
    page.fill("#context", "Passage: the hotel opened in 1999.")
    page.fill("#response", "It opened in 1998.")
    page.click("#submit")
    page.wait_for_selector("body[data-answered=true]")
    assert page.is_hidden("#error")  # cleared by the next good answer
    context.close()
    assert not [e for e in errors if "413" not in e]  # the browser logs the refused request itself
