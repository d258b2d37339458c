"""``Detector.detect_stream``: span events as sentences complete, and a final result equal to ``detect`` on the
joined text, for any cut of the answer into chunks."""

from __future__ import annotations

import re

import pytest

from ragtruth_spans import Detection, DetectItem, Detector, Span
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.stream import SentenceTracker

CONTEXT = "The bridge opened in 1932. It is 503 metres long and carries 8 lanes."
ANSWER = "The bridge opened in 1931. It is 503 metres long.\nIt carries 6 lanes and cost 20 million."


class NewNumbers(Detector):
    """Flags the numbers the context does not hold; its response score is the share of new numbers, so a later
    sentence changes it."""

    kind = "new-numbers"

    def detect_batch(self, items):
        out = []
        for item in (DetectItem.of(i) for i in items):
            numbers = list(re.finditer("[0-9]+", item.response))
            new = [m for m in numbers if m.group() not in item.context]
            out.append(Detection(spans=[Span(m.start(), m.end(), score=1.0) for m in new],
                                 score=len(new) / len(numbers) if numbers else 0.0))
        return out


def _chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


@pytest.mark.parametrize("size", [1, 3, 7, 20, 1000])
def test_the_final_event_equals_detect_on_the_joined_text_for_any_chunking(size: int) -> None:
    detector = NewNumbers()
    events = list(detector.detect_stream(CONTEXT, _chunks(ANSWER, size)))
    final = events[-1]
    assert final.final and not any(e.final for e in events[:-1])
    assert final.detection == detector.detect(context=CONTEXT, response=ANSWER, task="Summary")
    assert final.text == ANSWER and final.checked == len(ANSWER)


def test_each_sentence_is_reported_once_in_order_and_its_spans_lie_inside_it() -> None:
    events = list(NewNumbers().detect_stream(CONTEXT, _chunks(ANSWER, 4)))
    sentences = [s for e in events for s in e.sentences]
    assert [ANSWER[a:b] for a, b in sentences] == ["The bridge opened in 1931.", "It is 503 metres long.",
                                                    "It carries 6 lanes and cost 20 million."]
    first = events[0]
    assert not first.final and [ANSWER[s.start:s.end] for s in first.spans] == ["1931"]
    assert first.score == 1.0  # judged on the first sentence alone: its one number is new
    for event in events[:-1]:
        assert all(any(a <= s.start and s.end <= b for a, b in event.sentences) for s in event.spans)
    assert [ANSWER[s.start:s.end] for s in events[-1].spans] == ["1931", "6", "20"]


def test_a_sentence_event_comes_before_the_answer_ends() -> None:
    """The first sentence is judged as soon as the second starts, not at the end."""
    detector = NewNumbers()
    seen: list[int] = []

    def chunks():
        for i, chunk in enumerate(_chunks(ANSWER, 5)):
            seen.append(i)
            yield chunk

    stream = detector.detect_stream(CONTEXT, chunks())
    first = next(stream)
    assert not first.final and len(seen) < len(_chunks(ANSWER, 5)) // 2


def test_an_empty_answer_is_refused_as_detect_refuses_it() -> None:
    with pytest.raises(InputError):
        list(NewNumbers().detect_stream(CONTEXT, ["", "  "]))


def test_the_question_sets_the_task_as_for_detect() -> None:
    seen: list[str] = []

    class Recording(NewNumbers):
        def detect_batch(self, items):
            seen.extend(DetectItem.of(i).task for i in items)
            return super().detect_batch(items)

    list(Recording().detect_stream(CONTEXT, [ANSWER], question="When did it open?"))
    assert set(seen) == {"QA"}


def test_the_tracker_reports_sentences_that_only_complete_at_the_end() -> None:
    tracker = SentenceTracker()
    assert tracker.feed("One sentence without an end") == []
    assert tracker.finish() == [(0, 27)]
    assert tracker.finish() == []


@pytest.mark.slow
def test_the_shipped_detector_streams_to_its_own_detect_result() -> None:
    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir
    from ragtruth_spans.detectors.loader import load_detector

    detector = load_detector("default")
    records = [r for r in load_ragtruth(sample_data_dir(), split="test") if r.task_type == "QA"][:3]
    for record in records:
        events = list(detector.detect_stream(record.context, _chunks(record.response, 9), record.question))
        whole = detector.detect(context=record.context, response=record.response, question=record.question)
        assert events[-1].detection == whole
