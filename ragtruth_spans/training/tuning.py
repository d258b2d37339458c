"""The one threshold tuner: decision thresholds tuned on a labelled split (the dev split).

Every candidate setting (a point of the grid; by default each threshold in {0.1, 0.2, …, 0.9} as in DelucionQA,
a family may pass its own grid) turns the same precomputed evidence into spans; each candidate is scored by one
counter, :func:`ragtruth_spans.evaluation.counts.pooled_figures`, which pools exactly what
:func:`ragtruth_spans.evaluation.evaluate` reports (tested against it), so the criterion is the figure
``evaluate`` would print. **One tie rule:** the best candidate wins; among equal values the first in grid order
(thresholds ascending), i.e. the lowest threshold. Families call :func:`tune_thresholds` (threshold settings) or
:func:`choose_best` (any candidates, e.g. whole decisions) from their ``train`` (the run directory records the whole
table) and implement :class:`Tunable` so that ``ragtruth-spans benchmark`` can tune them on ``--dev``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import Field, model_validator

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record
from ragtruth_spans.training.sections import Section

Criterion = Literal["span_f1", "response_macro_f1", "response_f1"]
CRITERIA: dict[str, tuple[str, str]] = {"span_f1": ("span", "f1"), "response_macro_f1": ("response_macro", "f1"),
                                         "response_f1": ("response", "f1")}
"""Criterion name → (level, metric) of an evaluation report's ``overall``."""
DEFAULT_CRITERION: Criterion = "span_f1"
PAPER_GRID: tuple[float, ...] = tuple(round(0.1 * i, 1) for i in range(1, 10))
"""{0.1, 0.2, …, 0.9}: the grid DelucionQA tuned its thresholds over."""
C = TypeVar("C")


class TuningSection(Section):
    """Thresholds are tuned on ``data.eval_split``: every value of ``grid`` (every combination for two
    thresholds), keeping the best ``criterion`` as the evaluator computes it (ties: the first, ascending)."""

    criterion: Literal["span_f1", "response_macro_f1", "response_f1"] = Field(
        "span_f1", description="span_f1: the project's primary metric (characters); response_macro_f1: "
                               "DelucionQA's response-level macro F1 over both classes.")
    grid: list[float] = Field(default_factory=lambda: list(PAPER_GRID), min_length=1,
                              description="Candidate values of each threshold, each in (0, 1).")

    @model_validator(mode="after")
    def _in_range(self) -> TuningSection:
        bad = [v for v in self.grid if not 0.0 < v < 1.0]
        if bad:
            raise ValueError(f"grid values must be strictly between 0 and 1, got {bad}")
        return self


@dataclass
class TuningResult:
    """The thresholds chosen, the criterion and its value, and every candidate's figures (``table``)."""

    thresholds: dict[str, float]
    criterion: str
    value: float
    split: str
    responses: int
    table: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"thresholds": self.thresholds, "criterion": self.criterion, "value": self.value,
                "split": self.split, "responses": self.responses, "grid": self.table}


@runtime_checkable
class Tunable(Protocol):
    """A detector whose decision thresholds can be tuned on labelled records (``benchmark --dev``)."""

    source: dict[str, Any]
    """Where the detector's thresholds come from (part of ``describe()``)."""

    def tune(self, records: Sequence[Record], *, criterion: Criterion = DEFAULT_CRITERION,
             split: str = "dev") -> tuple[Any, TuningResult]:
        """A copy of the detector with the thresholds that maximise ``criterion`` on ``records``, and the
        tuning record."""

    def with_thresholds(self, thresholds: Mapping[str, float], source: dict[str, Any]) -> Any:
        """A copy with these thresholds and ``source`` (what :meth:`tune` returns for the same thresholds)."""


def grid(names: Sequence[str], values: Sequence[float] = PAPER_GRID) -> list[dict[str, float]]:
    """Every combination of ``values`` for the thresholds ``names``, in ascending order."""
    return [dict(zip(names, combo)) for combo in itertools.product(sorted(values), repeat=len(names))]


FIGURES = ("span_precision", "span_recall", "span_f1", "response_f1", "response_macro_f1")
"""The figures of every candidate (a row of a tuning table), as :func:`figures_row` names them."""


def figures_row(overall: Mapping[str, Any]) -> dict[str, float]:
    """The :data:`FIGURES` of an evaluation report's ``overall`` section."""
    return {"span_precision": overall["span"]["precision"], "span_recall": overall["span"]["recall"],
            "span_f1": overall["span"]["f1"], "response_f1": overall["response"]["f1"],
            "response_macro_f1": overall["response_macro"]["f1"]}


