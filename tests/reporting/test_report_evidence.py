"""Evidence in the HTML report: the browser data lists each predicted span's verdict and passages (code points of
the context), evidence past the context is refused, and in headless Chromium hovering or clicking a span marks its
passages in the context (the marked text is exactly the context's characters) and shows the verdict.

Set ``RAGTRUTH_SPANS_EVIDENCE_SCREENSHOT=docs/img/report-evidence.png`` to save the screenshot there.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from report_data import sample_test_records
from test_report_browser import _open

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.predictions import prediction_row, read_prediction_file
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.evidence import EvidenceFinder
from ragtruth_spans.reporting.html import report_from_files, response_rows, write_report

BUSINESS = json.dumps({"name": "Zoë's \"Deli\" 🍣", "hours": {"Monday": "7:0-14:0", "Tuesday": "7:0-14:0"},
                       "attributes": {"RestaurantsTakeOut": False, "WiFi": "free"}, "business_stars": 4.0},
                      ensure_ascii=False, indent=1).replace("\n", "\r\n")
CONTEXT = "passage 1: Le Café Zoë 🍣 opened in 1999 — its owner is Søren.\r\nIt has 120 rooms.\r\n"


def _records() -> list[Record]:
    made = [Record(id="d2t", source_id="s1", task_type="Data2txt", model="m", split="test", quality="good",
                   context=BUSINESS, response="Zoë's 🍣 has 4.5 stars, is open Monday to Friday from 7 am to 2 pm "
                   "and offers takeout.", spans=[Span(12, 15, "Evident Conflict")]),
            Record(id="qa", source_id="s2", task_type="QA", model="m", split="test", quality="good",
                   context=CONTEXT, question="When?", response="Søren's café 🍣 opened in 2003 with 120 rooms.",
                   spans=[Span(25, 29, "Evident Conflict")])]
    return made + sample_test_records()[:4]


def _report(folder: Path, records: list[Record]) -> tuple[Path, object]:
    detections = EvidenceFinder().attach_batch(records, load_detector("flag-all").detect_batch(records[:1]) +
                                               load_detector("numbers").detect_batch(records[1:]))
    pred = folder / "pred.jsonl"
    pred.write_text("".join(json.dumps(prediction_row(r.id, d), ensure_ascii=False) + "\n"
                            for r, d in zip(records, detections)), encoding="utf-8")
    data = report_from_files(records, {"flag-all+numbers": (str(pred), read_prediction_file(pred))}, bootstrap=0)
    return write_report(folder / "report.html", data), data


def test_browser_data_lists_the_evidence_of_predicted_spans(tmp_path: Path) -> None:
    records = _records()
    _, data = _report(tmp_path, records)
    rows = {r["id"]: r for r in response_rows(data)["responses"]}
    [qa] = rows["qa"]["det"][0]["ev"]
    assert qa[:3] == [25, 29, "contradicted"] and "1999" in qa[3]
    assert [CONTEXT[a:b] for p in qa[4] for a, b in p[3]] == ["1999"]
    [d2t] = rows["d2t"]["det"][0]["ev"]
    assert d2t[2] == "contradicted" and all(p[1] <= len(BUSINESS) for p in d2t[4])
    assert response_rows(data)["has_evidence"] is True
    short = [r if r.id != "qa" else Record(**{**r.__dict__, "context": CONTEXT[:20]}) for r in records]
    with pytest.raises(InputError, match="past the context"):
        response_rows(type(data)(gold=short, detectors=data.detectors))


HOVER = """(id) => {
  const card = [...document.querySelectorAll('#cards article.card')].find(c => c.dataset.id === id);
  const mark = card.querySelector('mark[data-ev]');
  mark.dispatchEvent(new MouseEvent('mouseover', {bubbles: true}));
  const panel = card.querySelector('p.verdict:not([hidden])');
  return {verdict: mark.dataset.verdict, panel: panel ? panel.textContent : null,
          open: card.querySelector('details.context').open,
          passages: [...card.querySelectorAll('pre mark.ev')].map(m => [m.dataset.passage, m.textContent]),
          conflicts: [...card.querySelectorAll('pre mark.ev-conflict')].map(m => m.textContent),
          context: card.querySelector('pre').textContent};
}"""


def test_hover_and_click_show_the_evidence_in_the_context(browser, tmp_path: Path) -> None:
    records = _records()
    path, _ = _report(tmp_path, records)
    context, page, fetched, errors = _open(browser, path)
    got = page.evaluate(HOVER, "qa")
    assert got["verdict"] == "contradicted" and got["open"] and "contradicted by the context" in got["panel"]
    assert got["conflicts"] == ["1999"] and got["context"] == CONTEXT  # marks add no character and lose none
    assert "".join(text for rank, text in got["passages"] if rank == "0") == \
        "passage 1: Le Café Zoë 🍣 opened in 1999 — its owner is Søren."
    d2t = page.evaluate(HOVER, "d2t")
    assert d2t["verdict"] == "contradicted" and d2t["context"] == BUSINESS
    card = page.locator("#cards article.card[data-id=d2t]")
    card.locator("mark[data-ev]").first.click()  # pinned: stays when the mouse leaves
    page.mouse.move(1, 1)
    assert card.locator("p.verdict:not([hidden])").count() == 1
    card.scroll_into_view_if_needed()
    shot = tmp_path / "report-evidence.png"
    card.screenshot(path=str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    target = os.environ.get("RAGTRUTH_SPANS_EVIDENCE_SCREENSHOT")
    if target:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
    assert not fetched and not errors
    context.close()
