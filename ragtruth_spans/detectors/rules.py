"""Rule-based reference detectors (no model, no training), built by name:

- ``numbers``: flags every number of the response whose value appears nowhere in the context or the question —
  the commonest RAGTruth hallucination is a wrong or invented number, date or amount. Numbers are runs of digits
  with optional thousands separators and decimals (``1,200``, ``3.5``, ``1998``); ``1,200`` and ``1200`` are the
  same value, and so are ``3.50`` and ``3.5``; digits of any script are read by their value (``١٩٩٩``, ``１９９９``
  and ``𝟏𝟗𝟗𝟗`` are all 1999). The span is the number's characters; its type is Evident Conflict
  when the context states some number (a wrong value), else Evident Baseless Info.
- ``absent-words``: flags every content word of the response (a word that is not a stop word) that appears nowhere
  in the context or the question — the crude word-absence reference: it catches an invented name, figure or
  clause, and flags every faithful synonym or reformatted number. Words are compared NFKC-normalised and
  case-folded, a possessive ``'s`` dropped, numbers by value (``1,200`` == ``1200``); flagged words with nothing
  but whitespace or a hyphen/dash between them are one span; its type is Evident Baseless Info.
- ``flag-all``: the whole response is one span (the recall ceiling and the precision floor of span metrics).
- ``flag-none``: never flags anything (every response clean).

Scores: a span scores 1.0; the response score is 1.0 with a span and 0.0 without (these rules have no graded
confidence).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.family import Family, check_options
from ragtruth_spans.detectors.stacked.text import STOP_WORDS, normalise

NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?!\w)")
"""A number: digits with optional ``,``-thousands groups and an optional decimal part, not inside a word."""
WORD = re.compile(r"\d+(?:[.,]\d+)*|\w+(?:['’]\w+)*")
"""A word for ``absent-words``: a number with its separators, or a run of word characters with inner apostrophes."""
_JOINER = re.compile(r"[\s\-‐‑–—]*")


def number_value(text: str) -> str:
    """Canonical value of a number as written: digits of any script as ASCII digits, thousands separators dropped,
    trailing decimal zeros dropped."""
    value = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text).replace(",", "")
    if "." in value:
        value = value.rstrip("0").rstrip(".")
    return value.lstrip("0") or "0"


def numbers_in(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, value)`` of every number in ``text`` (character offsets, half-open)."""
    return [(m.start(), m.end(), number_value(m.group())) for m in NUMBER.finditer(text)]


def word_key(word: str) -> str:
    """How ``absent-words`` compares a word: NFKC, case-folded, a possessive ``'s`` dropped, a number by value."""
    key = normalise(word)
    for suffix in ("'s", "’s"):
        if key.endswith(suffix) and len(key) > len(suffix):
            key = key[: -len(suffix)]
    return number_value(key) if NUMBER.fullmatch(key) else key


def absent_word_spans(response: str, evidence: str) -> list[tuple[int, int]]:
    """``[start, end)`` of the runs of content words of ``response`` absent from ``evidence`` (see the module
    docstring: adjacent absent words, with only whitespace or a hyphen/dash between them, are one run)."""
    known = {word_key(m.group()) for m in WORD.finditer(evidence)}
    runs: list[tuple[int, int]] = []
    for m in WORD.finditer(response):
        key = word_key(m.group())
        if key in STOP_WORDS or key in known:
            continue
        if runs and _JOINER.fullmatch(response, runs[-1][1], m.start()):
            runs[-1] = (runs[-1][0], m.end())
        else:
            runs.append(m.span())
    return runs


def _as_detection(spans: list[Span]) -> Detection:
    return Detection(spans=spans, score=1.0 if spans else 0.0)


class RuleDetector(Detector):
    """A rule of this family, named by :attr:`name` (what ``describe`` records)."""

    kind = "rules"
    name: str = ""

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name}


class NumberDetector(RuleDetector):
    """``numbers``: every number of the response whose value is not in the context or the question."""

    name = "numbers"

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        results = []
        for item in map(DetectItem.of, items):
            evidence = {value for _, _, value in numbers_in(item.context + "\n" + (item.question or ""))}
            span_type = "Evident Conflict" if evidence else "Evident Baseless Info"
            spans = [Span(start, end, type=span_type, score=1.0)
                     for start, end, value in numbers_in(item.response) if value not in evidence]
            results.append(_as_detection(spans))
        return results


class AbsentWordsDetector(RuleDetector):
    """``absent-words``: every run of content words of the response that the context and question lack."""

    name = "absent-words"

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        results = []
        for item in map(DetectItem.of, items):
            runs = absent_word_spans(item.response, item.context + "\n" + (item.question or ""))
            results.append(_as_detection([Span(start, end, type="Evident Baseless Info", score=1.0)
                                          for start, end in runs]))
        return results


class FlagAllDetector(RuleDetector):
    """``flag-all``: the whole response (without surrounding whitespace) is one hallucinated span."""

    name = "flag-all"

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        results = []
        for item in map(DetectItem.of, items):
            text = item.response
            start, end = len(text) - len(text.lstrip()), len(text.rstrip())
            results.append(_as_detection([Span(start, end, score=1.0)] if end > start else []))
        return results


class FlagNoneDetector(RuleDetector):
    """``flag-none``: no response has a hallucination."""

    name = "flag-none"

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        return [_as_detection([]) for _ in map(DetectItem.of, items)]


def _factory(cls: type[RuleDetector]):
    def build(**options: Any) -> Detector:
        check_options("rule-based", options, set())
        return cls()
    return build


RULES = (NumberDetector, AbsentWordsDetector, FlagAllDetector, FlagNoneDetector)
FAMILY = Family(kind="rules", summary="rule-based references: unsupported numbers, words absent from the context, "
                                      "flag everything, flag nothing",
                named={cls.name: _factory(cls) for cls in RULES}, extra=None)
