"""Opening hours of a business record against the hours a text states: the weekdays and time ranges a text claims,
the hours of a JSON record's ``"hours"`` field, and the days on which the two disagree. Shared by the evidence
step (:mod:`ragtruth_spans.evidence.hours_conflicts`, which points at the conflicting fields) and the stacked detector's
conflict columns.

The record's ``"hours": {"Monday": "7:0-14:0", ...}`` fields are read as ``open-close`` times per weekday
(0 = Monday); the text's days come from weekday names and ranges (``Monday through Friday``, ``Mon-Sat``),
``daily``, ``every day``, ``seven days a week``, ``weekdays`` and ``weekends``; its times from the first two times
of day of a clause (``7 am``, ``2:00 PM``, ``noon``, ``midnight``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragtruth_spans.data.facts import WEEKDAYS, facts
from ragtruth_spans.data.records import json_record

_DAY = (r"((?i:mon)day|(?i:tue)sday|(?i:wed)nesday|(?i:thu)rsday|(?i:fri)day|(?i:sat)urday|(?i:sun)day|"
        r"Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)s?\b\.?")
_RANGE = re.compile(_DAY + r"\s*(?:-|–|to|through|thru|until)\s*" + _DAY)
_ONE_DAY = re.compile(r"\b" + _DAY)
_ALL_DAYS = re.compile(r"\b(daily|every\s+day|7\s+days|seven\s+days|all\s+week)\b", re.IGNORECASE)
ABBREVIATIONS = {name[:3]: i for name, i in WEEKDAYS.items()}
_CLAUSES = re.compile(r"[;,]|\band\b|\bbut\b|\bwhile\b")
_HOURS_VALUE = re.compile(r"^\s*(\d{1,2}):(\d{1,2})\s*-\s*(\d{1,2}):(\d{1,2})\s*$")


def claimed_days(text: str) -> set[int] | None:
    """The weekdays (0 = Monday) ``text`` speaks of, or None when it names none; named days win over
    ``weekdays`` / ``weekend`` in the same text (``at the weekend: 7 am to 8 pm on Saturday`` is Saturday).

    >>> sorted(claimed_days("open Monday through Wednesday and on Sundays"))
    [0, 1, 2, 6]
    >>> sorted(claimed_days("shorter hours at the weekend: 7 am to 8 pm on Saturday"))
    [5]
    """
    if _ALL_DAYS.search(text):
        return set(range(7))
    days: set[int] = set()
    for m in _RANGE.finditer(text):
        a, b = ABBREVIATIONS[m.group(1)[:3].lower()], ABBREVIATIONS[m.group(2)[:3].lower()]
        days |= {(a + k) % 7 for k in range((b - a) % 7 + 1)}
    days |= {ABBREVIATIONS[m.group(1)[:3].lower()] for m in _ONE_DAY.finditer(text)}
    lowered = text.lower()
    if not days and "weekday" in lowered:
        days |= set(range(5))
    if not days and "weekend" in lowered:
        days |= {5, 6}
    return days or None


@dataclass(frozen=True)
class HoursClaim:
    """What one clause of a text states: its ``days`` (None: none named), its ``hours`` (``open-close``, None: no
    time range) and where the clause stands in the text (``[start, end)``, characters)."""

    days: set[int] | None
    hours: str | None
    start: int
    end: int


def hours_claims(text: str) -> list[HoursClaim]:
    """The :class:`HoursClaim` of ``text``, clause by clause: a clause with two times of day takes the days named
    in it, or those named in the clauses since the previous time range ("Monday, Tuesday and Wednesday from 9 am
    to 5 pm"); days named without times make a claim of their own (spanning the text).

    >>> [(sorted(c.days), c.hours, c.start) for c in hours_claims("Mon 9 am to 5 pm, Sun 10 am to 2 pm")]
    [([0], '9:00-17:00', 0), ([6], '10:00-14:00', 17)]
    """
    claims: list[HoursClaim] = []
    pending: set[int] = set()
    bounds = [0, *(p for m in _CLAUSES.finditer(text) for p in (m.start(), m.end())), len(text)]
    for start, end in zip(bounds[::2], bounds[1::2]):
        clause = text[start:end]
        days = claimed_days(clause) or set()
        times = [f.value for f in facts(clause) if f.kind == "time"]
        if len(times) >= 2:
            claims.append(HoursClaim((days | pending) or None, f"{times[0]}-{times[1]}", start, end))
            pending = set()
        else:
            pending |= days
    if pending and not claims:
        claims.append(HoursClaim(pending, None, 0, len(text)))
    return claims


def claimed_hours(text: str) -> list[tuple[set[int] | None, str | None]]:
    """``[(days or None, "open-close" or None)]`` that ``text`` states (:func:`hours_claims`)."""
    return [(claim.days, claim.hours) for claim in hours_claims(text)]


def hours_value(value: object) -> str | bool | None:
    """An ``"open-close"`` field value as ``H:MM-H:MM`` (``7:0-14:0`` → ``7:00-14:00``); None for a closed day
    (``0:0-0:0``, as RAGTruth's annotators read it); False for a value that is no hours."""
    m = _HOURS_VALUE.match(value) if isinstance(value, str) else None
    if m is None:
        return False
    a, b, c, d = (int(g) for g in m.groups())
    return f"{a % 24}:{b:02d}-{c % 24}:{d:02d}" if (a, b, c, d) != (0, 0, 0, 0) else None


def record_hours(context: str) -> dict[int, str | None]:
    """``{weekday: "open-close" or None (closed)}`` of a JSON record's ``"hours"`` object (at any depth); empty for
    any other context.

    >>> record_hours('{"name": "Cafe", "hours": {"Monday": "7:0-14:0", "Sunday": "0:0-0:0"}}')
    {0: '7:00-14:00', 6: None}
    """
    stack, out = [json_record(context)], {}
    while stack:
        value = stack.pop()
        if not isinstance(value, dict):
            continue
        hours = value.get("hours")
        if isinstance(hours, dict):
            for day, field in hours.items():
                number, parsed = ABBREVIATIONS.get(str(day)[:3].lower()), hours_value(field)
                if number is not None and parsed is not False:
                    out[number] = parsed
        stack.extend(v for v in value.values() if isinstance(v, dict))
    return out


def conflicting_days(hours: dict[int, str | None], text: str) -> tuple[set[int], set[int]]:
    """``(closed, different)``: the days ``text`` claims open that ``hours`` (:func:`record_hours`) has closed or
    without hours, and those it gives other hours than the record's; both empty when the record has no hours or
    they agree. A time range without days is compared with every open day of the record.

    >>> conflicting_days({0: "7:00-14:00", 6: None}, "It opens at 7 am and closes at 2 pm on Mondays.")
    (set(), set())
    >>> conflicting_days({0: "7:00-14:00", 6: None}, "It is open Sundays from 7 am to 3 pm.")
    ({6}, set())
    """
    closed: set[int] = set()
    different: set[int] = set()
    for claim in hours_claims(text) if hours else ():
        found = claim_conflicts(hours, claim)
        closed |= found[0]
        different |= found[1]
    return closed, different


def claim_conflicts(hours: dict[int, str | None], claim: HoursClaim) -> tuple[set[int], set[int]]:
    """:func:`conflicting_days` of one claim."""
    closed: set[int] = set()
    different: set[int] = set()
    for day in claim.days if claim.days is not None else {d for d, h in hours.items() if h is not None}:
        if hours.get(day) is None:
            closed.add(day)
        elif claim.hours is not None and hours[day] != claim.hours:
            different.add(day)
    return closed, different
