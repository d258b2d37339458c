"""Context windows: the premises a response sentence is judged against, covering the whole context.

- A text context is cut into its sentences (:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences`);
  a sentence longer than ``max_chars`` is cut at spaces into pieces at most that long. A window starts at every
  piece and holds up to ``sentences`` consecutive pieces while their span stays within ``max_chars``, so every
  character of every sentence lies in some window (nothing is truncated away) and no window is longer than the
  model reads. Its offsets are characters of the context, half-open ``[start, end)``.
- A Data2txt context that is JSON is read as the other detectors read it: one ``key: value`` line per field
  (:func:`~ragtruth_spans.detectors.shared.sentences.evidence_units`); a window starts at every line and holds
  up to ``fields`` consecutive lines within ``max_chars``, joined by line breaks. Such a window has no offsets
  (its text is not a substring of the context).
- For QA, the question is put before every window's text (the premise then reads "question, passage").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from ragtruth_spans.detectors.shared.sentences import Interval, evidence_units, split_sentences


@dataclass(frozen=True)
class Window:
    """One premise: ``text`` (what the encoder compares), ``premise`` (what the cross-encoder reads: the question
    and the text) and its context offsets ``[start, end)`` (None for JSON fields)."""

    text: str
    premise: str
    start: int | None = None
    end: int | None = None


def _cut(context: str, interval: Interval, max_chars: int) -> list[Interval]:
    """``interval`` cut at spaces into pieces of at most ``max_chars`` characters (trimmed, none empty)."""
    start, end = interval
    pieces = []
    while end - start > max_chars:
        cut = context.rfind(" ", start + 1, start + max_chars + 1)
        cut = cut if cut > start else start + max_chars
        pieces.append((start, cut))
        start = cut
        while start < end and context[start].isspace():
            start += 1
    if start < end:
        pieces.append((start, end))
    return pieces


def _groups(count: int, size: int, max_chars: int, length: Callable[[int, int], int]) -> list[tuple[int, int]]:
    """``[i, j)`` index ranges: one starting at every piece, holding up to ``size`` pieces while ``length(i, j)``
    (the characters of pieces ``i`` to ``j - 1`` together) stays within ``max_chars`` (always one piece)."""
    out = []
    for i in range(count):
        j = i + 1
        while j < min(i + size, count) and length(i, j + 1) <= max_chars:
            j += 1
        out.append((i, j))
    return out


def text_windows(context: str, *, sentences: int, max_chars: int) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows of a text context (see the module docstring); one per piece."""
    pieces = [p for s in split_sentences(context) for p in _cut(context, s, max_chars)]
    groups = _groups(len(pieces), sentences, max_chars, lambda i, j: pieces[j - 1][1] - pieces[i][0])
    return [(pieces[i][0], pieces[j - 1][1]) for i, j in groups]


def _cut_text(text: str, max_chars: int) -> list[str]:
    return [text[a:b] for a, b in _cut(text, (0, len(text)), max_chars)] or [text]


def _json_fields(context: str) -> list[str] | None:
    """The ``key: value`` lines of a JSON context (None when it is not a JSON object or array)."""
    try:
        data = json.loads(context)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, (dict, list)):
        return None
    return evidence_units(context, "Data2txt")


def context_windows(context: str, task: str, question: str | None = None, *, sentences: int = 2, fields: int = 6,
                    max_chars: int = 600) -> list[Window]:
    """Every window of ``context`` for ``task`` (see the module docstring)."""
    prefix = f"{question.strip()}\n" if task == "QA" and question and question.strip() else ""
    lines = _json_fields(context) if task == "Data2txt" else None
    if lines:
        pieces = [piece for line in lines for piece in _cut_text(line, max_chars)]
        groups = _groups(len(pieces), fields, max_chars, lambda i, j: sum(len(x) + 1 for x in pieces[i:j]) - 1)
        texts = dict.fromkeys("\n".join(pieces[i:j]) for i, j in groups)
        return [Window(text, prefix + text) for text in texts]
    return [Window(context[a:b], prefix + context[a:b], a, b)
            for a, b in text_windows(context, sentences=sentences, max_chars=max_chars)]
