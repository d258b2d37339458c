"""Text that differs only in how Unicode spells it: digits of other scripts are the same numbers, and
NFC / NFD spellings of a span align to the response."""

from __future__ import annotations

import unicodedata

import pytest

from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.shared.align import align_spans
from ragtruth_spans.detectors.shared.parsing import ParsedItem


@pytest.mark.parametrize("year", ["١٩٩٩", "１９９９", "𝟏𝟗𝟗𝟗", "۱۹۹۹", "1999"])
def test_numbers_reads_digits_of_any_script_by_value(year: str) -> None:
    detector = load_detector("numbers")
    same = detector.detect(context="The hotel opened in 1999.", response=f"It opened in {year}.", task="Summary")
    assert same.spans == []
    other = detector.detect(context=f"The hotel opened in {year}.", response="It opened in 1998.", task="Summary")
    assert [(s.start, s.end) for s in other.spans] == [(13, 17)]


@pytest.mark.parametrize(("response_form", "span_form"), [("NFD", "NFC"), ("NFC", "NFD")])
def test_spans_differing_only_by_composition_align(response_form: str, span_form: str) -> None:
    response = unicodedata.normalize(response_form, "Le café de Zoë ouvre en 1998.")
    span = unicodedata.normalize(span_form, "café de Zoë")
    alignment = align_spans(response, [ParsedItem(text=span)])
    assert alignment.unaligned == [] and len(alignment.spans) == 1
    found = alignment.spans[0]
    assert unicodedata.normalize("NFC", response[found.start:found.end]) == "café de Zoë"
    assert response[found.end:].startswith(" ouvre")  # the trailing combining mark stays inside the span


@pytest.mark.parametrize("context", ['{"stars": ' + "9" * 5000 + "}", "[" * 5000 + "]" * 5000])
def test_a_data2txt_context_python_refuses_late_is_read_as_text_not_a_crash(context: str) -> None:
    from ragtruth_spans.detectors.shared.sentences import evidence_units

    assert evidence_units(context, "Data2txt")  # cut into sentences like any context that is not JSON
