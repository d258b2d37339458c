"""Checking an answer while it is written: span events as its sentences complete, then the whole answer's result.

A sentence is **complete** once the text after it starts another sentence (the project's splitter,
:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences`, cuts the text so far; its last sentence may
still grow) or when the answer ends. When sentences complete, the detector judges the answer up to the end of the
last complete sentence, and the spans that fall in the newly completed sentences are sent: they are what the
detector says of that much of the answer (a later sentence can change the response-level score, so a span may
come or go in the final result). The final event is the detector's result on the whole answer — exactly
:meth:`Detector.detect <ragtruth_spans.detectors.base.Detector.detect>` on the joined text (tested). Offsets are
characters of the whole answer, half-open ``[start, end)``; every judgement of one stream shares its context's
encoding (the encoder's context cache).

:class:`SentenceTracker` is the bookkeeping alone (text in, completed sentences out), shared by
:meth:`Detector.detect_stream <ragtruth_spans.detectors.base.Detector.detect_stream>` and the HTTP gate
(:mod:`ragtruth_spans.serving.proxy`).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ragtruth_spans.core.types import Span

logger = logging.getLogger(__name__)

Interval = tuple[int, int]


_MAY_END = ".!?…;:。！？‼⁇⁈⁉\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
"""Characters after which a sentence may end (sentence punctuation, line breaks): only text arriving after one of
them can complete a sentence, so only then is the growing sentence split again."""
_END_THEN_TEXT = re.compile(f"[{re.escape(_MAY_END)}]\\s*\\S")
_END_AT_END = re.compile(f"[{re.escape(_MAY_END)}]\\s*$")
SHORT_TAIL_CHARS = 512
"""A growing sentence up to this long is split again on every chunk that may complete it; a longer one only once
it has grown by a quarter since its last split (so its splits cost linear time in all)."""


class SentenceTracker:
    """The answer's text as it arrives and the sentences of it that are complete (see the module docstring).

    Incremental: only the text after the last complete sentence is split again, and only when a chunk brings text
    after a possible sentence end (amortized cost per chunk independent of the answer already read).

    >>> tracker = SentenceTracker()
    >>> tracker.feed("It opened in 19")
    []
    >>> tracker.feed("98. It has ")
    [(0, 18)]
    >>> tracker.feed("four floors. And")
    [(19, 38)]
    >>> tracker.finish()
    [(39, 42)]
    >>> tracker.text[19:38]
    'It has four floors.'
    """

    def __init__(self) -> None:
        self._parts: list[str] = []  # the answer in pieces, joined only when read (``text``)
        self._length = 0
        self._open = 0  # where the text not yet in a complete sentence starts
        self._split_at = 0  # the answer's length at the last split of the open text
        self._ready = False  # text came after a possible sentence end since the last split
        self._end_pending = False  # the text ends in a possible sentence end (with only whitespace after it)
        self.done: list[Interval] = []
        """The sentences reported complete so far, in order."""

    @property
    def text(self) -> str:
        """The answer so far."""
        if len(self._parts) > 1:
            self._parts = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""

    def feed(self, chunk: str) -> list[Interval]:
        """Add ``chunk`` to the answer; the sentences it completed (none when it only grew the last one)."""
        return self.completed() if self.add(chunk) else []

    def add(self, chunk: str) -> bool:
        """The cheap half of :meth:`feed`: ``chunk`` added to the answer, unsplit; whether :meth:`completed` may now
        find sentences (a caller may run that, the costly half, in a thread of its own: the splitter takes ~20-40
        µs a character)."""
        if not chunk:
            return False
        self._parts.append(chunk)
        self._length += len(chunk)
        self._ready = self._ready or bool(_END_THEN_TEXT.search(chunk)) or (self._end_pending and not chunk.isspace())
        self._end_pending = bool(_END_AT_END.search(chunk)) or (self._end_pending and chunk.isspace())
        tail = self._length - self._open
        return self._ready and not (tail > SHORT_TAIL_CHARS and 4 * (self._length - self._split_at) < tail)

    @property
    def open_chars(self) -> int:
        """Characters after the last complete sentence: what :meth:`completed` splits."""
        return self._length - self._open

    def completed(self) -> list[Interval]:
        """The sentences the text added so far completed and not reported yet: one split of the text after the
        last complete sentence, whatever the number of chunks or sentences it holds."""
        start, text = self.pending()
        return self.completed_in(start, split_open(text))

    def pending(self) -> tuple[int, str]:
        """:meth:`completed` in halves, for a caller that splits elsewhere (another process): where the text after
        the last complete sentence starts and that text, now counted as split; its :func:`split_open` then goes
        to :meth:`completed_in` (chunks may be added meanwhile)."""
        self._split_at, self._ready = self._length, False
        return self._open, self.text[self._open:]

    def completed_in(self, start: int, split: list[Interval]) -> list[Interval]:
        """The sentences ``split`` (:func:`split_open` of the text :meth:`pending` gave, starting at ``start``)
        completed, not reported yet; none when ``start`` is no longer where the open text starts (stale)."""
        if start != self._open:
            return []
        return self._new([(a + start, b + start) for a, b in split[:-1]])

    def finish(self) -> list[Interval]:
        """The answer has ended: its sentences not reported yet (the last one included)."""
        start, text = self.pending()
        return self._new([(a + start, b + start) for a, b in split_open(text)])

    def _new(self, complete: list[Interval]) -> list[Interval]:
        reached = self.done[-1][1] if self.done else 0
        new = [(a, b) for a, b in complete if b > reached and a >= reached]
        if not new:
            return []
        self.done.extend(new)
        self._open = new[-1][1]
        return new


@dataclass
class StreamEvent:
    """One event of :meth:`Detector.detect_stream <ragtruth_spans.detectors.base.Detector.detect_stream>`.

    - ``final`` False: ``sentences`` just completed (intervals of the answer), ``spans`` the detector's spans
      inside them and ``score`` its response score, both judged on the answer up to ``checked`` characters.
    - ``final`` True: ``detection`` is the whole answer's result (:meth:`~ragtruth_spans.detectors.base.Detector.detect`
      on the joined text), ``spans`` and ``score`` its own, ``sentences`` the ones not reported before.
    """

    sentences: list[Interval]
    spans: list[Span]
    score: float | None
    checked: int
    final: bool = False
    detection: Any = None
    """The final event's :class:`~ragtruth_spans.detectors.base.Detection` (None before)."""
    text: str = field(default="", repr=False)
    """The answer so far (the whole answer in the final event)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``final``, ``sentences`` (``[start, end]`` pairs), ``spans`` (each with its text),
        ``score``, ``checked``; the final event adds ``error`` and the diagnostics of its detection."""
        out: dict[str, Any] = {"final": self.final, "sentences": [list(s) for s in self.sentences],
                               "spans": [{"text": self.text[s.start:s.end], **s.to_dict()} for s in self.spans],
                               "score": self.score, "checked": self.checked}
        if self.detection is not None:
            out |= {k: v for k, v in self.detection.to_dict().items() if k not in ("spans", "score")}
        return out


