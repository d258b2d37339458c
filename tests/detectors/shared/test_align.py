"""Alignment of generated span texts to character offsets of the response."""

from __future__ import annotations

from ragtruth_spans.detectors.shared.align import FUZZY_THRESHOLD, align_spans, normalize
from ragtruth_spans.detectors.shared.parsing import ParsedItem

EC = "Evident Conflict"


def items(*texts: str) -> list[ParsedItem]:
    return [ParsedItem(t, EC) for t in texts]


def offsets(alignment) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in alignment.spans]


def test_exact_match_and_span_text_equals_slice() -> None:
    response = "The hotel opened in 1998 and offers free parking."
    result = align_spans(response, items("opened in 1998", "free parking"))
    assert offsets(result) == [(10, 24), (36, 48)]
    assert result.methods == ["exact", "exact"] and result.unaligned == []
    assert all(s.text == response[s.start:s.end] and s.type == EC for s in result.spans)


def test_repeated_phrase_maps_to_occurrences_in_order() -> None:
    response = "It costs $10. Parking costs $10. Breakfast costs $10."
    first = response.find("costs $10")
    second = response.find("costs $10", first + 1)
    third = response.find("costs $10", second + 1)
    result = align_spans(response, items("costs $10", "costs $10", "costs $10"))
    assert [s.start for s in result.spans] == [first, second, third]


def test_item_after_an_earlier_one_is_searched_from_that_point() -> None:
    response = "the cat sat. the dog ran. the cat ran."
    result = align_spans(response, items("the dog ran", "the cat"))
    # "the cat" after "the dog ran" is the second occurrence, not the first.
    assert offsets(result) == [(13, 24), (26, 33)]


def test_out_of_order_item_falls_back_to_search_from_start() -> None:
    response = "alpha beta gamma"
    result = align_spans(response, items("gamma", "alpha"))
    assert offsets(result) == [(11, 16), (0, 5)]


def test_unicode_offsets_are_code_points() -> None:
    response = "Le café 🎉 est à Zürich, près de 東京駅."
    result = align_spans(response, items("à Zürich", "東京駅"))
    for span, text in zip(result.spans, ["à Zürich", "東京駅"]):
        assert response[span.start:span.end] == text
    assert result.spans[1].start == response.index("東京駅")


def test_case_and_whitespace_differences_map_back_precisely() -> None:
    response = "The Hotel  opened\n in 1998, offering FREE\tparking."
    result = align_spans(response, items("the hotel opened in 1998", "free parking"))
    assert result.methods == ["normalized", "normalized"]
    assert [s.text for s in result.spans] == ["The Hotel  opened\n in 1998", "FREE\tparking"]


def test_typographic_quotes_and_stray_spaces_are_normalized() -> None:
    response = "He said \u201cwe\u2019re closed\u201d on Monday."
    result = align_spans(response, items(' "we\'re closed" '))
    assert result.methods == ["normalized"]
    assert result.spans[0].text == "\u201cwe\u2019re closed\u201d"


def test_normalization_that_changes_length_maps_back() -> None:
    response = "Die Straße ist lang."  # casefold("ß") == "ss": two normalized chars for one original
    result = align_spans(response, items("STRASSE IST"))
    assert result.spans[0].text == "Straße ist"
    norm = normalize(response)
    assert len(norm.text) == len(response) + 1 and norm.to_original(4, 11) == (4, 10)


def test_near_miss_typo_is_aligned_fuzzily() -> None:
    response = "The museum was founded in 1887 by the city council and renovated in 2004."
    result = align_spans(response, items("founded in 1887 by the city counsil"))
    assert result.methods == ["fuzzy"] and result.unaligned == []
    assert result.spans[0].text == "founded in 1887 by the city council"


def test_text_absent_from_response_is_unaligned_and_reported() -> None:
    response = "The museum was founded in 1887."
    result = align_spans(response, items("founded in 1887", "offers free guided tours", ""))
    assert offsets(result) == [(15, 30)]
    assert result.unaligned == ["offers free guided tours", ""]


def test_fuzzy_threshold_is_respected() -> None:
    response = "The museum was founded in 1887."
    near = items("founded in 1878")  # two swapped digits
    assert align_spans(response, near, fuzzy_threshold=99.0).unaligned == ["founded in 1878"]
    assert align_spans(response, near, fuzzy_threshold=80.0).spans[0].text.startswith("founded in 18")
    assert FUZZY_THRESHOLD == 90.0


def test_item_longer_than_response_is_unaligned() -> None:
    result = align_spans("short", items("a much longer generated text"))
    assert result.spans == [] and result.unaligned == ["a much longer generated text"]


def test_each_span_records_the_item_it_came_from() -> None:
    response = "The hotel opened in 1998 and has free parking."
    result = align_spans(response, items("opened in 1998", "a rooftop pool", "free parking"))
    assert [s.text for s in result.spans] == ["opened in 1998", "free parking"]
    assert result.item_indices == [0, 2] and result.unaligned == ["a rooftop pool"]
