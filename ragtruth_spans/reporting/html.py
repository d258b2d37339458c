"""The HTML report (``ragtruth-spans report``): one self-contained static page per evaluation.

The page is rendered with Jinja2 (``templates/report.html.j2``) from the same payloads the console tables use —
each detector's ``Report.to_dict()`` — plus the responses themselves, with character-exact highlighting
(:mod:`.highlight`). Everything is inline (CSS, JavaScript, SVG charts, the data as JSON): no CDN, no network.

- The summary (tables, charts, notes) is plain HTML and reads without JavaScript.
- The response browser is rendered by the page's script from the embedded data, a page of responses at a time,
  so a report of thousands of responses opens without freezing. The data holds, per response and detector, the
  marked runs as **code-point offsets** of the response (Python ``str`` indices; the script slices
  ``Array.from(response)``, never UTF-16 units).
- Predicted spans that carry evidence (``predict --evidence``) are listed per response and detector with their
  verdict, reason and passages (code-point offsets of the **context**); hovering or clicking a span in the
  browser marks its passages in the context and shows the verdict.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.predictions import PredictionFile
from ragtruth_spans.core.types import HALLUCINATION_TYPES, Record, Span
from ragtruth_spans.evaluation.counts import filter_gold
from ragtruth_spans.evaluation.evaluator import auroc_scores
from ragtruth_spans.evaluation.files import evaluate_prediction_file
from ragtruth_spans.evaluation.metrics import UNTYPED
from ragtruth_spans.reporting.highlight import KINDS, highlight_runs, run_totals
from ragtruth_spans.reporting.plots import BarSeries, LineSeries, bar_chart, line_chart

LENGTH_BINS: tuple[tuple[int, int | None], ...] = ((1, 5), (5, 10), (10, 20), (20, 40), (40, 80), (80, 160),
                                                  (160, 320), (320, None))
"""Span length bins in characters, half-open ``[low, high)``; the last is open-ended."""


@dataclass
class DetectorResult:
    """One detector's predictions and its evaluation: ``report`` is ``Report.to_dict()``."""

    name: str
    source: str
    predictions: PredictionFile
    report: dict[str, Any]


@dataclass
class ReportInput:
    """Everything a report page shows: the gold records, each detector's result and how the gold was filtered."""

    gold: Sequence[Record]
    detectors: Sequence[DetectorResult]
    gold_source: str = ""
    ignore_implicit_true: bool = False
    ignore_due_to_null: bool = False
    title: str = "ragtruth-spans report"
    extra_notes: list[str] = field(default_factory=list)


def evaluate_detector(name: str, source: str, gold: Sequence[Record], predictions: PredictionFile, *,
                      gold_info: dict[str, Any] | None = None, **options: Any) -> DetectorResult:
    """Evaluate one predictions file as ``ragtruth-spans evaluate`` does
    (:func:`~ragtruth_spans.evaluation.files.evaluate_prediction_file`; ``options`` go to
    :func:`~ragtruth_spans.evaluation.evaluate`)."""
    report = evaluate_prediction_file(gold, predictions, source, gold_info=gold_info, **options)
    return DetectorResult(name=name, source=source, predictions=predictions, report=report.to_dict())


def kept_gold(record: Record, data: ReportInput) -> list[Span]:
    """The gold spans of ``record`` that the evaluation keeps (its adaptive filters)."""
    return filter_gold(record.spans, data.ignore_implicit_true, data.ignore_due_to_null)[0]


def _type_names(data: ReportInput) -> list[str]:
    names = list(HALLUCINATION_TYPES)
    for record in data.gold:
        for span in record.spans:
            name = span.type if span.type is not None else UNTYPED
            if name not in names:
                names.append(name)
    return names


