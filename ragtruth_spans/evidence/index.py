"""What evidence needs to know about one context, computed once per context: its units (passages with offsets),
their content stems and facts (offsets of the context), inverse document frequencies, and the lexical relevance of
a claim to each unit.

Relevance (lexical) of a unit to a claim: the share of the claim's weighted content stems that the unit contains,
each stem weighted by its inverse document frequency over the context's units, so a number or a rare name counts
more than a common word. It is in [0, 1].
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from ragtruth_spans.data.facts import Fact, content_stems, facts, stem
from ragtruth_spans.evidence.units import Unit, context_units, key_words

_GENERIC_KEY_TEXT = (
    "attributes good for ambience business parking restaurants restaurant info review stars date text "
    "hours name categories accepts"
)
GENERIC_KEY_STEMS = frozenset(stem(w) for w in _GENERIC_KEY_TEXT.split())
"""Words of Data2txt keys that say nothing of the field by themselves."""


def key_stems(key: str) -> tuple[frozenset[str], str | None]:
    """``(stems of a key's specific words, the stem of those words joined)``: ``RestaurantsTakeOut`` →
    ``({"take", "out"}, "takeou")`` (so ``take out`` or ``takeout`` in a claim names it); the joined stem is None
    for one word."""
    words = [w for w in key_words(key).split() if stem(w) not in GENERIC_KEY_STEMS]
    joined = stem("".join(words)) if len(words) > 1 else None
    return frozenset(stem(w) for w in words), joined


@dataclass
class ContextIndex:
    """The units of one context with their stems and facts; facts' offsets are characters of the context."""

    context: str
    units: list[Unit]
    unit_stems: list[frozenset[str]]
    unit_facts: list[list[Fact]]
    idf: dict[str, float]
    max_idf: float
    stems: frozenset[str]
    fact_values: dict[str, frozenset[str]]

    @classmethod
    def build(cls, context: str, task: str) -> ContextIndex:
        units = context_units(context, task)
        unit_stems = [frozenset(content_stems(u.text)) | _joined_keys(u) for u in units]
        unit_facts = [_unit_facts(context, u) for u in units]
        df = Counter(s for stems in unit_stems for s in stems)
        n = max(1, len(units))
        idf = {s: math.log(1 + n / c) for s, c in df.items()}
        stems = frozenset(content_stems(context)) | frozenset(df)
        values: dict[str, set[str]] = {}
        for fact in facts(context) + [f for fs in unit_facts for f in fs]:
            values.setdefault(fact.kind, set()).add(fact.value)
        return cls(context=context, units=units, unit_stems=unit_stems, unit_facts=unit_facts, idf=idf,
                   max_idf=math.log(1 + n), stems=stems,
                   fact_values={k: frozenset(v) for k, v in values.items()})

    def weight(self, stem: str) -> float:
        """The inverse document frequency of ``stem`` (the largest one for a stem that no unit has)."""
        return self.idf.get(stem, self.max_idf)

    def relevance(self, claim: dict[str, float]) -> list[float]:
        """Lexical relevance in [0, 1] of every unit to ``claim`` (``{stem: weight}``), in unit order."""
        total = sum(w * self.weight(s) for s, w in claim.items())
        if total <= 0:
            return [0.0] * len(self.units)
        return [sum(w * self.weight(s) for s, w in claim.items() if s in stems) / total for stems in self.unit_stems]

    def coverage(self, stems: list[str]) -> float:
        """The idf-weighted share of ``stems`` found anywhere in the context (1.0 for no stem)."""
        unique = set(stems)
        total = sum(self.weight(s) for s in unique)
        return sum(self.weight(s) for s in unique if s in self.stems) / total if total > 0 else 1.0

    def has_fact(self, fact: Fact) -> bool:
        """Whether the context states this fact's value (names: as a stem anywhere in the context)."""
        if fact.kind == "name":
            return fact.value in self.stems or fact.value in self.fact_values.get("name", frozenset())
        if fact.kind == "num" and fact.value in self.stems:
            return True
        return fact.value in self.fact_values.get(fact.kind, frozenset())


def _joined_keys(unit: Unit) -> frozenset[str]:
    joined = key_stems(unit.keys[-1])[1] if unit.is_field and unit.keys else None
    return frozenset([joined]) if joined else frozenset()


def _unit_facts(context: str, unit: Unit) -> list[Fact]:
    """Facts of a unit with offsets of the context: read from the raw passage, or for a field from its written
    value (so a key such as ``"Monday"`` is a fact too)."""
    found = [Fact(f.kind, f.value, unit.start + f.start, unit.start + f.end)
             for f in facts(context[unit.start:unit.end])]
    if unit.is_field and unit.keys and unit.text != context[unit.start:unit.end]:
        # a JSON field: also the facts of its decoded value (escapes undone), placed on the whole value
        seen = {(f.kind, f.value) for f in found}
        start, end = unit.value_span or (unit.start, unit.end)
        found += [Fact(f.kind, f.value, start, end) for f in facts(unit.text) if (f.kind, f.value) not in seen]
    return found
