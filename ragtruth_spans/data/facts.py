"""What a claim and a passage are compared by: content-word stems, and checkable facts (numbers, times of day,
months, weekdays, names, negations) with their offsets in the text they were read from.

Offsets are characters of the text given, half-open ``[start, end)``. Values are normalised so that the same
fact written two ways compares equal: ``1,200`` and ``1200``; ``4.0`` and ``4``; ``three and a half`` and ``3.5``;
``2 pm``, ``14:00`` and ``14:0``; ``December`` and the ``12`` of ``2020-12-16``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STOPWORD_TEXT = (
    "a about above after again against all also am an and any are as at be because been before being "
    "below between both but by can could did do does doing down during each few for from further had has "
    "have having he her here hers herself him himself his how i if in into is it its itself just let me "
    "more most my myself of off on once only or other our ours out over own same she should so some such "
    "than that the their theirs them then there these they this those through to too under until up very "
    "was we were what when where which while who whom why will with would you your yours also well may "
    "might must shall per via etc overall however including include includes based offer offers offering "
    "provide provides providing located location business restaurant restaurants"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "without", "cannot", "n't", "neither", "nobody",
                       "nothing", "lacks", "lack"})
MONTHS = {m: i + 1 for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                          "september", "october", "november", "december"))}
MONTHS |= {m[:3]: i for m, i in list(MONTHS.items()) if m != "may"} | {"sept": 9}
WEEKDAYS = {d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
                                        "sunday"))}
NUMBER_WORDS = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                            "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                            "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
NUMBER_WORDS |= {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
                 "hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9, "dozen": 12,
                 "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
                 "eighth": 8, "ninth": 9, "tenth": 10, "twice": 2, "once": 1, "single": 1, "double": 2, "triple": 3}
FACT_KINDS = ("num", "time", "month", "weekday", "name")

WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?|\d+(?:[.,]\d+)*", re.UNICODE)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d{1,2}))?\s*([ap])\.?\s?m\b\.?"
                   r"|\b(\d{1,2}):(\d{1,2})(?::\d{2})?\b|\b(noon|midnight)\b", re.IGNORECASE)
_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?(?![\w])|(?<![\w.])\d+(?:\.\d+)?(?=[a-zA-Z%$])")
_HALF = re.compile(r"\b([a-z]+|\d+)\s+and\s+a\s+half\b", re.IGNORECASE)
_NAME = re.compile(r"(?<![\w'])([A-Z][\w'’-]*[a-z][\w'’-]*)")
_PASSAGE_LABEL = re.compile(r"passage\s*$", re.IGNORECASE)
"""RAGTruth's QA contexts number their passages (``passage 1:``): those numbers are labels, not facts."""
_SENTENCE_START = re.compile(r"(^|[.!?:;\n]\s*|[\"“(]\s*|\d+\.\s+)$")


@dataclass(frozen=True)
class Fact:
    """A checkable fact: ``kind`` (one of :data:`FACT_KINDS`), its normalised ``value`` and where it is written,
    ``[start, end)`` of the text it was read from."""

    kind: str
    value: str
    start: int
    end: int


def stem(word: str) -> str:
    """A crude, stable stem: lower-cased, possessive and plural ``s`` dropped, cut to six characters."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        w = w[:-1]
    return w[:6]


def content_stems(text: str) -> list[str]:
    """Stems of the words of ``text`` that are not stopwords (numbers kept as written, commas removed)."""
    out = []
    for m in WORD.finditer(text):
        w = m.group().lower()
        if w in STOPWORDS or w in NEGATIONS or (len(w) < 2 and not w.isdigit()):
            continue
        out.append(w.replace(",", "") if w[0].isdigit() else stem(w))
    return out


def negations(text: str) -> list[tuple[int, int]]:
    """Where ``text`` negates: ``not``, ``no``, ``never``, ``n't`` ... as ``[start, end)`` intervals."""
    out = []
    for m in re.finditer(r"[^\W\d_]+(?:['’]t\b)?", text):
        w = m.group().lower().replace("’", "'")
        if w in NEGATIONS or w.endswith("n't"):
            out.append((m.start(), m.end()))
    return out


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _time_value(m: re.Match[str]) -> str:
    if m.group(6):
        return "12:00" if m.group(6).lower() == "noon" else "0:00"
    if m.group(3):
        hour, minute = int(m.group(1)) % 12 + (12 if m.group(3).lower() == "p" else 0), int(m.group(2) or 0)
    else:
        hour, minute = int(m.group(4)), int(m.group(5))
    return f"{hour % 24}:{minute:02d}"


def _numbers(text: str, taken: list[tuple[int, int]]) -> list[Fact]:
    facts = []
    free = lambda a, b: not any(a < e and s < b for s, e in taken)  # noqa: E731
    for m in _HALF.finditer(text):
        head = m.group(1).lower()
        base = NUMBER_WORDS.get(head) if not head.isdigit() else int(head)
        if base is not None:
            facts.append(Fact("num", _num(base + 0.5), m.start(), m.end()))
            taken.append((m.start(), m.end()))
    for m in _NUMBER.finditer(text):
        if free(m.start(), m.end()) and not _PASSAGE_LABEL.search(text, max(0, m.start() - 9), m.start()):
            facts.append(Fact("num", _num(float(m.group().replace(",", ""))), m.start(), m.end()))
    for m in WORD.finditer(text):
        w = m.group().lower()
        if w in NUMBER_WORDS and free(m.start(), m.end()) and w not in {"once", "second", "single"}:
            facts.append(Fact("num", _num(NUMBER_WORDS[w]), m.start(), m.end()))
    return facts


def _names(text: str) -> list[Fact]:
    facts = []
    for m in _NAME.finditer(text):
        w = m.group(1).lower().rstrip("'’")
        if (w in STOPWORDS or w in MONTHS or w in WEEKDAYS or w in NUMBER_WORDS or w in NEGATIONS
                or _SENTENCE_START.search(text[max(0, m.start() - 6):m.start()])):
            continue
        facts.append(Fact("name", stem(w.replace("-", "")), m.start(), m.end()))  # Wi-Fi names WiFi
    return facts


def facts(text: str) -> list[Fact]:
    """The facts of ``text`` in order of position (see the module docstring)."""
    out: list[Fact] = []
    taken: list[tuple[int, int]] = []
    for m in _DATE.finditer(text):
        out += [Fact("num", str(int(m.group(1))), m.start(1), m.end(1)),
                Fact("month", str(int(m.group(2))), m.start(2), m.end(2)),
                Fact("num", str(int(m.group(3))), m.start(3), m.end(3))]
        taken.append((m.start(), m.end()))
    for m in _TIME.finditer(text):
        if not any(m.start() < e and s < m.end() for s, e in taken):
            out.append(Fact("time", _time_value(m), m.start(), m.end()))
            taken.append((m.start(), m.end()))
    out += _numbers(text, taken)
    for m in WORD.finditer(text):
        w = m.group().lower()
        if w in MONTHS and (w != "may" or m.group()[0] == "M"):
            out.append(Fact("month", str(MONTHS[w]), m.start(), m.end()))
        elif w in WEEKDAYS:
            out.append(Fact("weekday", str(WEEKDAYS[w]), m.start(), m.end()))
    out += _names(text)
    return sorted(out, key=lambda f: (f.start, f.end))
