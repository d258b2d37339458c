"""The sentences a two-tier detector checks: tier-1 rule, premise and (with gold spans) the label of each.

Sentence labels for tier 2 (training and tuning) come from the gold spans: a sentence is **unsupported** (label 1)
when at least one character of a gold span lies inside its trimmed interval ``[start, end)``; otherwise it is
supported (label 0). Sentences tier 1 filters out are never tier-2 examples.

The premise of a verifiable sentence is the ``top_k`` evidence units
(:func:`~ragtruth_spans.detectors.shared.sentences.evidence_units`) most similar to it by the retriever's embeddings,
joined with spaces in their context order; the cross-encoder reads ``(premise, sentence)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.shared.sentences import Interval, evidence_units, overlaps, split_sentences
from ragtruth_spans.detectors.twotier.tier1 import no_info_rule


@dataclass
class SentenceCheck:
    """One response sentence: its interval, tier-1 rule (None = verifiable), premise (verifiable only), gold
    label (records only: 1 unsupported, 0 supported) and tier-2 probability of being unsupported (once judged)."""

    interval: Interval
    text: str
    rule: str | None
    premise: str | None = None
    label: int | None = None
    probability: float | None = None


def sentence_checks(items: Sequence[DetectItem | Record | Mapping[str, Any]], encoder: Any,
                    top_k: int) -> list[list[SentenceCheck]]:
    """The checks of every item's sentences; premises are built for the verifiable ones (one embedding call for
    the whole batch of sentences; context units are cached by the encoder)."""
    from ragtruth_spans.detectors.shared.encoder import top_units

    per_item: list[list[SentenceCheck]] = []
    pending: list[tuple[SentenceCheck, list[str], Any]] = []
    for raw in items:
        item = DetectItem.of(raw)
        gold = raw.spans if isinstance(raw, Record) else None
        checks = []
        units: list[str] | None = None
        unit_embeddings = None
        for start, end in split_sentences(item.response):
            text = item.response[start:end]
            check = SentenceCheck(interval=(start, end), text=text, rule=no_info_rule(text))
            if gold is not None:
                check.label = int(overlaps((start, end), gold))
            if check.rule is None:
                if units is None:
                    units = evidence_units(item.context, item.task, item.question)
                    unit_embeddings = encoder.encode_units(units)
                pending.append((check, units, unit_embeddings))
            checks.append(check)
        per_item.append(checks)
    if pending:
        embeddings = encoder.encode([check.text for check, _, _ in pending])
        for (check, units, unit_embeddings), embedding in zip(pending, embeddings):
            check.premise = " ".join(units[i] for i in top_units(embedding, unit_embeddings, top_k))
    return per_item
