"""Keywords of a response and whether the question and context hold them (DelucionQA's keyword-match method).

The paper asked ChatGPT for the response's keywords; here they come from **YAKE** (``yake`` on PyPI: unsupervised,
statistical, offline) plus **every number** of the response. YAKE by design never returns candidates holding
digits, yet numbers, dates and amounts are the facts a RAG answer most often gets wrong, so they are added with the
project's number rule (:func:`ragtruth_spans.detectors.rules.numbers_in`).

A keyword is **present** when the question + context hold it: a number when some number there has the same value
(``1,200`` = ``1200``); a phrase when its lower-cased tokens occur there as consecutive tokens. Each missing
keyword is located in the response (its character occurrences), so the sentences holding it can be flagged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ragtruth_spans.detectors.rules import numbers_in
from ragtruth_spans.detectors.shared.sentences import Interval, tokens

DEFAULT_MAX_NGRAM = 2
DEFAULT_TOP = 10


@dataclass(frozen=True)
class Keyword:
    """A keyword of the response: its text, whether it is a number, and where it occurs (characters)."""

    text: str
    number: bool
    occurrences: tuple[Interval, ...]


@dataclass
class KeywordMatch:
    """The keywords of one response and the ones the question + context lack."""

    keywords: list[Keyword] = field(default_factory=list)
    missing: list[Keyword] = field(default_factory=list)

    @property
    def missing_share(self) -> float:
        """Missing keywords / keywords (0.0 for a response without keywords)."""
        return len(self.missing) / len(self.keywords) if self.keywords else 0.0


@cache
def _extractor(max_ngram: int, top: int) -> Any:
    import yake

    return yake.KeywordExtractor(lan="en", n=max_ngram, top=top)


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in tokens(phrase)]
    return re.compile(r"(?<!\w)" + r"\W+".join(words) + r"(?!\w)", re.IGNORECASE)


def response_keywords(response: str, *, max_ngram: int = DEFAULT_MAX_NGRAM, top: int = DEFAULT_TOP) -> list[Keyword]:
    """The numbers of ``response`` and YAKE's top keyphrases (up to ``max_ngram`` words), each once; a single
    word that is part of a kept keyphrase is not counted again (YAKE returns "Grand Hotel", "Grand", "Hotel")."""
    found: list[Keyword] = []
    seen: set[str] = set()
    for start, end, value in numbers_in(response):
        if ("#" + value) not in seen:
            seen.add("#" + value)
            occurrences = tuple((a, b) for a, b, v in numbers_in(response) if v == value)
            found.append(Keyword(text=response[start:end], number=True, occurrences=occurrences))
    candidates = [p for p, _ in _extractor(max_ngram, top).extract_keywords(response)] if response.strip() else []
    in_phrases = {t for p in candidates if len(tokens(p)) > 1 for t in tokens(p)}
    for phrase in candidates:
        words = tokens(phrase)
        key = " ".join(words)
        if not key or key in seen or (len(words) == 1 and words[0] in in_phrases):
            continue
        seen.add(key)
        occurrences = tuple(m.span() for m in _phrase_pattern(phrase).finditer(response))
        if occurrences:
            found.append(Keyword(text=phrase, number=False, occurrences=occurrences))
    return found


def match_keywords(response: str, evidence: str, *, max_ngram: int = DEFAULT_MAX_NGRAM,
                   top: int = DEFAULT_TOP) -> KeywordMatch:
    """The response's keywords and those that ``evidence`` (question + context) lacks."""
    evidence_numbers = {value for _, _, value in numbers_in(evidence)}
    evidence_text = " " + " ".join(tokens(evidence)) + " "
    match = KeywordMatch(keywords=response_keywords(response, max_ngram=max_ngram, top=top))
    for keyword in match.keywords:
        if keyword.number:
            present = numbers_in(keyword.text)[0][2] in evidence_numbers
        else:
            present = f" {' '.join(tokens(keyword.text))} " in evidence_text
        if not present:
            match.missing.append(keyword)
    return match
