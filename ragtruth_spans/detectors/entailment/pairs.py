"""Reading prepared NLI pairs (the format ``ragtruth-spans import nli`` writes) for training and measuring.

One JSON object per line of ``<dir>/<split>.jsonl``: ``premise``, ``hypothesis`` (non-blank strings), ``label``
(``entailment``, ``neutral``, ``contradiction``, or ``not_entailment`` for the negative class of a set that only
says supported / not supported), ``source``, ``split``, ``binary`` (true for rows of such sets), and optional
``id``, ``subset`` and ``task``. A line that breaks this is one :class:`InputError` naming the file, the line and
the field.

Label ids: the model has three outputs (:data:`LABELS`); a ``not_entailment`` row gets the training id
:data:`NOT_ENTAILMENT` (3), which the loss reads as "neutral or contradiction" (:mod:`.loss`).
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import check_text
from ragtruth_spans.core.jsonl import iter_jsonl

logger = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
"""The model's outputs, in order (``config.json``'s ``id2label``)."""
ENTAILMENT, NEUTRAL, CONTRADICTION = 0, 1, 2
NOT_ENTAILMENT = 3
"""Training id of a binary negative row: the loss is -log(P(neutral) + P(contradiction))."""
LABEL_IDS: dict[str, int] = {**{name: i for i, name in enumerate(LABELS)}, "not_entailment": NOT_ENTAILMENT}


@dataclass(frozen=True)
class Pair:
    """One premise–hypothesis pair and its label id (:data:`LABEL_IDS`)."""

    premise: str
    hypothesis: str
    label: int
    source: str
    binary: bool = False

    @property
    def three_way(self) -> bool:
        """Whether the row says which of the three labels holds (a binary set's row says less)."""
        return not self.binary and self.label != NOT_ENTAILMENT


def _pair(obj: dict, path: Path, line: int) -> Pair:
    premise = check_text(obj.get("premise"), field="premise", path=path, line=line, nonempty=True)
    hypothesis = check_text(obj.get("hypothesis"), field="hypothesis", path=path, line=line, nonempty=True)
    label, source, binary = obj.get("label"), obj.get("source"), obj.get("binary", False)
    if label not in LABEL_IDS:
        raise InputError(f"must be one of {', '.join(LABEL_IDS)}, got {str(label)[:40]!r}", path=path, line=line,
                         field="label")
    if not isinstance(source, str) or not source.strip():
        raise InputError("must be a non-empty string", path=path, line=line, field="source")
    if not isinstance(binary, bool):
        raise InputError(f"must be true or false, got {str(binary)[:40]!r}", path=path, line=line, field="binary")
    return Pair(premise, hypothesis, LABEL_IDS[label], source, binary)


def read_pairs(path: str | Path) -> list[Pair]:
    """Every pair of one prepared file, in file order (see the module docstring for what is refused)."""
    path = Path(path)
    return [_pair(obj, path, line) for line, obj in iter_jsonl(path)]


def load_split(dirs: Sequence[str | Path], split: str, *, sources: Sequence[str] | None = None,
               required: bool = True, field: str = "stages") -> list[Pair]:
    """The pairs of ``<dir>/<split>.jsonl`` of every directory, in order, kept to ``sources`` (None: all); a
    missing file is an :class:`InputError` when ``required``, else skipped."""
    out: list[Pair] = []
    for folder in dirs:
        path = Path(folder) / f"{split}.jsonl"
        if not path.is_file():
            if required:
                raise InputError(f"no {split}.jsonl here (a prepared NLI directory: ragtruth-spans import nli)",
                                 path=folder, field=field)
            continue
        out.extend(p for p in read_pairs(path) if sources is None or p.source in sources)
    return out


def sample_pairs(pairs: Sequence[Pair], max_pairs: int | None, seed: int) -> list[Pair]:
    """At most ``max_pairs`` of ``pairs`` (a seeded sample, in their original order); all when None."""
    if max_pairs is None or len(pairs) <= max_pairs:
        return list(pairs)
    keep = sorted(random.Random(seed).sample(range(len(pairs)), max_pairs))
    return [pairs[i] for i in keep]


def sample_per_source(pairs: Sequence[Pair], limit: int | None, seed: int) -> list[Pair]:
    """At most ``limit`` pairs of each source, a seeded sample of each in file order (all when None). Never the
    first ones: a set's file may be sorted by label (CAD's first 600 test pairs hold no entailment).

    >>> rows = [Pair("p", f"h{i}", 0, "s") for i in range(5)]
    >>> len(sample_per_source(rows, 2, seed=0)), sample_per_source(rows, 2, 0) == sample_per_source(rows, 2, 0)
    (2, True)
    """
    if limit is None:
        return list(pairs)
    by_source: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        by_source.setdefault(pair.source, []).append(i)
    rng = random.Random(seed)
    keep = sorted(i for source in sorted(by_source) for i in (
        by_source[source] if len(by_source[source]) <= limit else rng.sample(by_source[source], limit)))
    return [pairs[i] for i in keep]


def counts(pairs: Sequence[Pair]) -> dict[str, dict[str, int]]:
    """``{source: {label: count}}`` (labels by name; ``not_entailment`` for binary negatives)."""
    names = {i: name for name, i in LABEL_IDS.items()}
    out: dict[str, Counter[str]] = {}
    for pair in pairs:
        out.setdefault(pair.source, Counter())[names[pair.label]] += 1
    return {source: dict(sorted(c.items())) for source, c in sorted(out.items())}
