"""Sentences of a response and evidence units of a context, for the detectors that judge whole sentences
(the similarity family, the two-tier claim detector).

- :func:`split_sentences` cuts a text into sentences with ``pysbd`` (rule-based sentence boundary detection, no
  downloads) after cutting it at line breaks, so list items and headings are sentences of their own. Offsets are
  **characters of the text, half-open** ``[start, end)``; each sentence is **trimmed**: its leading and trailing
  whitespace (``str.isspace``) is left out, so ``text[start:end] == text[start:end].strip()``; sentences that are
  only whitespace are dropped. pysbd's cost grows faster than the length of what it is given (a 98 kB line took
  ~7 s), so a line longer than :data:`LONG_LINE_CHARS` is first cut into pieces at most that long, at a sentence
  end followed by a capital, digit or quote (else at a space): every piece costs the same per character, so
  splitting is linear in the text (measured in docs/BENCHMARKS.md). Lines of ordinary length are split exactly as
  before. pysbd's rules are run as ``Segmenter.segment`` runs them, but its sentences are placed in the line by
  :func:`_placed` (plain ``str.find``), not by a regular expression built from each sentence; and pysbd's modules
  compile their patterns through :class:`_CompiledOnce` (their ``re``), which keeps every pattern it compiled.
  pysbd builds its patterns as strings at each call (one per sentence of every new text, three per abbreviation
  found), more than ``re``'s cache of 512 holds, so every split compiled them all again: 3-4x the split's cost in
  a server (measured in docs/BENCHMARKS.md). The splits of the last :data:`SPLIT_CACHE_SIZE` texts are
  cached (a context sent again is not split again).
- :func:`evidence_units` turns a context (and the QA question) into the short texts a response sentence is
  compared with: the context's sentences, or, for a Data2txt context that is JSON, one ``key: value`` line per
  field (long string values, such as reviews, cut into sentences).
- :func:`tokens` are the lower-cased word tokens the overlap ratio and the keyword match compare.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

Interval = tuple[int, int]
TOKEN = re.compile(r"\w+(?:[.,]\d+)*")
"""A token: a run of word characters, with decimal or thousands parts kept (``3.5``, ``1,200``)."""
LONG_LINE_CHARS = 2000
"""A line longer than this is cut into pieces of at most this many characters before pysbd sees it."""
SPLIT_CACHE_SIZE = 128
"""Texts whose sentence split is kept (by content)."""
_BOUNDARY = re.compile(r"[.!?…][\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
LONG_VALUE_CHARS = 120
"""A JSON string value longer than this is cut into sentences (reviews, descriptions)."""


class _CompiledOnce:
    """The part of ``re`` pysbd calls, each pattern compiled once (a bounded cache: pysbd's patterns come from its
    fixed rules and abbreviation list; a sentence's own pattern is no longer built, see :func:`_placed`)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)  # flags, escape, compile and the rest: re's own

    @staticmethod
    @lru_cache(maxsize=4096)
    def _compiled(pattern: Any, flags: int) -> re.Pattern:
        return re.compile(pattern, flags)

    def sub(self, pattern: Any, repl: Any, string: str, count: int = 0, flags: int = 0) -> str:
        return self._compiled(pattern, flags).sub(repl, string, count)

    def findall(self, pattern: Any, string: str, flags: int = 0) -> list[Any]:
        return self._compiled(pattern, flags).findall(string)

    def finditer(self, pattern: Any, string: str, flags: int = 0) -> Any:
        return self._compiled(pattern, flags).finditer(string)

    def search(self, pattern: Any, string: str, flags: int = 0) -> re.Match | None:
        return self._compiled(pattern, flags).search(string)

    def match(self, pattern: Any, string: str, flags: int = 0) -> re.Match | None:
        return self._compiled(pattern, flags).match(string)

    def split(self, pattern: Any, string: str, maxsplit: int = 0, flags: int = 0) -> list[Any]:
        return self._compiled(pattern, flags).split(string, maxsplit)


@cache
def _segmenter() -> Any:
    import sys

    import pysbd

    compiled_once = _CompiledOnce()
    for name, module in list(sys.modules.items()):
        if name.startswith("pysbd.") and getattr(module, "re", None) is re:
            module.re = compiled_once  # see the module docstring
    return pysbd.Segmenter(language="en", clean=False)


def _trimmed(text: str, start: int, end: int) -> Interval | None:
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    lead = len(piece) - len(piece.lstrip())
    return start + lead, start + lead + len(stripped)


def _pieces(line: str, limit: int = LONG_LINE_CHARS) -> list[str]:
    """``line`` cut into consecutive pieces of at most ``limit`` characters (module docstring); a line within the
    limit is one piece."""
    if len(line) <= limit:
        return [line]
    pieces, start = [], 0
    while len(line) - start > limit:
        window = line[start:start + limit]
        cut = max((m.end() for m in _BOUNDARY.finditer(window)), default=0)
        if cut < limit // 4:
            cut = max(window.rfind(" ") + 1, cut)
        if cut < limit // 4:
            cut = limit
        pieces.append(line[start:start + cut])
        start += cut
    pieces.append(line[start:])
    return pieces


def _placed(sentences: list[str], line: str) -> list[str]:
    """The pieces of ``line`` that pysbd's ``Segmenter.segment`` returns for its processed ``sentences``: each
    sentence with the whitespace after it, at its first occurrence (scanning as ``re.finditer`` scans, without
    overlaps) that ends after the previous piece; a sentence not found is left out, as pysbd leaves it out."""
    pieces, prior_end = [], 0
    for sentence in sentences:
        at = 0
        while (found := line.find(sentence, at)) >= 0:
            end = found + len(sentence)
            while end < len(line) and line[end].isspace():
                end += 1
            if end > prior_end:
                pieces.append(line[found:end])
                prior_end = end
                break
            at = end if end > found else found + 1
    return pieces


def _segment(line: str) -> list[str]:
    """pysbd's pieces of a non-empty ``line`` (``Segmenter.segment`` with ``clean=False``, see the module
    docstring)."""
    segmenter = _segmenter()
    return _placed(segmenter.processor(line).process(), line)


def split_sentences(text: str) -> list[Interval]:
    """Trimmed sentence intervals ``[start, end)`` of ``text`` in order (see the module docstring)."""
    return list(_split_cached(text))


@lru_cache(maxsize=SPLIT_CACHE_SIZE)
def _split_cached(text: str) -> tuple[Interval, ...]:
    out: list[Interval] = []
    offset = 0
    for line in (piece for whole in text.splitlines(keepends=True) for piece in _pieces(whole)):
        if line.strip():
            position = offset
            for piece in _segment(line):
                # pysbd with clean=False returns pieces that concatenate to its input; find() guards the rare
                # case where it does not, so offsets always index the original text.
                found = text.find(piece, position) if piece else -1
                start = found if found >= 0 else position
                interval = _trimmed(text, start, min(start + len(piece), len(text)))
                if interval is not None:
                    out.append(interval)
                position = start + len(piece)
        offset += len(line)
    return tuple(out)


def _json_lines(value: Any, key: str = "", split: Callable[[str], list[Interval]] = split_sentences) -> list[str]:
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _json_lines(v, str(k), split)]
    if isinstance(value, list):
        return [line for item in value for line in _json_lines(item, key, split)]
    if isinstance(value, str) and len(value) > LONG_VALUE_CHARS:
        return [value[a:b] for a, b in split(value)]
    shown = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value
    return [f"{key}: {shown}" if key else shown]


def evidence_units(context: str, task: str, question: str | None = None,
                   split: Callable[[str], list[Interval]] = split_sentences) -> list[str]:
    """The texts a response sentence is compared with: the question (QA), then the context's sentences, or one
    ``key: value`` line per field of a Data2txt JSON context (a context that is not JSON is cut into sentences).
    ``split`` cuts texts into sentence intervals (default :func:`split_sentences`)."""
    units = [question.strip()] if question and question.strip() else []
    if task == "Data2txt":
        try:
            data = json.loads(context)
        except (ValueError, RecursionError):  # not JSON, or JSON Python refuses late (huge integers, deep nesting)
            data = None
        if isinstance(data, (dict, list)):
            return units + [line for line in _json_lines(data, split=split) if line.strip()]
    return units + [context[a:b] for a, b in split(context)]


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens of ``text`` (:data:`TOKEN`)."""
    return [m.group().lower() for m in TOKEN.finditer(text)]


def overlaps(interval: Interval, spans: Any) -> bool:
    """Whether ``interval`` shares at least one character with any of ``spans`` (objects with start/end)."""
    start, end = interval
    return any(s.start < end and start < s.end for s in spans)
