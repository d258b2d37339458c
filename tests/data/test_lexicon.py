"""The closed word classes the generator and the conflict columns share: what contradicts and what does not."""

from __future__ import annotations

import pytest

from ragtruth_spans.data import lexicon


@pytest.mark.parametrize(("a", "b"), [
    ("fell", "rose"), ("fell", "climbed"), ("shrank", "grew"), ("surged", "slumped"),  # rises against falls
    ("faster", "slower"), ("biggest", "smallest"), ("earlier", "later"), ("thinner", "thicker"),  # graded forms
    ("heated", "unheated"), ("toxic", "non-toxic"), ("legal", "illegal"), ("visible", "invisible"),  # prefixes
    ("minority", "majority"), ("kilograms", "pounds"), ("northern", "southern"),
])
def test_opposites_contradict_both_ways(a: str, b: str) -> None:
    assert lexicon.contradicting(a, b) and lexicon.contradicting(b, a)


@pytest.mark.parametrize(("a", "b"), [
    ("form", "inform"), ("prove", "improve"), ("less", "unless"), ("cover", "discover"),  # prefixes that are not
    ("rose", "grew"), ("kg", "kilograms"), ("most", "majority"), ("fell", "fell"),  # one sense, or the same word
])
def test_words_of_one_sense_or_false_prefixes_do_not_contradict(a: str, b: str) -> None:
    assert not lexicon.contradicting(a, b)


@pytest.mark.parametrize(("claim", "context"), [
    ("many", "most"), ("thousands", "many"), ("many", "thousands"), ("several", "all"),  # a claim no stronger
    ("usually", "always"), ("sometimes", "often"), ("some", "few"), ("few", "several"),
])
def test_a_quantity_or_frequency_no_stronger_than_the_contexts_is_entailed(claim: str, context: str) -> None:
    assert not lexicon.contradicting(claim, context)


@pytest.mark.parametrize(("claim", "context"), [
    ("most", "many"), ("all", "some"), ("always", "usually"), ("many", "few"), ("few", "most"), ("none", "all"),
    ("never", "often"), ("half", "most"),
])
def test_a_stronger_or_denying_quantity_or_frequency_contradicts(claim: str, context: str) -> None:
    assert lexicon.contradicting(claim, context)


def test_the_generator_keeps_one_antonym_per_word_from_the_same_pairs() -> None:
    assert all(lexicon.ANTONYMS_EXTENDED[w] in lexicon.ANTONYMS[w] for w in lexicon.ANTONYMS_EXTENDED)
    assert {"rose", "climbed", "grew"} <= lexicon.ANTONYMS["fell"]
