"""Score predicted hallucination spans against gold records (the ``ragtruth-spans evaluate`` command).

``evaluate`` validates its input, then runs the three steps: count (:mod:`.counts`, one row per response) →
pool (:mod:`.pool`, overall / by task / by model, bootstrap intervals) → report (:mod:`.report`). Metric
definitions: :mod:`.metrics`. Offsets are characters of the response, half-open ``[start, end)``.

AUROC of response-level detection ranks responses by one score per response, chosen once:

1. the **response scores** (a predictions line's ``score``) when any line carries one: AUROC is computed over
   the responses that have one (a gold response without any prediction, with ``allow_missing``, scores 0.0 like
   its missing spans); lines without a score are left out and counted in ``counts.auroc_responses``;
2. otherwise the **maximum span score** of each response (0.0 without spans), when every predicted span has a
   score;
3. otherwise AUROC is not computed.

``settings.auroc_scores`` says which (``"response"``, ``"max-span"`` or None) and one note says why when AUROC
leaves responses out or is not computed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import TASK_TYPES, Record, Span
from ragtruth_spans.evaluation import metrics
from ragtruth_spans.evaluation.counts import CountTable, count_responses
from ragtruth_spans.evaluation.pool import confidence_intervals, group_metrics
from ragtruth_spans.evaluation.report import Report, report_counts


def _check_inputs(gold: Sequence[Record], predictions: Mapping[str, Sequence[Span]],
                  response_scores: Mapping[str, float] | None, allow_missing: bool, bootstrap: int) -> list[str]:
    """Validate; return the ids of gold responses without a prediction."""
    if not gold:
        raise InputError("no gold records to evaluate")
    if bootstrap < 0:
        raise InputError(f"bootstrap must be >= 0, got {bootstrap}")
    lengths: dict[str, int] = {}
    for record in gold:
        if record.id in lengths:
            raise InputError(f"duplicate gold id {record.id!r}")
        lengths[record.id] = len(record.response)
    unknown = [pid for pid in predictions if pid not in lengths]
    if unknown:
        raise InputError(f"{len(unknown)} prediction id(s) not in the gold data, e.g. {unknown[0]!r}")
    for pid, spans in predictions.items():
        for span in spans:
            if span.end > lengths[pid]:
                raise InputError(f"id {pid!r}: predicted span [{span.start}, {span.end}) is out of range "
                                 f"for a response of {lengths[pid]} characters")
    if response_scores is not None:
        extra = [pid for pid in response_scores if pid not in predictions]
        if extra:
            raise InputError(f"{len(extra)} response score(s) without a prediction (e.g. {extra[0]!r})")
        if not all(math.isfinite(v) for v in response_scores.values()):
            raise InputError("response_scores must be finite numbers")
    missing = [r.id for r in gold if r.id not in predictions]
    if missing and not allow_missing:
        raise InputError(f"{len(missing)} gold response(s) have no prediction, e.g. id {missing[0]!r} "
                         "(use allow_missing / --allow-missing to count them as predicting no span)")
    return missing


def auroc_scores(gold: Sequence[Record], predictions: Mapping[str, Sequence[Span]],
                 response_scores: Mapping[str, float] | None) -> tuple[np.ndarray | None, str | None, str | None]:
    """``(scores, source, note)``: one score per gold response (NaN = left out of AUROC), which rule chose them
    (``"response"``, ``"max-span"`` or None) and the note explaining what was left out (see the module
    docstring)."""
    if response_scores:
        scores = np.array([response_scores.get(r.id, 0.0 if r.id not in predictions else math.nan)
                           for r in gold], dtype=float)
        unscored = int(np.isnan(scores).sum())
        note = None if not unscored else (
            f"auroc: over the {len(gold) - unscored} of {len(gold)} responses whose prediction line has a response "
            f"score ({unscored} line(s) without one are left out)")
        return scores, "response", note
    span_scores = [metrics.response_score(list(predictions.get(r.id, ()))) for r in gold]
    if all(s is not None for s in span_scores) and any(s.score is not None for spans in predictions.values()
                                                       for s in spans):
        return np.array(span_scores, dtype=float), "max-span", None
    n_spans = sum(len(spans) for spans in predictions.values())
    n_unscored = sum(s.score is None for spans in predictions.values() for s in spans)
    if n_unscored == n_spans:
        return None, None, "auroc: not computed, the predictions carry no scores"
    return None, None, f"auroc: not computed, {n_unscored} of {n_spans} predicted spans have no score"


def _groups(table: CountTable) -> dict[str, dict[str, np.ndarray]]:
    present = set(table.tasks)
    task_order = [t for t in TASK_TYPES if t in present] + sorted(present - set(TASK_TYPES))
    return {"by_task": {t: table.tasks == t for t in task_order},
            "by_model": {m: table.models == m for m in sorted(set(table.models))}}


def evaluate(gold: Sequence[Record], predictions: Mapping[str, Sequence[Span]], *,
             ignore_implicit_true: bool = False, ignore_due_to_null: bool = False, allow_missing: bool = False,
             bootstrap: int = 0, seed: int = 0, response_scores: Mapping[str, float] | None = None) -> Report:
    """Score ``predictions`` (``{response id: spans}``, character offsets, half-open) against ``gold`` records.

    - A gold response with no entry in ``predictions`` raises :class:`InputError`, unless ``allow_missing``:
      then it counts as predicting no span and is reported in ``counts.missing_predictions``.
    - A prediction id not in ``gold`` or a span with ``end > len(response)`` raises :class:`InputError`.
    - ``ignore_implicit_true`` / ``ignore_due_to_null`` drop those gold spans (RAGTruth §3.4 adaptive evaluation);
      the dropped spans are counted. A response whose gold spans were all dropped counts as clean.
    - ``bootstrap > 0``: 95 % percentile intervals from that many resamples of the responses (seeded).
    - ``response_scores``: ``{id: score}`` of the predictions that have a response score (AUROC: see the module
      docstring).

    >>> from ragtruth_spans import Record, Span, evaluate
    >>> gold = [Record(id="r1", source_id="s1", task_type="Summary", model="m", split="test", quality="good",
    ...                response="The museum opened in 1998.", context="The museum opened in 1999.",
    ...                spans=[Span(21, 25)])]
    >>> evaluate(gold, {"r1": [Span(21, 25)]}).overall["span"]
    {'precision': 1.0, 'recall': 1.0, 'f1': 1.0}
    >>> evaluate(gold, {"r1": [Span(17, 25)]}).overall["span"]  # 4 of the 8 flagged characters are gold
    {'precision': 0.5, 'recall': 1.0, 'f1': 0.6666666666666666}
    >>> evaluate(gold, {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: ...
    """
    missing = _check_inputs(gold, predictions, response_scores, allow_missing, bootstrap)
    table = count_responses(gold, predictions, ignore_implicit_true=ignore_implicit_true,
                            ignore_due_to_null=ignore_due_to_null)
    scores, source, auroc_note = auroc_scores(gold, predictions, response_scores)
    notes = [auroc_note] if auroc_note else []
    groups = _groups(table)
    overall = group_metrics(table, np.ones(len(gold), dtype=bool), scores)
    if scores is not None and overall["auroc"] is None:
        notes.append("auroc: undefined, the gold responses are all hallucinated or all clean")
    if missing:
        notes.append(f"{len(missing)} gold response(s) had no prediction and count as predicting no span "
                     f"(first: {', '.join(missing[:5])})")
    settings = {"ignore_implicit_true": ignore_implicit_true, "ignore_due_to_null": ignore_due_to_null,
                "allow_missing": allow_missing, "bootstrap": bootstrap, "seed": seed, "auroc_scores": source,
                "word_pattern": metrics.WORD_PATTERN.pattern, "seqeval_label": metrics.ENTITY_LABEL}
    return Report(
        overall=overall,
        by_task={t: group_metrics(table, mask, scores) for t, mask in groups["by_task"].items()},
        by_model={m: group_metrics(table, mask, scores) for m, mask in groups["by_model"].items()},
        counts=report_counts(table, len(missing), 0 if scores is None else int((~np.isnan(scores)).sum())),
        settings=settings,
        ci=confidence_intervals(table, groups, bootstrap, seed, scores) if bootstrap > 0 else None,
        notes=notes)
