"""Step 3 of evaluation: the :class:`Report` — metrics overall, by task, by generating model, counts, settings,
intervals and notes. Rendering lives in :mod:`ragtruth_spans.reporting`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragtruth_spans.evaluation.counts import CountTable


@dataclass
class Report:
    """Evaluation result. ``overall`` / each ``by_task[task]`` / ``by_model[model]`` is a group dict with
    ``responses``, ``span``, ``response``, ``seqeval`` (each ``{precision, recall, f1}``), ``response_macro``
    (macro average over the hallucinated and clean classes), ``type_recall`` (``{type: recall or None}``) and
    ``auroc`` (float or None). ``ci`` mirrors those keys with ``[low, high]`` 95 % percentile intervals when
    bootstrapped.

    >>> from ragtruth_spans import load_ragtruth, sample_data_dir, evaluate
    >>> gold = load_ragtruth(sample_data_dir(), split="test")
    >>> report = evaluate(gold, {r.id: r.spans for r in gold})  # the gold spans themselves: every figure is 1
    >>> report.overall["responses"], report.overall["span"]["f1"], sorted(report.by_task)
    (22, 1.0, ['Data2txt', 'QA', 'Summary'])
    >>> nothing = evaluate(gold, {r.id: [] for r in gold}, bootstrap=100)  # flags nothing
    >>> nothing.overall["span"]["f1"], nothing.ci["overall"]["span"]["f1"], nothing.ci["level"]
    (0.0, [0.0, 0.0], 0.95)
    """

    overall: dict[str, Any]
    by_task: dict[str, dict[str, Any]]
    by_model: dict[str, dict[str, Any]]
    counts: dict[str, Any]
    settings: dict[str, Any]
    ci: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    overlap: dict[str, Any] | None = None
    """With the detector's training data known or not: the gold responses it saw
    (:func:`~ragtruth_spans.evaluation.files.overlap_section`); None when not asked."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict. ``type_recall``, ``seqeval`` and ``auroc`` at the top level are the overall values."""
        d: dict[str, Any] = {
            "overall": self.overall,
            "type_recall": self.overall["type_recall"],
            "seqeval": self.overall["seqeval"],
            "auroc": self.overall["auroc"],
            "by_task": self.by_task,
            "by_model": self.by_model,
            "counts": self.counts,
            "settings": self.settings,
            "notes": self.notes,
        }
        if self.ci is not None:
            d["ci"] = self.ci
        if self.overlap is not None:
            d["overlap"] = self.overlap
        return d


def report_counts(table: CountTable, missing: int, auroc_responses: int) -> dict[str, Any]:
    """The ``counts`` section of a report: spans, characters, entities and responses, summed."""
    total = table.totals()
    tally = table.tally

    def col(name: str) -> int:
        return int(table.col(total, name))

    return {
        "responses": len(table.counts),
        "gold_spans": tally.gold,
        "gold_spans_before_filters": tally.gold_before_filters,
        "dropped_gold_spans": tally.gold_before_filters - tally.gold,
        "dropped_implicit_true": tally.dropped_implicit_true,
        "dropped_due_to_null": tally.dropped_due_to_null,
        "predicted_spans": tally.predicted,
        "empty_predicted_spans": tally.empty_predicted,
        "missing_predictions": missing,
        "gold_positive_responses": col("gold_pos"),
        "predicted_positive_responses": col("pred_pos"),
        "gold_chars": col("gold_chars"),
        "predicted_chars": col("pred_chars"),
        "overlap_chars": col("overlap_chars"),
        "gold_entities": col("ent_gold"),
        "predicted_entities": col("ent_pred"),
        "matched_entities": col("ent_tp"),
        "type_gold_chars": {t: col(f"type_gold:{t}") for t in table.types},
        "type_covered_chars": {t: col(f"type_covered:{t}") for t in table.types},
        "scored_predicted_spans": tally.scored_predicted,
        "auroc_responses": auroc_responses,
    }
