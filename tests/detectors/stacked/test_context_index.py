"""A context read once for the word features: its sentences, each word's sentence, and what the index holds."""

from __future__ import annotations

from ragtruth_spans.detectors.stacked.context_index import ContextIndex, sentence_ids, sentences
from ragtruth_spans.detectors.stacked.text import words


def test_sentences_cut_after_an_end_mark_before_a_capital_or_digit_and_at_line_breaks():
    text = "Dr. Smith came. 3 people left!\nThen rain. it stayed"
    assert [text[a:b] for a, b in sentences(text)] == ["Dr. Smith came.", "3 people left!", "Then rain. it stayed"]


def test_sentences_are_trimmed_and_never_empty():
    text = "  One.   \n\n  Two.  "
    assert [text[a:b] for a, b in sentences(text)] == ["One.", "Two."]
    assert sentences("   \n ") == []


def test_each_word_gets_the_sentence_that_holds_it():
    text = "A cat sat. The dog ran off."
    assert sentence_ids(words(text), sentences(text)).tolist() == [0, 0, 0, 1, 1, 1, 1]


def test_the_index_holds_words_stems_numbers_and_the_question_apart():
    index = ContextIndex.build("The plant employs 1.5 million workers in three cities.", "How many workers?")
    assert {"plant", "employs", "workers"} <= index.words and "how" in index.question
    assert {"1.5", "1.5e+06", "3"} <= index.numbers  # a scaled number and a number word, by value
    assert "1.5e+06" in ContextIndex.build("It employs 1,500,000 people.").numbers  # the same value in digits
    assert ("employs", "1.5") in index.ngrams and index.size == 9
    assert "how" not in {t for t in index.tokens}  # the question's words support, but are not context tokens