def response_rows(data: ReportInput) -> dict[str, Any]:
    """The browser's data: type names, detector names and one row per gold response with its marked runs per
    detector (``[start, end, kind index, gold type bitmask, score, predicted types]``, code-point offsets) and the
    evidence of its predicted spans (:func:`evidence_rows`). ``contexts`` holds each distinct context once (a
    source's context is shared by its responses); a row's ``ctx`` is its index there."""
    types = _type_names(data)
    type_bit = {t: 1 << i for i, t in enumerate(types)}
    rows = []
    contexts: dict[str, int] = {}
    for record in data.gold:
        gold = kept_gold(record, data)
        per_detector = []
        for det in data.detectors:
            runs = highlight_runs(gold, det.predictions.spans.get(record.id, []))
            totals = run_totals(runs)
            per_detector.append({
                "runs": [[r.start, r.end, KINDS.index(r.kind), sum(type_bit[t] for t in r.gold_types), r.score,
                          list(r.pred_types)] for r in runs],
                "score": det.predictions.response_scores.get(record.id),
                "error": det.predictions.errors.get(record.id),
                "missing": record.id not in det.predictions.spans,
                "chars": [totals[k] for k in KINDS],
                "ev": evidence_rows(record, det.predictions.spans.get(record.id, []), det.source)})
        ctx = contexts.setdefault(record.context, len(contexts))
        rows.append({"id": record.id, "task": record.task_type, "model": record.model, "question": record.question,
                     "ctx": ctx, "response": record.response,
                     "gold": [[s.start, s.end, s.type] for s in gold], "det": per_detector})
    return {"types": types, "kinds": list(KINDS), "detectors": [d.name for d in data.detectors], "responses": rows,
            "contexts": list(contexts),
            "has_evidence": any(det["ev"] for row in rows for det in row["det"])}


def evidence_rows(record: Record, spans: Sequence[Span], source: str = "") -> list[list[Any]]:
    """The predicted spans of ``record`` that carry evidence, as ``[start, end, verdict, reason, passages]`` with
    passages ``[start, end, score, [[start, end], ...conflicts]]`` (characters of the context); evidence past the
    end of the context raises :class:`InputError` (the predictions belong to other data)."""
    rows = []
    for span in spans:
        if span.evidence is None:
            continue
        if span.evidence.max_end() > len(record.context):
            raise InputError(f"id {record.id!r}: the evidence of span [{span.start}, {span.end}) ends at "
                             f"{span.evidence.max_end()}, past the context's {len(record.context)} characters",
                             path=source or None, field="evidence")
        rows.append([span.start, span.end, span.evidence.verdict, span.evidence.reason,
                     [[p.start, p.end, p.score, [list(c) for c in p.conflicts]] for p in span.evidence.passages]])
    return rows


def _length_bin(length: int) -> int:
    for i, (low, high) in enumerate(LENGTH_BINS):
        if length >= low and (high is None or length < high):
            return i
    return 0


def _length_fractions(lengths: Sequence[int]) -> list[float | None]:
    counts = [0] * len(LENGTH_BINS)
    for length in lengths:
        counts[_length_bin(length)] += 1
    total = sum(counts)
    return [c / total if total else None for c in counts]


def length_chart(data: ReportInput) -> Any:
    """Bars: the share of spans in each length bin, gold (kept) spans against each detector's non-empty spans."""
    gold = [len(s) for r in data.gold for s in kept_gold(r, data) if len(s) > 0]
    series = [BarSeries(f"gold ({len(gold)} spans)", _length_fractions(gold))]
    for det in data.detectors:
        lengths = [len(s) for spans in det.predictions.spans.values() for s in spans if len(s) > 0]
        series.append(BarSeries(f"{det.name} ({len(lengths)} spans)", _length_fractions(lengths)))
    labels = [f"{low}–{high - 1}" if high else f"{low}+" for low, high in LENGTH_BINS]
    return bar_chart("chart-lengths", "Span length distribution (characters), gold vs predicted", labels, series,
                     y_label="share of spans")


