"""Synthetic training data: typed hallucinations injected into clean responses, with exact character offsets.

Each kind edits one clean response (a training record without gold spans) and returns a new record whose only
gold span is the injected text (``response[start:end] == span.text``, half-open, characters):

============  =======================  ===============================================================
kind          RAGTruth type            edit
============  =======================  ===============================================================
number        Evident Conflict         a number the context also states becomes another number
entity        Evident Conflict         a capitalised name the context states becomes another name of the
                                       same context
negation      Subtle Conflict          ``is``/``was``/``can``/... gets ``not``, or a word becomes its
                                       antonym (``increase`` → ``decrease``)
clause        Evident Baseless Info    a sentence from a response about another source (same task) is
                                       inserted after a sentence
qualifier     Subtle Baseless Info     an unsupported qualifier (``family-owned``, ``cozy``, ...) is
                                       inserted after ``a``/``an``/``the``
============  =======================  ===============================================================

The 13 kinds added for transfer (:data:`TRANSFER_KINDS`: date, unit, quantity, antonym, comparison, name-new,
attribution, figure, recommendation, addition, sentence, json-false, json-invented) live in :mod:`.augment_transfer`
(its docstring has their table); :data:`EDITS` holds every kind's edit.

An edit that finds nothing to change in a response is skipped and counted (``skipped[kind]``). Augmentation is
seeded (one ``random.Random(seed)``) and applied to training records only, never to dev or test data. New
records keep their source's ``source_id`` (so source-disjoint folds stay disjoint) and get the id
``<id>#aug-<kind>``.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace

from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.data.augment_edit import AUGMENTED_ID, NAME, SENTENCE, TYPES, edited
from ragtruth_spans.data.augment_transfer import TRANSFER_EDITS, TRANSFER_KINDS

KINDS: tuple[str, ...] = ("number", "entity", "negation", "clause", "qualifier")
ALL_KINDS: tuple[str, ...] = KINDS + TRANSFER_KINDS
QUALIFIERS = ("family-owned", "cozy", "award-winning", "renowned", "popular", "world-class", "affordable",
              "newly renovated", "highly rated", "historic", "well-known", "luxurious", "controversial",
              "long-awaited", "record-breaking", "state-of-the-art", "beloved", "upscale")
ANTONYMS = {"increase": "decrease", "increased": "decreased", "higher": "lower", "more": "less", "before": "after",
            "open": "closed", "opened": "closed", "allowed": "banned", "rise": "fall", "rose": "fell",
            "largest": "smallest", "first": "last", "won": "lost", "approved": "rejected", "positive": "negative",
            "early": "late", "north": "south", "east": "west", "good": "poor", "cheap": "expensive"}
ANTONYMS |= {v: k for k, v in list(ANTONYMS.items())}
_NUMBER = re.compile(r"(?<![\w.,])\d+(?:[.,]\d+)*(?![\w])")
_AUX = re.compile(r"\b(is|are|was|were|can|will|has|have|does|did)\b(?! not\b)")
_DETERMINER = re.compile(r"\b(a|an|the)\s+(?=[a-z])")


def is_augmented(record: Record) -> bool:
    """Whether ``record`` was made by :func:`augment` (its id carries ``#aug-<kind>``)."""
    return AUGMENTED_ID in record.id


@dataclass
class AugmentStats:
    """Records written per kind, and responses a kind found nothing to edit in."""

    made: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return {"made": dict(self.made), "skipped": dict(self.skipped)}


def _number(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    found = [m for m in _NUMBER.finditer(record.response) if m.group() in record.context]
    if not found:
        return None
    m = rng.choice(found)
    digits = m.group().replace(",", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    delta = rng.choice([1, 2, 3, 5, 10]) * rng.choice([-1, 1])
    new = value + delta if value + delta >= 0 else value + abs(delta)
    text = f"{new:g}" if "." in digits else str(int(new))
    return edited(record, "number", m.start(), m.end(), text) if text != m.group() else None


def _entity(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    names = {m.group() for m in NAME.finditer(record.context)}
    found = [m for m in NAME.finditer(record.response)
             if m.group() in names and m.start() > 0 and record.response[m.start() - 2:m.start()].strip() not in ".!?"]
    others = sorted(names)
    if not found or len(others) < 2:
        return None
    m = rng.choice(found)
    choices = [n for n in others if n != m.group() and n not in m.group() and m.group() not in n]
    return edited(record, "entity", m.start(), m.end(), rng.choice(choices)) if choices else None


def _negation(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    words = [m for m in re.finditer(r"\b\w+\b", record.response) if m.group().lower() in ANTONYMS]
    if words and rng.random() < 0.5:
        m = rng.choice(words)
        new = ANTONYMS[m.group().lower()]
        new = new.capitalize() if m.group()[0].isupper() else new
        return edited(record, "negation", m.start(), m.end(), new)
    found = list(_AUX.finditer(record.response))
    if not found:
        return None
    m = rng.choice(found)
    return edited(record, "negation", m.start(), m.end(), f"{m.group()} not")


class DonorPool(Sequence[Record]):
    """The records edits draw donors from, indexed once by task and source: :meth:`other_sources` is, without
    copying the pool, the list ``[r for r in pool if r.task_type == task and r.source_id != source]`` (so
    ``rng.choice`` over it draws what it drew over that list: augmenting N records is linear in N, not
    quadratic)."""

    def __init__(self, records: Sequence[Record]) -> None:
        self.records = records
        self._by_task: dict[str, list[Record]] = {}
        self._own: dict[tuple[str, str], list[int]] = {}
        for record in records:
            same_task = self._by_task.setdefault(record.task_type, [])
            self._own.setdefault((record.task_type, record.source_id), []).append(len(same_task))
            same_task.append(record)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index):  # type: ignore[override]
        return self.records[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def other_sources(self, record: Record) -> Sequence[Record]:
        """The pool's records of ``record``'s task from other sources, in pool order.

        >>> a, b, c = (Record(i, s, "QA", "m", "train", "good", "x", "ctx") for i, s in ("a1", "s1"), ("b", "s2"),
        ...            ("a2", "s1"))
        >>> [r.id for r in DonorPool([a, b, c]).other_sources(a)]
        ['b']
        """
        return _SkippingView(self._by_task.get(record.task_type, []),
                             self._own.get((record.task_type, record.source_id), []))


class _SkippingView(Sequence[Record]):
    """``records`` without the positions ``skip`` (ascending), read in place."""

    def __init__(self, records: list[Record], skip: list[int]) -> None:
        self.records, self.skip = records, skip

    def __len__(self) -> int:
        return len(self.records) - len(self.skip)

    def __getitem__(self, index):  # type: ignore[override]
        if not 0 <= index < len(self):
            raise IndexError(index)
        for position in self.skip:
            if position > index:
                break
            index += 1
        return self.records[index]


def _clause(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    donors = (pool if isinstance(pool, DonorPool) else DonorPool(pool)).other_sources(record)
    ends = [m.end() for m in SENTENCE.finditer(record.response)]
    if not donors or not ends:
        return None
    sentences = [s.strip() for s in SENTENCE.findall(rng.choice(donors).response) if len(s.split()) >= 4]
    if not sentences:
        return None
    at = rng.choice(ends)
    new = rng.choice(sentences)
    response = record.response[:at] + " " + new + record.response[at:]
    span = Span(at + 1, at + 1 + len(new), TYPES["clause"], new)
    return replace(record, id=f"{record.id}{AUGMENTED_ID}clause", response=response, spans=[span])


def _qualifier(record: Record, rng: random.Random, pool: Sequence[Record]) -> Record | None:
    found = list(_DETERMINER.finditer(record.response))
    options = [q for q in QUALIFIERS if q.lower() not in record.context.lower()]
    if not found or not options:
        return None
    m = rng.choice(found)
    new = rng.choice(options)
    response = record.response[:m.end()] + new + " " + record.response[m.end():]
    span = Span(m.end(), m.end() + len(new), TYPES["qualifier"], new)
    return replace(record, id=f"{record.id}{AUGMENTED_ID}qualifier", response=response, spans=[span])


EDITS: dict[str, Callable[[Record, random.Random, Sequence[Record]], Record | None]] = {
    "number": _number, "entity": _entity, "negation": _negation, "clause": _clause, "qualifier": _qualifier,
    **TRANSFER_EDITS}
"""Every kind's edit: ``edit(record, rng, pool)`` → the edited record, or None when nothing fits."""


def augment(records: Sequence[Record], *, kinds: Sequence[str] = KINDS, share: float = 1.0, seed: int = 0,
            rounds: int = 1) -> tuple[list[Record], AugmentStats]:
    """New records: in each of ``rounds`` passes, each clean record of ``records`` is edited, with probability
    ``share``, by one kind drawn from ``kinds`` (see the module docstring); pass ``r`` > 1 appends ``r`` to the new
    ids. Returns only the new records, and the counts."""
    rng = random.Random(seed)
    stats = AugmentStats()
    out = []
    pool = DonorPool(records)
    for round_ in range(1, rounds + 1):
        for record in records:
            if record.spans or rng.random() >= share:
                continue
            kind = rng.choice(list(kinds))
            new = EDITS[kind](record, rng, pool)
            if new is None:
                stats.skipped[kind] += 1
                continue
            assert all(new.response[s.start:s.end] == s.text for s in new.spans)
            stats.made[kind] += 1
            out.append(new if round_ == 1 else replace(new, id=f"{new.id}{round_}"))
    return out, stats
