"""The gate's sentence splits (``Gate.sentences``): a long text split in the splitter's worker process into the
same sentences as in-process, a short one on the event loop, and no more than ``SPLITS_PENDING`` long splits
pending for all streams together (a stream that finds no room splits later, nothing lost)."""

from __future__ import annotations

import asyncio

import pytest

from ragtruth_spans.detectors.stream import SentenceTracker, split_open
from ragtruth_spans.serving.gate import INLINE_SPLIT_CHARS, SPLITS_PENDING, Gate
from ragtruth_spans.serving.gate_request import Upstream

TEXTS = [
    "More text. " * 745,  # an 8 KB event of short sentences, the splitter's costliest text
    "The Harbour Hotel opened in 1998. It has 120 rooms! Does it have a spa? Mr. Lee said: \"Yes.\" " * 40,
    ("Ein Satz. " * 30) + "\n- a list item\n- another one\nHeading\n" + "Près de l'hôtel… Et puis? Oui. " * 20,
    "1.2.3.4.5." * 500,  # sentence ends that never split
    "word " * 1200 + "end. Next one",  # a line over the splitter's long-line limit
    "   \n\t ",  # blank: no sentence
]


@pytest.fixture(scope="module")
def gate():
    gate = Gate(None, Upstream("http://127.0.0.1:9/v1"), lambda *a: None)
    yield gate
    asyncio.run(gate.aclose())


async def _fed(gate: Gate, text: str, size: int) -> tuple[list[tuple[int, int]], int]:
    """The sentences a tracker fed ``text`` in chunks of ``size`` reports through ``gate.sentences``; and how many
    splits went to the process."""
    tracker, reported, sent = SentenceTracker(), [], 0
    for i in range(0, len(text), size):
        if tracker.add(text[i:i + size]):
            sent += tracker.open_chars > INLINE_SPLIT_CHARS
            reported += await gate.sentences(tracker) or []
    return reported + tracker.finish(), sent


@pytest.mark.parametrize("text", TEXTS)
def test_a_split_in_the_worker_process_is_the_in_process_split(gate, text: str) -> None:
    assert asyncio.run(gate.splitter.run(split_open, text)) == split_open(text)


@pytest.mark.parametrize("size", [7, 500, 8192])
def test_a_stream_split_through_the_gate_reports_the_sentences_of_the_whole_answer(gate, size: int) -> None:
    text = TEXTS[1] + TEXTS[0]
    reported, sent = asyncio.run(_fed(gate, text, size))
    assert [text[a:b] for a, b in reported] == [text[a:b] for a, b in split_open(text)]
    assert sent > 0 or size < INLINE_SPLIT_CHARS


def test_no_room_in_the_splitters_process_splits_later_and_loses_nothing(gate) -> None:
    async def scenario() -> tuple[object, list[tuple[int, int]]]:
        import time

        busy = [asyncio.ensure_future(gate.splitter.run(time.sleep, 0.5)) for _ in range(SPLITS_PENDING)]
        await asyncio.sleep(0.05)
        tracker = SentenceTracker()
        tracker.add(TEXTS[0])
        skipped = await gate.sentences(tracker)  # no room: nothing split, nothing marked split
        await asyncio.gather(*busy)
        return skipped, await gate.sentences(tracker) or []

    skipped, later = asyncio.run(scenario())
    assert skipped is None and len(later) == 744
