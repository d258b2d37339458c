"""``SentenceTracker``: incremental sentence tracking — the same sentences as splitting the whole answer, at a cost
that does not grow with the answer already read (a long answer in tiny chunks)."""

from __future__ import annotations

import time

import pytest

from ragtruth_spans.detectors.shared.sentences import split_sentences
from ragtruth_spans.detectors.stream import SentenceTracker

PROSE = ("The Harbour Hotel opened in 1998. It has 120 rooms and a rooftop pool! Does it have a spa? Yes: two.\n"
         "Its chef, Mr. Lee, cooks 3.5 kilos of fish a day. \"It is fresh.\" Guests rate it 4.2 of 5… ")


def _feed(text: str, size: int) -> tuple[SentenceTracker, list[tuple[int, int]]]:
    tracker = SentenceTracker()
    reported = []
    for i in range(0, len(text), size):
        reported += tracker.feed(text[i:i + size])
    return tracker, reported + tracker.finish()


@pytest.mark.parametrize("size", [1, 2, 5, 13, 1000])
def test_the_sentences_reported_are_the_whole_answers_for_any_chunking(size: int) -> None:
    text = PROSE * 3
    tracker, reported = _feed(text, size)
    assert tracker.text == text
    assert [text[a:b] for a, b in reported] == [text[a:b] for a, b in split_sentences(text)]


def test_a_sentence_is_reported_as_soon_as_the_next_one_starts() -> None:
    tracker = SentenceTracker()
    assert tracker.feed("It opened in 1998.") == []
    assert tracker.feed(" ") == []
    assert tracker.feed("It") == [(0, 18)]


@pytest.mark.parametrize("text", [
    "The hotel opened in 1998 and it has many rooms and a pool. " * 90,  # ordinary sentences
    "1.2.3.4.5." * 500,  # sentence ends that never split: the growing sentence must not be re-split each chunk
    "word " * 1000,  # no sentence end at all
])
def test_a_5000_character_answer_in_5_character_chunks_is_tracked_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    _, reported = _feed(text, 5)
    elapsed = time.perf_counter() - started
    assert reported and reported[-1][1] == len(text.rstrip())
    assert elapsed < 2.0, f"{elapsed:.2f} s for {len(text)} characters"  # re-splitting all: 19 s


def test_an_event_of_many_sentences_is_split_once_and_only_by_completed(monkeypatch) -> None:
    """``add`` (the event loop's half) never splits; ``completed`` splits the new text once per event, whatever
    its number of sentences (an 8 KB event of ~745 short sentences), and reports what ``feed`` would."""
    from ragtruth_spans.detectors.shared import sentences

    calls = []
    real = sentences.split_sentences
    monkeypatch.setattr(sentences, "split_sentences", lambda text: calls.append(len(text)) or real(text))
    event = "More text. " * 745
    tracker = SentenceTracker()
    assert tracker.add(event) is True and calls == []
    first = tracker.completed()
    assert len(first) == 744 and len(calls) == 1  # the last one may still grow
    assert tracker.add(event) and len(tracker.completed()) == 745 and len(calls) == 2
    assert calls[1] < len(event) + 20  # only the text after the last complete sentence
    assert tracker.add("") is False and tracker.add("More") is True
