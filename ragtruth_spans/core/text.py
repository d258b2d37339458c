"""One text model at the boundary: every text a detector reads is in Unicode normal form C (NFC), and every offset
it returns is mapped back to the caller's own string.

The same words can be spelled with precomposed letters ("Genève", NFC: what keyboards and most files give) or
decomposed ones ("Gene\\u0300ve", NFD: what macOS file names and many PDFs give). Tokenizers, word patterns and
string comparisons treat the two differently, so a detector would decide differently for the same text. The
detector entry (:class:`~ragtruth_spans.detectors.base.Detector`), the evidence finder and the training records
therefore see NFC only: :class:`NormalText` holds a text, its NFC form and the offset maps between them.

Offsets are characters, half-open ``[start, end)``. The text is cut into **groups**: the shortest runs of characters
that normalise independently of their neighbours (a letter and its combining marks, a Hangul syllable's jamo). A
group boundary maps exactly both ways; an offset inside a group that normalisation changed (there is no such
position on the other side) snaps outward: a start to the group's start, an end to the group's end, so a mapped
span covers whole characters and never cuts a letter from its accents.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass, replace

from ragtruth_spans.core.types import Record, canonical_spans

NORMAL_FORM = "NFC"


@dataclass(frozen=True)
class _Group:
    """``original[a:b]`` normalises to ``text[na:nb]``; ``same``: the two are identical (offsets map one to one)."""

    a: int
    b: int
    na: int
    nb: int
    same: bool


@dataclass(frozen=True)
class NormalText:
    """``original`` and its NFC form ``text``; ``groups`` is empty when the two are identical (the usual case)."""

    original: str
    text: str
    groups: tuple[_Group, ...] = ()
    _starts: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
    """The groups' starts in the original and in :attr:`text` (for the maps' binary search)."""

    @classmethod
    def of(cls, original: str) -> NormalText:
        """The NFC form of ``original`` with its offset maps (no copy and no map when it is already NFC)."""
        if unicodedata.is_normalized(NORMAL_FORM, original):
            return cls(original, original)
        groups: list[_Group] = []
        parts: list[str] = []
        at = 0
        for a, b, normal in _normal_groups(original):
            groups.append(_Group(a, b, at, at + len(normal), normal == original[a:b]))
            parts.append(normal)
            at += len(normal)
        return cls(original, "".join(parts), tuple(groups),
                   (tuple(g.a for g in groups), tuple(g.na for g in groups)))

    @property
    def changed(self) -> bool:
        """Whether normalisation changed the text."""
        return bool(self.groups)

    def to_original(self, offset: int, *, end: bool = False) -> int:
        """The offset of the original string for ``offset`` of :attr:`text` (a start, or an ``end``)."""
        if not self.groups:
            return offset
        return _map(self.groups, self._starts[1], offset, end, forward=False)

    def from_original(self, offset: int, *, end: bool = False) -> int:
        """The offset of :attr:`text` for ``offset`` of the original string (a start, or an ``end``)."""
        if not self.groups:
            return offset
        return _map(self.groups, self._starts[0], offset, end, forward=True)

    def span_to_original(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` of :attr:`text` as a range of the original string (never empty when it was not)."""
        return self.to_original(start), self.to_original(end, end=True)

    def span_from_original(self, start: int, end: int) -> tuple[int, int]:
        """``[start, end)`` of the original string as a range of :attr:`text`."""
        return self.from_original(start), self.from_original(end, end=True)


def normalise(text: str) -> str:
    """``text`` in NFC (the one form detectors read)."""
    return unicodedata.normalize(NORMAL_FORM, text)


def normal_record(record: Record) -> Record:
    """``record`` as a detector reads it: response, context and question in NFC, gold spans moved onto the NFC
    response (the records a family trains and tunes on, so training sees the text detection sees)."""
    response, context = NormalText.of(record.response), NormalText.of(record.context)
    question = None if record.question is None else normalise(record.question)
    if not (response.changed or context.changed or question != record.question):
        return record
    spans = []
    for span in record.spans:
        start, end = response.span_from_original(span.start, span.end)
        spans.append(replace(span, start=start, end=end,
                             text=None if span.text is None else response.text[start:end]))
    return replace(record, response=response.text, context=context.text, question=question,
                   spans=canonical_spans(spans))


def _segments(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """``[a, b)`` runs of ``text[start:stop]``: a character of combining class 0 and the combining marks after it."""
    cuts = [i for i in range(start + 1, stop) if not unicodedata.combining(text[i])]
    bounds = [start, *cuts, stop]
    return [(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1) if bounds[k + 1] > bounds[k]]


_ASCII_RUN = re.compile(r"[\x00-\x7f]+")


def _normal_groups(text: str) -> list[tuple[int, int, str]]:
    """``(a, b, NFC of text[a:b])`` for consecutive groups covering ``text``. ASCII never composes with the
    character before it nor changes, so a run of ASCII is one unchanged group but for its last character, which
    may take the combining marks after it; the rest goes through :func:`_grouped`."""
    groups: list[tuple[int, int, str]] = []
    done = 0
    for run in _ASCII_RUN.finditer(text):
        a, b = run.span()
        if a > done:
            groups.extend(_grouped(text, done, a))
        end = b if b == len(text) else b - 1  # the run's last character may carry the marks after it
        if end > a:
            groups.append((a, end, text[a:end]))
        done = end
    if done < len(text):
        groups.extend(_grouped(text, done, len(text)))
    return groups


def _grouped(text: str, start: int, stop: int) -> list[tuple[int, int, str]]:
    """The groups of ``text[start:stop]``: a segment joins the group before it when normalising them together
    differs from normalising them apart (a starter that composes with the one before, as Hangul jamo do)."""
    groups: list[tuple[int, int, str]] = []
    for a, b in _segments(text, start, stop):
        normal = normalise(text[a:b])
        if groups:
            ga, _, g_normal = groups[-1]
            joined = normalise(text[ga:b])
            if joined != g_normal + normal:
                groups[-1] = (ga, b, joined)
                continue
        groups.append((a, b, normal))
    return groups


def _map(groups: tuple[_Group, ...], keys: tuple[int, ...], offset: int, end: bool, *, forward: bool) -> int:
    """Map ``offset`` across the groups (original → NFC when ``forward``; ``keys``: the groups' starts on the side
    mapped from), snapping outward inside a changed group."""
    k = max(bisect_right(keys, offset) - 1, 0)
    if end and k > 0 and offset == keys[k]:
        k -= 1  # an end at a group boundary belongs to the group before it
    group = groups[k]
    src_a, src_b, dst_a, dst_b = (group.a, group.b, group.na, group.nb) if forward else \
        (group.na, group.nb, group.a, group.b)
    if offset >= src_b:
        return dst_b + (offset - src_b)  # past the last group (an offset at the very end)
    if offset <= src_a:
        return dst_a
    if group.same:
        return dst_a + (offset - src_a)
    return dst_b if end else dst_a
