"""Comparisons the response's own numbers contradict, and their place in the conflict rule."""

from __future__ import annotations

import pytest

from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.stacked.columns import ColumnBuilder
from ragtruth_spans.detectors.stacked.comparisons import reversed_by_numbers
from ragtruth_spans.detectors.stacked.context_index import sentence_ids, sentences
from ragtruth_spans.detectors.stacked.text import normalise, words


def marked(response: str) -> list[str]:
    spans = words(response)
    found = reversed_by_numbers(response, spans, [normalise(response[a:b]) for a, b in spans],
                                sentence_ids(spans, sentences(response)))
    return [response[a:b] for (a, b), m in zip(spans, found) if m]


@pytest.mark.parametrize(("response", "expected"), [
    ("Students pay $8, four dollars more than the standard $12 ticket.", ["more"]),
    ("Students pay $16, four dollars more than the standard $12 ticket.", []),
    ("The east wing is 40 metres long, shorter than the 25 metres of the west wing.", ["shorter"]),
    ("The fare is £7, cheaper than the £5 it cost. It rose 5% in 2020, higher than 2% before.", ["cheaper"]),
    ("Revenue was 5 million euros, less than the 3 million euros of 2019.", ["less"]),
    ("It costs 10 euros. The other one is more expensive than 20 euros.", []),  # another sentence: not compared
    ("It weighs 12 kg, more than 10 pounds.", []),  # different units: not judged
    ("Applications rose to 900, or more than 800 the year before.", []),  # a bound
])
def test_a_comparison_its_numbers_contradict_is_marked(response: str, expected: list[str]) -> None:
    assert marked(response) == expected


def test_the_conflict_rule_flags_it_whatever_the_context_says() -> None:
    item = DetectItem("Students pay $8, four dollars less than the standard $12 ticket.",
                      "Students pay $8, four dollars more than the standard $12 ticket.", "Summary")
    (columns,) = ColumnBuilder().build([item])
    flagged = [item.response[a:b] for (a, b), hit in zip(columns.words, columns.contradicted()) if hit]
    assert "more" in flagged and "$12" not in flagged and "Students" not in flagged


def test_a_number_right_before_the_comparative_is_a_difference_unless_a_comma_parts_them() -> None:
    assert marked("A bag costs 25 euros, more than the 40 euros at the airport.") == ["more"]
    assert marked("Tickets cost four dollars more than the $12 standard ticket.") == []  # the difference alone
