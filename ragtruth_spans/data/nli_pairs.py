"""The NLI pair format (``ragtruth-spans import nli``, read by the entailment family) and what every NLI reader
shares: the labels, the pair, text clean-up (PTB tokenisation undone), blank texts skipped and counted, and the
removal of pairs repeated across sets.

One pair: ``{"id", "premise", "hypothesis", "label", "source", "split", "binary"}`` and optionally ``subset`` and
``task`` (docs/DATA.md). ``label`` is one of :data:`NLI_LABELS`; ``binary`` marks the rows of sets that only say
supported / not supported.

Duplicates (:func:`remove_duplicates`): two pairs are the same when their premise and hypothesis are equal after
whitespace normalisation and casefolding. The copy in test wins over dev over train (a train copy of a test pair is
never trained on); copies in the winning split with two different labels are all dropped; otherwise the first copy
(set order, then file order) is kept. Every dropped copy is counted by source and reason.
"""

from __future__ import annotations

import logging
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ragtruth_spans.core.fields import check_text, is_blank
from ragtruth_spans.data.imported import ImportReport

logger = logging.getLogger(__name__)

NLI_LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction", "not_entailment")
"""Three-way labels, and ``not_entailment`` for binary sets whose negative class mixes neutral and contradiction."""
NLI_SPLITS: tuple[str, ...] = ("train", "dev", "test")
_SPLIT_RANK = {name: rank for rank, name in enumerate(NLI_SPLITS)}
BLANK_REASON = "blank premise or hypothesis"

_PTB_BRACKETS = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}"}
_BRACKET = re.compile("|".join(map(re.escape, _PTB_BRACKETS)))
_QUOTES = re.compile(r"``|''")
_CLITIC = re.compile(r" (n't|['’](?:s|re|ve|ll|d|m))\b", re.IGNORECASE)
_BEFORE = re.compile(r" ([.,;:!?%)\]}])")
_AFTER = re.compile(r"([(\[{]) ")
_QUOTED = re.compile(r'" ([^"]*?) "')


@dataclass(frozen=True)
class NliPair:
    """One labelled premise–hypothesis pair (module docstring)."""

    id: str
    premise: str
    hypothesis: str
    label: str
    source: str
    split: str
    binary: bool
    subset: str | None = None
    task: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of one line of a prepared NLI file (``subset``/``task`` only when set)."""
        out: dict[str, Any] = {"id": self.id, "premise": self.premise, "hypothesis": self.hypothesis,
                               "label": self.label, "source": self.source, "split": self.split,
                               "binary": self.binary}
        out.update({k: v for k, v in (("subset", self.subset), ("task", self.task)) if v is not None})
        return out


def detokenize(text: str) -> str:
    """``text`` written as PTB-tokenised text is undone: bracket tokens (``-LRB-`` → ``(``), ````  ''`` →
    ``"``, spaces before punctuation and clitics (``dog 's`` → ``dog's``, ``do n't`` → ``don't``) and inside
    brackets and quotes removed, whitespace runs collapsed.

    >>> detokenize("Soul Food -LRB- 1997 -RRB- is by Kenneth `` Babyface '' Edmonds , and it 's good . ")
    'Soul Food (1997) is by Kenneth "Babyface" Edmonds, and it\\'s good.'
    """
    text = " ".join(text.split())
    text = _BRACKET.sub(lambda m: _PTB_BRACKETS[m.group()], text)
    text = _QUOTES.sub('"', text)
    text = _CLITIC.sub(r"\1", text)
    text = _AFTER.sub(r"\1", _BEFORE.sub(r"\1", text))
    return _QUOTED.sub(r'"\1"', text)


class PairMaker:
    """Builds the pairs of one set: text fields checked (valid Unicode, :func:`~ragtruth_spans.core.fields.
    check_text`), optionally detokenised (counted as a repair when it changes a text), blank ones skipped and
    counted in ``report``."""

    def __init__(self, source: str, report: ImportReport, *, binary: bool, tokenised: bool = False) -> None:
        self.source, self.report, self.binary, self.tokenised = source, report, binary, tokenised
        self.pairs: list[NliPair] = []

    def add(self, pid: str, premise: Any, hypothesis: Any, label: str, split: str, *, path: Any, line: int | None,
            fields: tuple[str, str] = ("premise", "hypothesis"), subset: str | None = None) -> None:
        """Count one input item and keep its pair unless a text is blank; ``fields`` name the two texts' columns
        in errors."""
        self.report.input += 1
        texts = []
        for value, name in zip((premise, hypothesis), fields):
            text = check_text(value, field=name, path=path, line=line)
            if self.tokenised:
                clean = detokenize(text)
                if clean != " ".join(text.split()):
                    self.report.repair(f"{name}: PTB tokenisation undone")
                text = clean
            texts.append(text.strip())
        if is_blank(texts[0]) or is_blank(texts[1]):
            self.report.skip(BLANK_REASON)
            return
        self.pairs.append(NliPair(pid, texts[0], texts[1], label, self.source, split, self.binary, subset))


def pair_key(pair: NliPair) -> tuple[str, str]:
    """What makes two pairs the same: premise and hypothesis, whitespace-normalised and casefolded."""
    return " ".join(pair.premise.split()).casefold(), " ".join(pair.hypothesis.split()).casefold()


def remove_duplicates(pairs: Sequence[NliPair]) -> tuple[list[NliPair], dict[str, Counter[str]]]:
    """``(kept pairs in their order, {source: Counter(reason)} of the dropped copies)`` (module docstring)."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, pair in enumerate(pairs):
        groups[pair_key(pair)].append(index)
    dropped: dict[int, str] = {}
    for members in groups.values():
        if len(members) == 1:
            continue
        top = max(_SPLIT_RANK[pairs[i].split] for i in members)
        winners = [i for i in members if _SPLIT_RANK[pairs[i].split] == top]
        for i in members:
            if _SPLIT_RANK[pairs[i].split] < top:
                dropped[i] = f"repeats a {NLI_SPLITS[top]} pair (the {NLI_SPLITS[top]} copy kept)"
        if len({pairs[i].label for i in winners}) > 1:
            dropped.update({i: f"two labels for one pair in {NLI_SPLITS[top]} (all copies dropped)"
                            for i in winners})
        else:
            dropped.update({i: "repeats a pair of the same split and label (the first kept)" for i in winners[1:]})
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for i, reason in dropped.items():
        counts[pairs[i].source][reason] += 1
    return [p for i, p in enumerate(pairs) if i not in dropped], dict(counts)


def premise_overlap(pairs: Sequence[NliPair]) -> dict[str, dict[str, int]]:
    """``{source: {split: n}}``: dev and test pairs whose premise (normalised as :func:`pair_key`) is also the
    premise of a train pair (another hypothesis about the same text: not a duplicate, but not unseen text)."""
    train = {pair_key(p)[0] for p in pairs if p.split == "train"}
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for pair in pairs:
        if pair.split != "train" and pair_key(pair)[0] in train:
            counts[pair.source][pair.split] += 1
    return {source: dict(c) for source, c in sorted(counts.items())}
