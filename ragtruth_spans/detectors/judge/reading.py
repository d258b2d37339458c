"""Read what the judge answered, tolerantly, and say exactly what could not be read.

- :func:`strip_reasoning` removes ``<think>…</think>`` blocks that reasoning models put before their answer.
- :func:`read_span_answer` (span mode) finds the ``"hallucination list"`` value and parses it with the project's
  tolerant parser (:func:`~ragtruth_spans.detectors.shared.parsing.parse_generation`: code fences, prose,
  single quotes, truncation). An answer without the key is parsed whole (and that is noted as a repair). The
  result is a :class:`~ragtruth_spans.detectors.shared.parsing.ParseResult`; ``ok=False`` is a malformed
  answer.
- :func:`read_verdicts` (claims mode) reads ``number → verdict`` pairs in any of the usual shapes (a JSON object
  ``{"1": "supported"}``, lines ``1: supported`` or ``1. unsupported``), or, when no number is given, a list of
  exactly as many verdicts as statements, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragtruth_spans.detectors.shared.parsing import ParseResult, parse_generation

_THINK = re.compile(r"<think>.*?(?:</think>|$)", re.S | re.I)
_LIST_KEY = re.compile(r"""["']?hallucination[ _-]?list["']?\s*:\s*""", re.I)
_EXPECTED_REPAIRS = ("trailing text", "bare string item")
"""Repairs that the paper's format implies (the dict's closing brace; spans given as strings), not deviations."""
_LABEL = r"(unsupported|contradicted|supported|no[ _-]?claim)"
_NUMBERED = re.compile(r"""(\d+)\s*["']?\s*[:=.)\]-]+\s*["']?\s*""" + _LABEL + r"\b", re.I)
_BARE = re.compile(r"\b" + _LABEL + r"\b", re.I)


def strip_reasoning(text: str) -> tuple[str, bool]:
    """``text`` without ``<think>…</think>`` blocks (an unclosed one runs to the end) and whether any was there."""
    stripped = _THINK.sub("", text)
    return stripped, stripped != text


def read_span_answer(raw: str) -> ParseResult:
    """Span items of a span-mode answer (see the module docstring); ``raw`` is kept in the result."""
    text, had_reasoning = strip_reasoning(raw)
    key = _LIST_KEY.search(text)
    if key is None:
        result = parse_generation(text)
        if result.ok:
            result.repairs.append("no 'hallucination list' key")
    else:
        result = parse_generation(text[key.end():].split("```", 1)[0])  # up to a closing code fence
        result.repairs = [r for r in result.repairs if r not in _EXPECTED_REPAIRS]
    if had_reasoning:
        result.repairs.insert(0, "reasoning removed")
    result.raw = raw
    return result


def _canonical_verdict(label: str) -> str:
    label = label.lower()
    return "no claim" if label.startswith("no") else label


@dataclass
class Verdicts:
    """Verdicts of one claims-mode answer about ``n`` statements: ``by_number`` maps 1-based statement numbers to a
    verdict of :data:`~ragtruth_spans.detectors.judge.prompts.VERDICTS`. ``ok`` is False when no verdict at all
    could be read (a malformed answer)."""

    raw: str
    by_number: dict[int, str] = field(default_factory=dict)
    missing: list[int] = field(default_factory=list)
    conflicting: int = 0
    out_of_range: int = 0
    repairs: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.by_number)


def read_verdicts(raw: str, n: int) -> Verdicts:
    """The verdicts on statements ``1..n`` in ``raw``. A number given twice keeps its first verdict (a different
    second one is counted in ``conflicting``); numbers outside ``1..n`` are counted in ``out_of_range``."""
    text, had_reasoning = strip_reasoning(raw)
    result = Verdicts(raw=raw, repairs=["reasoning removed"] if had_reasoning else [])
    for match in _NUMBERED.finditer(text):
        number, verdict = int(match.group(1)), _canonical_verdict(match.group(2))
        if not 1 <= number <= n:
            result.out_of_range += 1
        elif number not in result.by_number:
            result.by_number[number] = verdict
        elif result.by_number[number] != verdict:
            result.conflicting += 1
    if not result.by_number and not result.out_of_range:
        labels = [_canonical_verdict(m.group(1)) for m in _BARE.finditer(text)]
        if len(labels) == n:
            result.by_number = dict(enumerate(labels, start=1))
            result.repairs.append("verdicts in order, without numbers")
    result.missing = [k for k in range(1, n + 1) if k not in result.by_number]
    return result