@dataclass(frozen=True)
class Choice(Generic[C]):
    """The candidate :func:`choose_best` chose, its criterion value, and every candidate's :data:`FIGURES` (in
    candidate order)."""

    best: C
    value: float
    figures: list[dict[str, float]]


def tuning_figures(records: Sequence[Record], spans: Sequence[Any]) -> dict[str, float]:
    """The :data:`FIGURES` of ``spans`` (one span list per record) pooled over ``records``."""
    from ragtruth_spans.evaluation.counts import char_rows

    return tuning_figures_of_rows(char_rows(records, spans))


def tuning_figures_of_rows(rows: np.ndarray) -> dict[str, float]:
    """:func:`tuning_figures` from the responses' character counts
    (:func:`~ragtruth_spans.evaluation.counts.char_rows`): what a tuner that counts once and masks many times
    (the response gate) scores its candidates with."""
    from ragtruth_spans.evaluation.counts import figures_of_rows

    return figures_row(figures_of_rows(rows))


def choose_best(records: Sequence[Record], candidates: Sequence[C], detect: Callable[[C], Sequence[Any]], *,
                criterion: str = DEFAULT_CRITERION, split: str = "dev",
                admissible: Callable[[dict[str, float]], bool] | None = None) -> Choice[C]:
    """Score ``detect(candidate)`` — one :class:`~ragtruth_spans.detectors.base.Detection` (or one span list) per
    record, in order — for each candidate (any value: thresholds, a whole decision) with
    :func:`~ragtruth_spans.evaluation.counts.pooled_figures` and return the best by ``criterion`` (ties: the first
    candidate; see the module docstring) among the candidates whose figures ``admissible`` accepts (default: all; when
    none is, the first candidate)."""

    check_candidates(records, candidates, criterion, split)
    figures = [tuning_figures(records, [getattr(d, "spans", d) for d in detect(c)]) for c in candidates]
    return pick_best(candidates, figures, criterion=criterion, admissible=admissible)


def pick_best(candidates: Sequence[C], figures: Sequence[dict[str, float]], *, criterion: str = DEFAULT_CRITERION,
              admissible: Callable[[dict[str, float]], bool] | None = None) -> Choice[C]:
    """:func:`choose_best`'s rule over candidates already scored (``figures[k]``: the :data:`FIGURES` of
    ``candidates[k]``): the best ``criterion`` among the admissible, ties to the first; none admissible: the first.

    >>> pick_best(["a", "b", "c"], [{"span_f1": 0.2}, {"span_f1": 0.5}, {"span_f1": 0.5}]).best
    'b'
    """
    best: tuple[float, C] | None = None
    for candidate, row in zip(candidates, figures):
        value = row[criterion]
        if (admissible is None or admissible(row)) and (best is None or value > best[0]):
            best = (value, candidate)
    if best is None:  # nothing admissible: the first candidate
        best = (figures[0][criterion], candidates[0])
    return Choice(best=best[1], value=best[0], figures=list(figures))


def check_candidates(records: Sequence[Any], candidates: Sequence[Any], criterion: str = DEFAULT_CRITERION,
                     split: str = "dev") -> None:
    """The :class:`InputError` :func:`choose_best` raises for an unknown criterion, no records or no candidates."""
    if criterion not in CRITERIA:
        raise InputError(f"unknown tuning criterion {criterion!r} (expected one of {', '.join(CRITERIA)})",
                         field="criterion")
    if not records:
        raise InputError(f"no labelled responses in the {split} split to tune thresholds on")
    if not candidates:
        raise InputError("no threshold candidates to tune over")


def tune_thresholds(records: Sequence[Record], candidates: Sequence[Mapping[str, Any]],
                    detect: Callable[[Any], Sequence[Any]], *, criterion: str = DEFAULT_CRITERION,
                    split: str = "dev") -> TuningResult:
    """:func:`choose_best` over threshold settings (``{"threshold": 0.3}``, one key per threshold): the chosen
    thresholds, and a table row per candidate holding its settings and its :data:`FIGURES`."""
    choice = choose_best(records, candidates, detect, criterion=criterion, split=split)
    return TuningResult(thresholds=dict(choice.best), criterion=criterion, value=choice.value, split=split,
                        responses=len(records),
                        table=[{**candidate, **row} for candidate, row in zip(candidates, choice.figures)])
