"""The rule-based reference detectors: unsupported numbers, flag everything, flag nothing."""

from __future__ import annotations

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.rules import number_value, numbers_in


def test_numbers_are_found_and_compared_by_value():
    text = "It opened in 1998; its 1,200 rooms cost $3.50, v2 and 12:30 aside."
    assert [(text[a:b], v) for a, b, v in numbers_in(text)] == [
        ("1998", "1998"), ("1,200", "1200"), ("3.50", "3.5"), ("12", "12"), ("30", "30")]
    assert number_value("007") == "7" and number_value("3.0") == "3" and number_value("1,000,000") == "1000000"


def test_numbers_flags_only_values_the_context_and_question_lack():
    detector = load_detector("numbers")
    response = "The hotel opened in 1998 with 1200 rooms and 40 staff."
    detection = detector.detect(context="Opened in 1999. It has 1,200 rooms.", response=response, task="QA",
                                question="How many staff (40?)")
    assert [response[s.start:s.end] for s in detection.spans] == ["1998"]  # 1200 == 1,200; 40 is in the question
    assert detection.spans[0].type == "Evident Conflict" and detection.score == 1.0
    baseless = detector.detect(context="A quiet hotel.", response="It has 12 rooms.", task="Summary")
    assert baseless.spans[0].type == "Evident Baseless Info"
    assert detector.detect(context="x", response="No numbers here.", task="Summary").score == 0.0


def test_flag_all_and_flag_none():
    response = "  Paris is the capital.\n"
    [all_] = load_detector("flag-all").detect_batch([{"context": "c", "response": response, "task": "Summary"}])
    assert [(s.start, s.end) for s in all_.spans] == [(2, 23)] and response[2:23] == "Paris is the capital."
    with pytest.raises(InputError, match="field 'response': is empty or blank"):  # nothing to flag: refused
        load_detector("flag-all").detect(context="c", response="   ", task="Summary")
    none = load_detector("flag-none").detect(context="c", response=response, task="Summary")
    assert none.spans == [] and none.score == 0.0


def test_absent_words_flags_runs_of_content_words_the_context_lacks():
    detector = load_detector("absent-words")
    context = "The CASTLE was built in 1240. It has 1,200 rooms, and Ａｎｎａ Smith keeps the gate."
    response = "The castle, built in 1240 by King Edward I, has 1200 rooms; Anna Smith's well-known gate is not open."
    detection = detector.detect(context=context, response=response, task="Summary")
    # case-folded and NFKC (Ａｎｎａ == Anna), a possessive dropped, numbers by value; stop words ("by", "I", "is",
    # "not") never flagged; "King Edward" one span (adjacent), "well-known" one span across its hyphen
    assert [response[s.start:s.end] for s in detection.spans] == ["King Edward", "well-known", "open"]
    assert {s.type for s in detection.spans} == {"Evident Baseless Info"} and detection.score == 1.0
    # a word of the question counts as evidence; a fully supported response has no span
    clean = detector.detect(context="Opened in 1871.", response="The lighthouse opened in 1871.", task="QA",
                            question="When did the lighthouse open?")
    assert clean.spans == [] and clean.score == 0.0
    assert load_detector("absent-words").describe() == {"kind": "rules", "name": "absent-words"}


def test_absent_words_does_not_merge_across_a_supported_word_or_punctuation():
    detector = load_detector("absent-words")
    response = "Red apples, green pears and blue plums."
    detection = detector.detect(context="We sell pears.", response=response, task="Summary")
    assert [response[s.start:s.end] for s in detection.spans] == ["Red apples", "green", "blue plums"]
