"""Context windows cover the whole context within the model's budget; QA puts the question first; a Data2txt
JSON context is read as key: value lines."""

from __future__ import annotations

from ragtruth_spans.detectors.entailment.windows import context_windows
from ragtruth_spans.detectors.shared.sentences import split_sentences


def test_windows_cover_every_sentence_of_a_long_context_within_the_budget():
    sentences = [f"Fact number {i} says that the value of item {i} is {i * 7}." for i in range(200)]
    context = " ".join(sentences) + " " + "long " * 400 + "end."
    windows = context_windows(context, "Summary", sentences=3, max_chars=300)
    covered = set()
    for w in windows:
        assert context[w.start:w.end] == w.text == w.premise and w.end - w.start <= 300
        covered.update(range(w.start, w.end))
    for a, b in split_sentences(context):
        assert not set(range(a, b)) - covered - {i for i in range(a, b) if context[i].isspace()}
    assert max(w.end for w in windows) == len(context)  # the end of the context is read too


def test_consecutive_sentences_form_a_window_and_qa_puts_the_question_first():
    context = "The hotel opened in 1999. It has 120 rooms. The pool is heated."
    windows = context_windows(context, "QA", "When did it open?", sentences=2)
    assert [w.text for w in windows] == ["The hotel opened in 1999. It has 120 rooms.",
                                         "It has 120 rooms. The pool is heated.", "The pool is heated."]
    assert windows[0].premise == "When did it open?\nThe hotel opened in 1999. It has 120 rooms."
    assert (windows[0].start, windows[0].end) == (0, 43)


def test_a_json_context_is_read_as_fields():
    context = '{"name": "Cafe Rio", "stars": 4, "wifi": "no", "address": "1 Main St"}'
    windows = context_windows(context, "Data2txt", sentences=2, fields=2)
    assert [w.text for w in windows] == ["name: Cafe Rio\nstars: 4", "stars: 4\nwifi: no",
                                         "wifi: no\naddress: 1 Main St", "address: 1 Main St"]
    assert all(w.start is None for w in windows)
    assert context_windows("Not JSON. Two sentences.", "Data2txt")[0].start == 0
