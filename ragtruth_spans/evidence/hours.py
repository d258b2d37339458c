"""Opening hours of a Data2txt business against the hours a claim states.

The data's ``"hours": {"Monday": "7:0-14:0", ...}`` fields are read as ``(open, close)`` times per weekday; the
claim's days come from weekday names and ranges (``Monday through Friday``, ``Mon-Sat``), ``daily``, ``every
day``, ``seven days a week``, ``weekdays`` and ``weekends``; its times from the first two times of day it states
(``7 am``, ``2:00 PM``, ``noon``, ``midnight``). A claimed day without hours in the data, or with other times,
contradicts the claim; the conflicting fields' values are returned as offsets of the context.
"""

from __future__ import annotations

import re

from ragtruth_spans.evidence.facts import WEEKDAYS, facts
from ragtruth_spans.evidence.index import ContextIndex

_DAY = (r"((?i:mon)day|(?i:tue)sday|(?i:wed)nesday|(?i:thu)rsday|(?i:fri)day|(?i:sat)urday|(?i:sun)day|"
        r"Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)s?\b\.?")
_RANGE = re.compile(_DAY + r"\s*(?:-|–|to|through|thru|until)\s*" + _DAY)
_ONE_DAY = re.compile(r"\b" + _DAY)
_ALL_DAYS = re.compile(r"\b(daily|every\s+day|7\s+days|seven\s+days|all\s+week)\b", re.IGNORECASE)
_ABBREVIATIONS = {name[:3]: i for name, i in WEEKDAYS.items()}
_CLAUSES = re.compile(r"[;,]|\band\b|\bbut\b|\bwhile\b")
_HOURS_VALUE = re.compile(r"^\s*(\d{1,2}):(\d{1,2})\s*-\s*(\d{1,2}):(\d{1,2})\s*$")


def claimed_days(text: str) -> set[int] | None:
    """The weekdays (0 = Monday) ``text`` speaks of, or None when it names none."""
    if _ALL_DAYS.search(text):
        return set(range(7))
    days: set[int] = set()
    lowered = text.lower()
    if "weekday" in lowered:
        days |= set(range(5))
    if "weekend" in lowered:
        days |= {5, 6}
    for m in _RANGE.finditer(text):
        a, b = _ABBREVIATIONS[m.group(1)[:3].lower()], _ABBREVIATIONS[m.group(2)[:3].lower()]
        days |= {(a + k) % 7 for k in range((b - a) % 7 + 1)}
    days |= {_ABBREVIATIONS[m.group(1)[:3].lower()] for m in _ONE_DAY.finditer(text)}
    return days or None


def data_hours(index: ContextIndex) -> dict[int, tuple[int, str | None]]:
    """``{weekday: (unit index, "open-close")}`` of the context's ``hours`` fields (times as ``H:MM``); a day
    written ``0:0-0:0`` is closed (None), as RAGTruth's annotators read it."""
    out = {}
    for i, unit in enumerate(index.units):
        if len(unit.keys) >= 2 and unit.keys[-2].lower() == "hours" and isinstance(unit.value, str):
            day = _ABBREVIATIONS.get(unit.keys[-1][:3].lower())
            m = _HOURS_VALUE.match(unit.value)
            if day is not None and m:
                a, b, c, d = (int(g) for g in m.groups())
                out[day] = (i, f"{a % 24}:{b:02d}-{c % 24}:{d:02d}" if (a, b, c, d) != (0, 0, 0, 0) else None)
    return out


def claimed_hours(text: str) -> list[tuple[set[int] | None, str | None]]:
    """``[(days or None, "open-close" or None)]`` that ``text`` states, clause by clause: a clause with two times
    of day takes the days named in it, or those named in the clauses since the previous time range
    ("Monday, Tuesday and Wednesday from 9 am to 5 pm"); days named without times make a claim of their own."""
    claims: list[tuple[set[int] | None, str | None]] = []
    pending: set[int] = set()
    for clause in _CLAUSES.split(text):
        days = claimed_days(clause) or set()
        times = [f.value for f in facts(clause) if f.kind == "time"]
        if len(times) >= 2:
            claims.append(((days | pending) or None, f"{times[0]}-{times[1]}"))
            pending = set()
        else:
            pending |= days
    if pending and not claims:
        claims.append((pending, None))
    return claims


def hours_conflicts(index: ContextIndex, text: str) -> tuple[list[int], str] | None:
    """``(unit indices of the conflicting hours fields, reason)`` when ``text`` states opening days or hours the
    data contradicts; None when the data has no hours, the text states none, or they agree. A time range without
    days is compared with every day of the data."""
    hours = data_hours(index)
    if not hours:
        return None
    closed: set[int] = set()
    different: set[int] = set()
    for days, claimed in claimed_hours(text):
        for day in days if days is not None else {d for d, (_, h) in hours.items() if h is not None}:
            if day not in hours or hours[day][1] is None:
                closed.add(day)
            elif claimed is not None and hours[day][1] != claimed:
                different.add(day)
    if not closed and not different:
        return None
    names = list(WEEKDAYS)
    parts = []
    if closed:
        parts.append(f"closed or no hours on {', '.join(names[d].title() for d in sorted(closed))}")
    if different:
        parts.append(", ".join(f"{names[d].title()} {hours[d][1]}" for d in sorted(different)[:3]))
    conflicting = [hours[d][0] for d in sorted(different | closed) if d in hours] or [i for i, _ in hours.values()]
    return conflicting, "the data has " + "; ".join(parts)
