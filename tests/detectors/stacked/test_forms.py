"""Other forms of what a context says (compound parts, suffixed numbers, ordinals, fixed phrases, fractions) and
the support they give a response's words."""

from __future__ import annotations

import pytest

from ragtruth_spans.detectors.stacked.features import (
    BASE_FEATURES,
    ContextIndex,
    normalise,
    word_features,
    words,
)
from ragtruth_spans.detectors.stacked.features import sentences as split_sentences
from ragtruth_spans.detectors.stacked.forms import context_forms, phrase_forms, response_supported


def rows(context: str, response: str) -> dict[str, dict[str, float]]:
    spans = words(response)
    matrix = word_features(response, spans, ContextIndex.build(context), task="Summary",
                           sentences=split_sentences(response))
    return {response[a:b]: dict(zip(BASE_FEATURES, row.tolist())) for (a, b), row in zip(spans, matrix)}


def tokens(text: str) -> list[str]:
    return [normalise(text[a:b]) for a, b in words(text)]


@pytest.mark.parametrize(("context", "response", "word"), [
    ("bringing on the 19-year-old forward", "Asante, 19, came on", "19"),
    ("a 6.4-kilometre extension", "extending it by 6.4 km", "6.4"),
    ("budgeted at 410 million pounds", "The £410m scheme", "410m"),
    ("for the fifth year in a row", "for the 5th straight year", "5th"),
    ("for the fifth year in a row", "for the 5th straight year", "straight"),
    ("leave the dough to rest for half an hour", "rest it for 30 minutes", "30"),
    ("bees visited lavender twice as often", "bees went to lavender two times as often", "two"),
    ("loans fell by a quarter", "loans dropped 25%", "25"),
    ("60 per cent of the cost", "three-fifths of the cost", "three-fifths"),
    ("to about 210,000 people", "About 210 thousand people", "thousand"),
    ("the fast growing suburbs", "the fast-growing suburbs", "fast-growing"),
    ("Sales of vinyl records in Norway rose", "Norwegian vinyl sales rose", "Norwegian"),
    ("Its summit reaches 3,412 metres", "It stands 3412 m high", "m"),
    ("profit came to 1.9 billion Swedish crowns", "profit of SEK 1.9bn", "SEK"),
    ('{"hours": {"Tuesday": "10:00-18:00"}}', "It opens at 10 a.m. on Tuesdays", "a.m"),
])
def test_a_word_the_context_says_in_another_form_is_supported(context: str, response: str, word: str) -> None:
    row = rows(context, response)[word]
    assert row["in_context"] == 1.0 and row["stem_in_context"] == 1.0, word


@pytest.mark.parametrize(("context", "response", "word"), [
    ("bringing on the 19-year-old forward", "Asante, 20, came on", "20"),
    ("budgeted at 410 million pounds", "The £140m scheme", "140m"),
    ("leave the dough to rest for half an hour", "rest it for 60 minutes", "60"),
    ("for the fifth year in a row", "for the 6th straight year", "6th"),
    ("to about 210,000 people", "About 120 thousand people", "thousand"),
])
def test_another_value_in_the_same_form_stays_unsupported(context: str, response: str, word: str) -> None:
    row = rows(context, response)[word]
    assert row["in_context"] == 0.0 and row["number_in_context"] == 0.0, word


def test_the_longest_phrase_wins_and_each_form_is_listed() -> None:
    assert "60" not in phrase_forms(tokens("rest for half an hour"))
    added, numbers = context_forms(tokens("a 19-year-old won £2.5bn in his 3rd year"))
    assert {"19", "year", "old", "2.5", "3", "third"} <= added and {"19", "2.5e+09", "3"} <= numbers


def test_a_compound_needs_all_its_parts() -> None:
    assert response_supported("fast-growing", {"fast", "growing"}, set())
    assert not response_supported("slow-growing", {"fast", "growing"}, set())
    assert not response_supported("plain", {"plain"}, set())  # no other form: the word itself is looked up elsewhere
