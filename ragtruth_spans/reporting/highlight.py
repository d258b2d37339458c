"""Character-exact highlighting of one response: gold spans against predicted spans.

The response is cut into maximal runs of characters that share the same marking, with the evaluator's own
definitions (:mod:`ragtruth_spans.evaluation.metrics`): ``G`` is the union of the (kept) gold spans, ``P`` the
union of the predicted spans, intervals merged first. A character is

- ``correct`` when it is in ``G ∩ P``, ``missed`` when it is in ``G`` only, ``false`` (a false alarm) when it is in
  ``P`` only, unmarked otherwise;
- of gold type ``t`` when a gold span of type ``t`` covers it (several types can cover one character).

So, summed over responses, the characters of the ``correct`` runs are the evaluator's ``overlap_chars``,
``correct + missed`` its ``gold_chars``, ``correct + false`` its ``predicted_chars``, and per type the correct and
missed characters of type ``t`` are ``type_covered_chars[t]`` and ``type_gold_chars[t] - type_covered_chars[t]``.

Offsets are characters of the response (Python ``str`` indices = Unicode code points), half-open ``[start, end)``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ragtruth_spans.core.intervals import Interval, merge_intervals
from ragtruth_spans.core.types import Span
from ragtruth_spans.evaluation.metrics import UNTYPED

KINDS: tuple[str, ...] = ("correct", "missed", "false")
"""The kinds of marked runs: gold ∩ predicted, gold only, predicted only."""


@dataclass(frozen=True)
class Run:
    """Characters ``[start, end)`` of a response that share one marking: ``kind`` (one of :data:`KINDS`),
    ``gold_types`` (sorted gold types covering them), ``score`` (the highest score of the predicted spans covering
    them, None when none is scored) and ``pred_types`` (types the predicted spans covering them give)."""

    start: int
    end: int
    kind: str
    gold_types: tuple[str, ...] = ()
    score: float | None = None
    pred_types: tuple[str, ...] = ()

    def __len__(self) -> int:
        return self.end - self.start


def _inside(point: int, intervals: Sequence[Interval]) -> bool:
    return any(start <= point < end for start, end in intervals)


def _marking(point: int, gold_union: list[Interval], pred_union: list[Interval], gold_by_type: dict[str, list],
             pred: Sequence[Span]) -> tuple[str, tuple[str, ...], float | None, tuple[str, ...]] | None:
    in_gold, in_pred = _inside(point, gold_union), _inside(point, pred_union)
    if not (in_gold or in_pred):
        return None
    kind = "correct" if in_gold and in_pred else ("missed" if in_gold else "false")
    types = tuple(sorted(t for t, intervals in gold_by_type.items() if _inside(point, intervals)))
    covering = [s for s in pred if s.start <= point < s.end]
    scores = [s.score for s in covering if s.score is not None]
    pred_types = tuple(sorted({s.type for s in covering if s.type}))
    return kind, types, (max(scores) if scores else None), pred_types


def highlight_runs(gold: Sequence[Span], pred: Sequence[Span]) -> list[Run]:
    """The marked runs of one response, in order (unmarked characters are left out). ``gold`` are the gold spans
    the evaluator keeps (after its filters), ``pred`` the predicted spans; see the module docstring."""
    gold_union, pred_union = merge_intervals(gold), merge_intervals(pred)
    by_type: dict[str, list[Span]] = {}
    for span in gold:
        by_type.setdefault(span.type if span.type is not None else UNTYPED, []).append(span)
    gold_by_type = {t: merge_intervals(spans) for t, spans in by_type.items()}
    cuts = sorted({p for s in (*gold, *pred) if s.end > s.start for p in (s.start, s.end)})
    runs: list[Run] = []
    for start, end in itertools.pairwise(cuts):
        marking = _marking(start, gold_union, pred_union, gold_by_type, pred)
        if marking is None:
            continue
        kind, types, score, pred_types = marking
        last = runs[-1] if runs else None
        if last and last.end == start and (last.kind, last.gold_types, last.score, last.pred_types) == marking:
            runs[-1] = Run(last.start, end, kind, types, score, pred_types)
        else:
            runs.append(Run(start, end, kind, types, score, pred_types))
    return runs


def run_totals(runs: Sequence[Run]) -> dict[str, int]:
    """Characters of each kind in ``runs`` (``{"correct": n, "missed": n, "false": n}``)."""
    totals = dict.fromkeys(KINDS, 0)
    for run in runs:
        totals[run.kind] += len(run)
    return totals