def split_open(text: str) -> list[Interval]:
    """Sentence intervals ``[start, end)`` of ``text``
    (:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences`), none for a blank one: the split of
    :meth:`SentenceTracker.completed`, a module-level function so that another process can run it.

    >>> split_open("It opened. It has")
    [(0, 10), (11, 17)]
    """
    from ragtruth_spans.detectors.shared.sentences import split_sentences

    return split_sentences(text) if text.strip() else []


def load_splitter() -> None:
    """Load the sentence splitter (its first use builds it): at a process's start, never on a request's time."""
    split_open("Loaded. Now.")


def spans_within(spans: Iterable[Span], sentences: list[Interval]) -> list[Span]:
    """The spans that overlap any of ``sentences`` (each span once, in order).

    >>> [s.start for s in spans_within([Span(0, 4), Span(10, 12), Span(30, 33)], [(8, 20)])]
    [10]
    """
    return [s for s in spans if any(s.start < b and a < s.end for a, b in sentences)]


def detect_stream(detect: Callable[[str], Any], chunks: Iterable[str],
                  prepare: Callable[[], None] | None = None) -> Iterator[StreamEvent]:
    """:class:`StreamEvent` objects for an answer arriving in ``chunks`` (see the module docstring), judged by
    ``detect`` (an answer's text → its :class:`~ragtruth_spans.detectors.base.Detection`); the last one is final.
    An answer that is empty or only whitespace raises what ``detect`` raises for it, after the chunks are read.
    ``prepare`` (the detector's :meth:`~ragtruth_spans.detectors.base.Detector.prepare_context`) runs in a thread
    of its own from the start, while the first chunks arrive; the events are the same without it.

    >>> from ragtruth_spans import Detection
    >>> found = lambda text: Detection(spans=[Span(0, 3)] if text.startswith("Ten") else [], score=0.5)
    >>> [(e.sentences, len(e.spans), e.final) for e in detect_stream(found, ["Ten cats. Two", " dogs."])]
    [([(0, 9)], 1, False), ([(10, 19)], 1, True)]
    """
    tracker = SentenceTracker()
    ahead = None if prepare is None else start_preparing(prepare)

    def judged(new: list[Interval], final: bool) -> StreamEvent:
        checked = len(tracker.text) if final else new[-1][1]
        found = detect(tracker.text[:checked])
        spans = list(found.spans) if final else spans_within(found.spans, new)
        return StreamEvent(sentences=new, spans=spans, score=found.score, checked=checked, final=final,
                           detection=found if final else None, text=tracker.text[:checked])

    try:
        for chunk in chunks:
            new = tracker.feed(chunk)
            if new:
                yield judged(new, final=False)
        yield judged(tracker.finish(), final=True)
    finally:
        if ahead is not None:
            ahead.join()


def start_preparing(prepare: Callable[[], None]) -> threading.Thread:
    """``prepare()`` started in a daemon thread (joined by the caller); a failure is logged at debug level and
    costs nothing but the time saved (the check then does the work itself and meets the same error, if any)."""
    def run() -> None:
        try:
            prepare()
        except Exception as exc:  # the check that follows raises it where it belongs
            logger.debug("preparing the context failed (%s: %s)", type(exc).__name__, exc)

    thread = threading.Thread(target=run, name="prepare-context", daemon=True)
    thread.start()
    return thread
