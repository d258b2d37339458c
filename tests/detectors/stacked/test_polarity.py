"""Polarity helpers: which words a negation reaches, and which context sentence a response sentence restates."""

from __future__ import annotations

import doctest
import importlib

import pytest

from ragtruth_spans.detectors.stacked.context_index import ContextIndex, sentence_ids, sentences
from ragtruth_spans.detectors.stacked.polarity import is_negator, negated, restated
from ragtruth_spans.detectors.stacked.text import normalise, stem, words


def test_a_negation_reaches_the_next_two_words_but_not_after_not_only():
    assert negated(["it", "isn't", "open", "on", "mondays"]).tolist() == [False, False, True, True, False]
    assert not negated(["not", "only", "the", "fans"]).any()
    assert is_negator("can't") and is_negator("never") and not is_negator("note")


def test_each_word_is_matched_to_the_context_sentence_sharing_most_of_its_neighbours_stems():
    """(or nothing, for a neighbourhood sharing too little)"""
    context = "The bridge opened in 1932. Buses use the Mill Lane crossing. The council approved repairs."
    response = "Repairs were approved by the council. Something unrelated entirely."
    spans = words(response)
    tokens = [normalise(response[a:b]) for a, b in spans]
    sid = sentence_ids(spans, sentences(response))
    stems, index = [stem(t) for t in tokens], ContextIndex.build(context)
    first = [i for i in range(len(tokens)) if sid[i] == 0 and tokens[i] not in ("were", "by", "the")]
    assert restated(stems, first, index) == {i: 2 for i in first}
    assert restated(stems, [i for i in range(len(tokens)) if sid[i] == 1], index) == {}


@pytest.mark.parametrize("module", ["ragtruth_spans.detectors.stacked.polarity",
                                    "ragtruth_spans.detectors.stacked.structured",
                                    "ragtruth_spans.detectors.stacked.text",
                                    "ragtruth_spans.detectors.stacked.features",
                                    "ragtruth_spans.detectors.stacked.context_index",
                                    "ragtruth_spans.data.lexicon"])
def test_the_examples_in_the_word_signal_modules_run(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
