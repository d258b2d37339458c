"""The HTML report in a real headless browser (Debian's Chromium, driven by Playwright; never a downloaded
browser): the highlighted characters of each kind equal the evaluator's counts, filters, search, paging and
keyboard navigation change what is shown, the summary reads without JavaScript, 2,700 responses open paged, and
nothing is fetched from the network.

Set ``RAGTRUTH_SPANS_SCREENSHOT=docs/img/report.png`` to also save the screenshot of the sample's report there.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from report_data import random_detections, read_files, sample_prediction_files, sample_test_records

from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.reporting.html import ReportInput, evaluate_detector, report_from_files, response_rows, write_report

COUNT_MARKS = """() => {
  const chars = {correct: 0, missed: 0, false: 0}, typed = {}, marks = {correct: 0, missed: 0, false: 0};
  document.querySelectorAll('#cards mark[data-kind]').forEach(m => {
    const n = Array.from(m.textContent).length;
    chars[m.dataset.kind] += n; marks[m.dataset.kind] += 1;
    for (const t of m.dataset.types ? m.dataset.types.split('|') : []) {
      typed[t] = typed[t] || {correct: 0, missed: 0}; if (m.dataset.kind !== 'false') typed[t][m.dataset.kind] += n;
    }
  });
  return {chars, typed, marks, cards: document.querySelectorAll('#cards article.card').length};
}"""


@pytest.fixture(scope="module")
def sample_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser-report")
    records = sample_test_records()
    data = report_from_files(records, read_files(sample_prediction_files(folder, records), records), bootstrap=200)
    return write_report(folder / "report.html", data), data


def _open(browser, path: Path, *, javascript: bool = True, width: int = 1280, height: int = 900):
    context = browser.new_context(java_script_enabled=javascript, viewport={"width": width, "height": height})
    fetched: list[str] = []

    def only_local(route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    context.route("**/*", only_local)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(path.as_uri())
    if javascript:
        page.wait_for_selector("body[data-ready=true]")
    return context, page, fetched, errors


def test_highlighted_characters_equal_the_evaluator_counts(browser, sample_report) -> None:
    path, data = sample_report
    context, page, fetched, errors = _open(browser, path)
    page.select_option("#f-size", "250")
    for d, result in enumerate(data.detectors):
        page.select_option("#f-det", str(d))
        got = page.evaluate(COUNT_MARKS)
        counts = result.report["counts"]
        assert got["cards"] == len(data.gold)
        assert got["chars"] == {"correct": counts["overlap_chars"],
                                "missed": counts["gold_chars"] - counts["overlap_chars"],
                                "false": counts["predicted_chars"] - counts["overlap_chars"]}, result.name
        for t, gold_chars in counts["type_gold_chars"].items():
            typed = got["typed"].get(t, {"correct": 0, "missed": 0})
            assert typed["correct"] == counts["type_covered_chars"][t]
            assert typed["correct"] + typed["missed"] == gold_chars
        runs = sum(len(r["det"][d]["runs"]) for r in response_rows(data)["responses"])
        assert sum(got["marks"].values()) == runs
    shown = page.eval_on_selector_all("#cards p.response", "ps => ps.map(p => p.textContent)")
    assert shown == [r.response for r in data.gold]  # no character lost or doubled (emoji, CJK)
    assert not fetched and not errors
    context.close()


def _cards(page) -> list[dict]:
    return page.eval_on_selector_all("#cards article.card", "cs => cs.map(c => ({id: c.dataset.id, "
                                      "task: c.dataset.task, kinds: [...c.querySelectorAll('mark')].map(m => "
                                      "m.dataset.kind)}))")


def test_filters_search_and_keys_change_what_is_shown(browser, sample_report) -> None:
    path, data = sample_report
    rows = response_rows(data)["responses"]
    context, page, _, errors = _open(browser, path)
    assert len(_cards(page)) == len(rows)
    page.select_option("#f-det", "0")  # numbers
    page.select_option("#f-show", "false")
    cards = _cards(page)
    assert len(cards) == sum(1 for r in rows if r["det"][0]["chars"][2] > 0) > 0
    assert all("false" in c["kinds"] for c in cards)
    page.select_option("#f-show", "missed")
    assert len(_cards(page)) == sum(1 for r in rows if r["det"][0]["chars"][1] > 0)
    page.select_option("#f-show", "all")
    page.select_option("#f-task", "Summary")
    cards = _cards(page)
    assert {c["task"] for c in cards} == {"Summary"} and len(cards) == sum(r.task_type == "Summary" for r in data.gold)
    page.select_option("#f-task", "")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "f-query"
    page.keyboard.type(data.gold[3].id)
    page.wait_for_function("() => document.querySelectorAll('#cards article.card').length === 1")
    assert _cards(page)[0]["id"] == data.gold[3].id
    assert "of 22" not in page.text_content("#status") and "filtered from 22" in page.text_content("#status")
    for _ in data.gold[3].id:
        page.keyboard.press("Backspace")
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") != "f-query"
    page.wait_for_function("() => document.querySelectorAll('#cards article.card').length === 22")
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.evaluate("document.activeElement.dataset.id") == data.gold[1].id
    page.keyboard.press("c")
    assert page.evaluate("document.activeElement.querySelector('details').open") is True
    assert not errors
    context.close()


def test_summary_reads_without_javascript(browser, sample_report) -> None:
    path, data = sample_report
    context, page, fetched, _ = _open(browser, path, javascript=False)
    text = page.text_content("main")
    assert "Precision, recall and F1 overall" in text
    assert f"{data.detectors[0].report['overall']['span']['f1']:.3f}" in text
    assert page.is_visible("noscript p") or "needs JavaScript" in page.content()
    assert page.locator("svg.chart").count() == 3 and page.is_hidden("#controls")
    assert not fetched
    context.close()


def test_screenshot_of_the_sample_report(browser, sample_report, tmp_path: Path) -> None:
    path, _ = sample_report
    context, page, _, errors = _open(browser, path, height=1000)
    page.select_option("#f-det", "0")
    page.select_option("#f-show", "wrong")
    box = page.locator("#browser").bounding_box()
    shot = tmp_path / "report.png"
    page.screenshot(path=str(shot), full_page=True, clip={"x": 0, "y": box["y"] - 10, "width": 1280, "height": 1000})
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    target = os.environ.get("RAGTRUTH_SPANS_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
    assert not errors
    context.close()


def test_thousands_of_responses_open_paged(browser, tmp_path: Path) -> None:
    base = sample_test_records()
    records = [replace(base[i % len(base)], id=f"r{i}") for i in range(2700)]
    from ragtruth_spans.core.jsonl import write_jsonl
    from ragtruth_spans.core.predictions import prediction_row

    pred_path = tmp_path / "p.jsonl"
    write_jsonl(pred_path, (prediction_row(r.id, d) for r, d in zip(records, random_detections(records, seed=3))))
    pred = read_prediction_file(pred_path)
    path = write_report(tmp_path / "big.html", ReportInput(gold=records, detectors=[
        evaluate_detector("random", str(pred_path), records, pred)]))
    context, page, _, errors = _open(browser, path)
    assert page.locator("#cards article.card").count() == 25
    assert "of 2700 responses" in page.text_content("#status")
    page.click("#next")
    assert page.eval_on_selector("#cards article.card", "c => c.dataset.id") == "r25"
    page.keyboard.press("n")
    assert page.eval_on_selector("#cards article.card", "c => c.dataset.id") == "r50"
    page.select_option("#f-show", "false")
    assert "filtered from 2700" in page.text_content("#status")
    assert not errors
    context.close()
