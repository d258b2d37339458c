"""Opening hours of a Data2txt business against the hours a claim states, as evidence: the fields of the
context's ``hours`` that a claim contradicts (what the claim states and how it is read:
:mod:`ragtruth_spans.data.hours`).
"""

from __future__ import annotations

from ragtruth_spans.data.facts import WEEKDAYS
from ragtruth_spans.data.hours import ABBREVIATIONS, conflicting_days, hours_value
from ragtruth_spans.evidence.index import ContextIndex


def data_hours(index: ContextIndex) -> dict[int, tuple[int, str | None]]:
    """``{weekday: (unit index, "open-close")}`` of the context's ``hours`` fields (times as ``H:MM``); a day
    written ``0:0-0:0`` is closed (None), as RAGTruth's annotators read it."""
    out = {}
    for i, unit in enumerate(index.units):
        if len(unit.keys) >= 2 and unit.keys[-2].lower() == "hours" and isinstance(unit.value, str):
            day = ABBREVIATIONS.get(unit.keys[-1][:3].lower())
            parsed = hours_value(unit.value)
            if day is not None and parsed is not False:
                out[day] = (i, parsed)
    return out


def hours_conflicts(index: ContextIndex, text: str) -> tuple[list[int], str] | None:
    """``(unit indices of the conflicting hours fields, reason)`` when ``text`` states opening days or hours the
    data contradicts; None when the data has no hours, the text states none, or they agree. A time range without
    days is compared with every day of the data."""
    hours = data_hours(index)
    closed, different = conflicting_days({day: value for day, (_, value) in hours.items()}, text)
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