def type_recall_chart(data: ReportInput) -> Any:
    """Bars: recall per gold type for each detector, with bootstrap intervals when computed."""
    first = data.detectors[0].report
    types = [t for t in first["type_recall"] if first["counts"]["type_gold_chars"].get(t)]
    series = []
    for det in data.detectors:
        intervals = (det.report.get("ci") or {}).get("overall", {}).get("type_recall", {})
        series.append(BarSeries(det.name, [det.report["type_recall"].get(t) for t in types],
                                [intervals.get(t) for t in types] if intervals else None))
    return bar_chart("chart-type-recall", "Recall per gold hallucination type (characters)", types, series,
                     y_label="recall", top=1.0)


def pr_chart(data: ReportInput) -> Any | None:
    """Response-level precision-recall curves of the detectors whose predictions carry scores (the scores AUROC
    uses), or None when none does."""
    from sklearn.metrics import precision_recall_curve

    labels = np.array([any(len(s) > 0 for s in kept_gold(r, data)) for r in data.gold])
    series = []
    for det in data.detectors:
        scores, source, _ = auroc_scores(data.gold, det.predictions.spans, det.predictions.response_scores)
        if scores is None:
            continue
        scored = ~np.isnan(scores)
        if labels[scored].all() or not labels[scored].any():
            continue
        precision, recall, _ = precision_recall_curve(labels[scored], scores[scored])
        series.append(LineSeries(f"{det.name} ({source} scores)", list(zip(recall.tolist(), precision.tolist()))))
    if not series:
        return None
    return line_chart("chart-pr", "Response-level precision-recall by score threshold", series, x_label="recall",
                      y_label="precision")


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _fmt_ci(interval: Any) -> str:
    return "" if not interval else f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("ragtruth_spans.reporting", "templates"),
                      autoescape=select_autoescape(enabled_extensions=("html", "j2"), default_for_string=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["fmt"] = _fmt
    env.filters["fmt_ci"] = _fmt_ci
    return env


def render_report(data: ReportInput) -> str:
    """The report page as one HTML string."""
    if not data.detectors:
        raise ValueError("a report needs at least one detector's predictions")
    groups = {"task": sorted({r.task_type for r in data.gold}), "model": sorted({r.model for r in data.gold})}
    charts = {"type_recall": type_recall_chart(data), "lengths": length_chart(data), "pr": pr_chart(data)}
    env = _environment()
    assets = {name: Markup(env.loader.get_source(env, f"report.{name}")[0]) for name in ("css", "js")}
    return env.get_template("report.html.j2").render(
        data=data, assets=assets, reports=[(d.name, d.report) for d in data.detectors], charts=charts, groups=groups,
        browser=response_rows(data), kinds=KINDS, generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        levels=[("span", "span (characters)"), ("response", "response (has a span)"),
                ("response_macro", "response, macro"), ("seqeval", "seqeval (word entities)")])


def write_report(path: str | Path, data: ReportInput) -> Path:
    """Render the report and write it to ``path`` (UTF-8), creating parent folders; return the path."""
    from ragtruth_spans.core.files import atomic_write_text

    path = Path(path)
    atomic_write_text(path, render_report(data))
    return path


def report_from_files(gold: Sequence[Record], predictions: Mapping[str, tuple[str, PredictionFile]], *,
                      gold_source: str = "", **options: Any) -> ReportInput:
    """A :class:`ReportInput` from ``{name: (source path, PredictionFile)}``, evaluating each (``options``:
    ``ignore_implicit_true``, ``ignore_due_to_null``, ``allow_missing``, ``bootstrap``, ``seed``)."""
    results = [evaluate_detector(name, source, gold, pred, **options) for name, (source, pred) in predictions.items()]
    return ReportInput(gold=gold, detectors=results, gold_source=gold_source,
                       ignore_implicit_true=options.get("ignore_implicit_true", False),
                       ignore_due_to_null=options.get("ignore_due_to_null", False))
