"""How much of an evaluation a detector saw in training: fingerprints of the sources (contexts) and responses a
run trained or tuned on, and the count of gold responses that share one with it.

**Fingerprints.** A text's fingerprint is the SHA-256 (hex) of its normalised form — Unicode NFC, case-folded,
every run of whitespace collapsed to one space, stripped — so a copy that differs only in case, spacing or Unicode
composition still matches; the text itself is never stored. A run records them in :data:`TRAINED_ON_FILE` (written
by :func:`~ragtruth_spans.runs.run_dir.write_run_files`, listed in the run's manifest)::

    {"format": "ragtruth-spans trained-on", "version": 1, "normalisation": "...",
     "records": {"train": 1564, "eval": 300}, "sources": ["<sha256>", ...], "responses": ["<sha256>", ...]}

``records`` counts the records of each role (``train``: what the model was fitted on, augmented and extra records
included; ``eval``: what it was tuned or early-stopped on); ``sources`` and ``responses`` are the sorted, unique
fingerprints over all of them.

**Overlap.** :func:`count_overlap` tells, for gold records, how many share a source, a response, or either with the
training data (:class:`Overlap`): the evaluation commands report the figures on the other responses beside the
overall ones, and ``--drop-overlap`` leaves the overlapping ones out. A detector whose training data is not known
(a run written before runs recorded it, a predictions file that does not say which detector wrote it) has an
``unknown`` overlap, never a guessed one.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record

TRAINED_ON_FILE = "trained_on.json"
TRAINED_ON_FORMAT = "ragtruth-spans trained-on"
TRAINED_ON_VERSION = 1
NORMALISATION = "NFC, case-folded, whitespace runs collapsed to one space, stripped; SHA-256 of its UTF-8 bytes"
_WHITESPACE = re.compile(r"\s+")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def normalise(text: str) -> str:
    """``text`` as fingerprinted: NFC, case-folded (NFC again: case folding can decompose), whitespace runs as one
    space, stripped."""
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    return _WHITESPACE.sub(" ", folded).strip()


def text_fingerprint(text: str) -> str:
    """SHA-256 (hex) of :func:`normalise` of ``text``, UTF-8 encoded."""
    return hashlib.sha256(normalise(text).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class TrainedOn:
    """Fingerprints of the sources and responses a detector trained or tuned on; ``records``: records per role."""

    sources: frozenset[str]
    responses: frozenset[str]
    records: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_records(cls, by_role: Mapping[str, Iterable[Record]]) -> TrainedOn:
        """The fingerprints of every record of every role (``{"train": [...], "eval": [...]}``)."""
        sources: set[str] = set()
        responses: set[str] = set()
        counts: dict[str, int] = {}
        for role, records in by_role.items():
            counts[role] = 0
            for record in records:
                counts[role] += 1
                sources.add(text_fingerprint(record.context))
                responses.add(text_fingerprint(record.response))
        return cls(frozenset(sources), frozenset(responses), counts)

    def union(self, other: TrainedOn) -> TrainedOn:
        counts = dict(self.records)
        for role, n in other.records.items():
            counts[role] = counts.get(role, 0) + n
        return TrainedOn(self.sources | other.sources, self.responses | other.responses, counts)

    def to_dict(self) -> dict[str, Any]:
        return {"format": TRAINED_ON_FORMAT, "version": TRAINED_ON_VERSION, "normalisation": NORMALISATION,
                "records": dict(self.records), "sources": sorted(self.sources), "responses": sorted(self.responses)}

    def summary(self) -> dict[str, Any]:
        """What ``run_info.json`` says of it: the file, the records per role, how many fingerprints."""
        return {"file": TRAINED_ON_FILE, "records": dict(self.records), "sources": len(self.sources),
                "responses": len(self.responses)}

    @classmethod
    def read(cls, path: str | Path) -> TrainedOn:
        """A :data:`TRAINED_ON_FILE`; anything but one is an :class:`InputError` naming the file and field."""
        from ragtruth_spans.core.jsonl import read_json_file

        path = Path(path)
        data = read_json_file(path)
        if not isinstance(data, dict) or data.get("format") != TRAINED_ON_FORMAT:
            raise InputError(f"not a training-data fingerprint file (expected a JSON object with format "
                             f"{TRAINED_ON_FORMAT!r})", path=path)
        if data.get("version") != TRAINED_ON_VERSION:
            raise InputError(f"version {data.get('version')!r} is not supported (expected {TRAINED_ON_VERSION})",
                             path=path, field="version")
        digests = {}
        for key in ("sources", "responses"):
            values = data.get(key)
            if not isinstance(values, list) or not all(isinstance(v, str) and _HEX64.fullmatch(v) for v in values):
                raise InputError("must be a list of SHA-256 hex digests", path=path, field=key)
            digests[key] = frozenset(values)
        records = data.get("records")
        if not isinstance(records, dict) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                    for v in records.values()):
            raise InputError("must map roles to record counts", path=path, field="records")
        return cls(digests["sources"], digests["responses"], records)


Status = Literal["known", "unknown", "untrained"]


@dataclass(frozen=True)
class TrainingData:
    """What is known of a detector's training data: ``known`` (``trained_on`` set), ``untrained`` (ragtruth-spans
    did not train it: a rule or another named detector) or ``unknown`` (``reason`` says why); ``detector``
    names it (a run directory or a detector name)."""

    status: Status
    detector: str
    reason: str = ""
    trained_on: TrainedOn | None = None


@dataclass(frozen=True)
class Overlap:
    """Gold responses that share a source (context), a response, or either (``ids``) with a detector's training
    data, out of ``responses``; ``status``/``reason``/``detector`` from :class:`TrainingData`."""

    status: Status
    detector: str
    reason: str
    responses: int
    shared_source: int = 0
    shared_response: int = 0
    ids: frozenset[str] = frozenset()

    def to_dict(self) -> dict[str, Any]:
        known = self.status != "unknown"
        return {"status": self.status, "detector": self.detector, "reason": self.reason, "summary": self.words(),
                "gold_responses": self.responses, "shared_source": self.shared_source if known else None,
                "shared_response": self.shared_response if known else None,
                "overlapping": len(self.ids) if known else None}

    def words(self) -> str:
        """One line for a console or a page: the counts, or why they are not known."""
        if self.status == "unknown":
            return f"overlap unknown: {self.reason}"
        if self.status == "untrained":
            return f"no overlap: {self.reason}"
        return (f"{len(self.ids)} of {self.responses} gold responses overlap the training data of {self.detector} "
                f"({self.shared_source} share a source, {self.shared_response} a response)")


def count_overlap(gold: Sequence[Record], training: TrainingData) -> Overlap:
    """Which of ``gold`` share a source or a response with ``training`` (nothing when it is not ``known``)."""
    if training.trained_on is None:
        return Overlap(training.status, training.detector, training.reason, len(gold))
    seen = training.trained_on
    by_source = {r.id for r in gold if text_fingerprint(r.context) in seen.sources}
    by_response = {r.id for r in gold if text_fingerprint(r.response) in seen.responses}
    return Overlap("known", training.detector, training.reason, len(gold), len(by_source), len(by_response),
                   frozenset(by_source | by_response))


def without(gold: Sequence[Record], ids: Iterable[str]) -> list[Record]:
    """``gold`` without the records of ``ids``."""
    dropped = set(ids)
    return [r for r in gold if r.id not in dropped]
