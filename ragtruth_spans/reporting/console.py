"""Every console rendering of ragtruth-spans, built from JSON-ready payloads (the reports' ``to_dict()``), so that
metric code stays pure and another renderer (HTML) can sit beside this one."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ragtruth_spans.core.logs import printable  # here for its users: it lives beside the log formatter

PRF = ("precision", "recall", "f1")


def user_text(text: object, style: str = "") -> Text:
    """User-supplied text (a model name, an id, a type, a response) as a rich :class:`Text`: never read as
    markup (``[awq]``, ``[/bold]`` stay as written), control characters escaped (:func:`printable`)."""
    return Text(printable(text), style=style)


def _fmt(value: float | None, interval: list[float] | None = None) -> str:
    if value is None:
        return "–"
    text = f"{value:.3f}"
    return text if interval is None else f"{text} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _fmt_interval(interval: list[float] | None) -> str:
    return "–" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"


# --- evaluation --------------------------------------------------------------------------------------------

def _overall_table(report: Mapping[str, Any]) -> Table:
    ci = report.get("ci") or {}
    overall = report["overall"]
    table = Table(title="Overall (pooled over responses" + (", with 95 % intervals)" if ci else ")"))
    table.add_column("level")
    for metric in PRF:
        table.add_column(metric, justify="right")
    for level, label in (("span", "span (characters)"), ("response", "response (has a span)"),
                         ("response_macro", "response, macro over both classes"),
                         ("seqeval", "seqeval (word entities)")):
        table.add_row(label, *(_fmt(overall[level][m]) for m in PRF))
        if ci:
            intervals = ci["overall"][level]
            table.add_row("  95 % interval", *(_fmt_interval(intervals[m]) for m in PRF), style="dim")
    table.add_row("AUROC (response)", _fmt(overall["auroc"]), "", "")
    if ci and ci["overall"].get("auroc"):
        table.add_row("  95 % interval", _fmt_interval(ci["overall"]["auroc"]), "", "", style="dim")
    return table


def _group_table(groups: Mapping[str, Any], name: str, title: str) -> Table:
    table = Table(title=f"{title} (seqeval and intervals: see --json)", box=box.SIMPLE_HEAD, padding=(0, 1),
                  pad_edge=False, collapse_padding=True)
    table.add_column(name, no_wrap=True)
    for column in ("n", "span\nP", "span\nR", "span\nF1", "resp.\nP", "resp.\nR", "resp.\nF1", "AUROC"):
        table.add_column(column, justify="right", no_wrap=True, min_width=5)
    for key, group in groups.items():
        table.add_row(user_text(key), str(group["responses"]),
                      *(_fmt(group[level][m]) for level in ("span", "response") for m in PRF),
                      _fmt(group["auroc"]))
    return table


def _type_table(report: Mapping[str, Any]) -> Table:
    table = Table(title="Recall per gold hallucination type (characters covered by any predicted span)")
    table.add_column("type")
    table.add_column("gold chars", justify="right")
    table.add_column("recall", justify="right")
    intervals = (report.get("ci") or {}).get("overall", {}).get("type_recall", {})
    for span_type, recall in report["type_recall"].items():
        table.add_row(user_text(span_type), str(report["counts"]["type_gold_chars"][span_type]),
                      _fmt(recall, intervals.get(span_type)))
    return table


def _counts_table(counts: Mapping[str, Any]) -> Table:
    table = Table(title="Counts")
    table.add_column("what")
    table.add_column("n", justify="right")
    for key, value in counts.items():
        if not isinstance(value, dict):
            table.add_row(user_text(key.replace("_", " ")), str(value))
    return table


def overlap_table(report: Mapping[str, Any]) -> Table | None:
    """Overall figures beside those on the responses that do not overlap the detector's training data
    (``report["overlap"]["rest"]``); None when there is no such split."""
    overlap = report.get("overlap") or {}
    rest = overlap.get("rest")
    if not rest:
        return None
    table = Table(title=f"Without the {overlap['overlapping']} responses that overlap the training data "
                        f"({rest['responses']} of {overlap['gold_responses']} left)")
    table.add_column("level")
    for column in ("P all", "R all", "F1 all", "P rest", "R rest", "F1 rest"):
        table.add_column(column, justify="right")
    for level, label in (("span", "span (characters)"), ("response", "response (has a span)")):
        table.add_row(label, *(_fmt(report["overall"][level][m]) for m in PRF),
                      *(_fmt(rest["overall"][level][m]) for m in PRF))
    table.add_row("AUROC (response)", _fmt(report["overall"]["auroc"]), "", "", _fmt(rest["overall"]["auroc"]), "", "")
    return table


def evaluation_tables(report: Mapping[str, Any]) -> list[Table]:
    """The tables of an evaluation report (``Report.to_dict()``): overall, without the training overlap (when
    some), by task, by model, type recall, counts."""
    tables = [_overall_table(report), overlap_table(report), _group_table(report["by_task"], "task", "By task"),
              _group_table(report["by_model"], "model", "By generating model"), _type_table(report),
              _counts_table(report["counts"])]
    return [table for table in tables if table is not None]


def print_evaluation(report: Mapping[str, Any], console: Console | None = None) -> None:
    """Print an evaluation report's tables and notes."""
    console = console or Console()
    for table in evaluation_tables(report):
        console.print(table)
    for note in report.get("notes", []):
        console.print(Text("note: ", style="yellow") + user_text(note), highlight=False)


# --- selection ---------------------------------------------------------------------------------------------

def _pct(x: float | None) -> str:
    if x is None or math.isnan(x):
        return "-"
    return f"{round(100 * x, 1) + 0.0:.1f}"  # + 0.0 turns -0.0 into 0.0


def _reduction(random_rate: float, rate: float) -> float | None:
    return None if not random_rate or math.isnan(random_rate) else (random_rate - rate) / random_rate


def selection_table(report: Mapping[str, Any], title_prefix: str = "") -> Table:
    """A selection report (``SelectionReport.to_dict()``) laid out like RAGTruth Table 7: each model alone,
    random, selected, oracle (``title_prefix`` before its title)."""
    ci = report.get("ci") or {}

    def interval(key: str) -> str:
        bounds = ci.get(key)
        return "" if not bounds else f"[{_pct(bounds[0])}, {_pct(bounds[1])}]"

    sources = report["sources"]
    table = Table(title=user_text(f"{title_prefix}Best-of-{len(report['models'])} selection: {report['strategy']} "
                                  f"(tie-break {report['tie_break']}, seed {report['seed']}) on {sources['used']} "
                                  f"sources ({sources['skipped']} skipped)"))
    for column, justify in (("Answer from", "left"), ("Halluc. rate %", "right"), ("95% CI", "right"),
                            ("Reduction vs random %", "right")):
        table.add_column(column, justify=justify)
    random_rate = report["random"]["hallucination_rate"]
    for model in report["models"]:
        rate = report["by_model"][model]["hallucination_rate"]
        table.add_row(user_text(model), _pct(rate), "", _pct(_reduction(random_rate, rate)),
                      end_section=model == report["models"][-1])
    sampled = report["random"]["sampled_hallucination_rate"]
    table.add_row("random selection (expected)", _pct(random_rate), interval("random"), "")
    table.add_row(f"random selection (seed {report['seed']})", _pct(sampled), "",
                  _pct(_reduction(random_rate, sampled)))
    reduction = _pct(report["relative_reduction"])
    if interval("relative_reduction"):
        reduction += f" {interval('relative_reduction')}"
    table.add_row(user_text(f"selected by detector: {report['strategy']}"),
                  _pct(report["selected"]["hallucination_rate"]), interval("selected"), reduction, style="bold")
    oracle = report["oracle"]["hallucination_rate"]
    table.add_row("oracle (lowest achievable)", _pct(oracle), interval("oracle"),
                  _pct(_reduction(random_rate, oracle)), style="dim")
    return table


def candidates_table(selection: Mapping[str, Any]) -> Table:
    """The candidates of one online selection (``Selection.to_dict()``): score and detected spans of each."""
    table = Table(title=f"Candidates scored by {selection['strategy']} (lower is better)")
    for column in ("#", "id", "score", "spans found"):
        table.add_column(column)
    for i, cand in enumerate(selection["candidates"]):
        score = selection["scores"][i]
        found = "\n".join(f"[{s['start']}, {s['end']}) {s.get('type') or ''}: "
                          f"{cand['response'][s['start']:s['end']]!r}" for s in cand["spans"] or ()) or "none"
        if i in selection["detection_failed"]:
            found = "the detector could not judge this candidate (ranked last)"
        table.add_row(("* " if i == selection["index"] else "") + str(i), user_text(cand["id"] or ""),
                      "inf" if score is None else f"{score:g}", user_text(found),
                      style="bold" if i == selection["index"] else None)
    return table


# --- train, predict ---------------------------------------------------------------------------------

def training_data_summary(stats: Any, source: str, max_length: int) -> Text:
    """What became of the training records (a :class:`~ragtruth_spans.training.data.RecordStats`, possibly with
    a family's extra counts)."""
    d = asdict(stats) if is_dataclass(stats) else dict(stats)
    lines = [f"training data: {source}",
             f"  {d['records']} records; {d['other_tasks']} of other tasks skipped; {d['with_spans']} with spans, "
             f"{d['clean_kept']}/{d['clean']} clean kept; {d['over_max_examples']} over max_examples skipped",
             f"  {d['examples']} examples"]
    if "shortened" in d:
        too_long = d.get("too_long_ids") or []
        lines[-1] += (f"; {d['shortened']} dropped (context too long for max_length={max_length}); "
                      f"{d['too_long']} dropped (response + target alone too long)"
                      + (f": {', '.join(too_long[:5])}{' …' if len(too_long) > 5 else ''}" if too_long else ""))
    if "no_windows" in d:
        skipped = d.get("no_windows_ids") or []
        lines[-1] += (f"; {d['no_windows']} records skipped (no window fits max_length={max_length})"
                      + (f": {', '.join(skipped[:5])}{' …' if len(skipped) > 5 else ''}" if skipped else ""))
    extra = {k: v for k, v in d.items() if k not in {"records", "other_tasks", "with_spans", "clean", "clean_kept",
                                                      "over_max_examples", "examples", "shortened", "too_long",
                                                      "too_long_ids", "no_windows"} and isinstance(v, (int, float))}
    if extra:
        lines.append("  " + "; ".join(f"{k.replace('_', ' ')}: {v}" for k, v in extra.items()))
    if callable(getattr(stats, "by_origin", None)) and (d.get("augmented") or d.get("extra")):
        origin = stats.by_origin()
        lines.insert(2, f"  training records by origin: {origin['real']} real, {origin['augmented']} augmented "
                        f"(synthetic edits of clean ones), {origin['extra']} extra (training-only sources)")
        for source in d.get("extra") or []:
            lines.insert(3, f"    extra {source['dir']}: {source['kept']} of {source['records']} records kept "
                            f"({source['with_spans']} with spans; {source['other_tasks']} of other tasks), weight "
                            f"{source['weight']:g}")
    return user_text("\n".join(lines))


def threshold_decision(threshold: float, tuned: bool, split: str | None, figure: str | None = None) -> str:
    """A token-level decision in words: when a token (word) is flagged and where its threshold comes from."""
    where = (f"tuned on {split}" + (f", {figure}" if figure else "")) if tuned else "fixed by the recipe"
    return f"a token is flagged when its hallucination probability is at least {threshold:g} ({where})"


def predict_summary(summary: Mapping[str, Any]) -> str:
    """A ``predict`` run (``PredictSummary.to_dict()``) in a few lines; failures, spans, diagnostics and speed
    count only the responses detected by this run."""
    lines = [
        f"responses: {summary['responses']} ({summary['predicted']} predicted, {summary['skipped_done']} skipped as "
        f"already in {summary['out_path']})",
        f"detector failures: {summary['errors']}   spans: {summary['spans']}",
        f"throughput: {summary['responses_per_second']:.2f} responses/s ({summary['predict_seconds']:.1f} s "
        f"detecting, {summary['load_seconds']:.1f} s loading)",
    ]
    counters = {k: v for k, v in (summary.get("counters") or {}).items() if v}  # all-zero counters say nothing
    if counters:
        lines.insert(2, "diagnostics: " + "   ".join(f"{k}: {v}" for k, v in counters.items()))
    if not summary["predicted"]:  # a resumed run with nothing left: no counts or speed to report for this run
        lines[1:] = ["nothing left to detect: every response is already in the file"]
    if summary.get("repaired_last_line"):
        lines.append("note: removed an incomplete last line (interrupted write) before resuming")
    if summary.get("engine") == "ray" and summary["predicted"]:
        peaks = list((summary.get("worker_peak_rss_mb") or {}).values())
        memory = f"   peak memory per worker: {min(peaks):.0f}–{max(peaks):.0f} MB" if peaks else ""
        lines.append(f"ray: {summary['workers']} worker(s), cluster ready in {summary['startup_seconds']:.1f} s"
                     f"{memory}   duplicate lines dropped: {summary['duplicates_dropped']}   records retried "
                     f"alone: {summary['retried_alone']}")
    return "\n".join(lines)


# --- detect ------------------------------------------------------------------------------------------------

SPAN_STYLES = {"Evident Conflict": "bold black on dark_orange", "Subtle Conflict": "bold black on yellow",
               "Evident Baseless Info": "bold black on sky_blue1", "Subtle Baseless Info": "bold black on plum2"}
"""Styles of predicted spans by type (underlined too, so the view does not rely on colour alone)."""


def detection_view(response: str, detection: Mapping[str, Any], title: str | None = None) -> Group:
    """One detection (a ``detect`` output line: ``spans`` with character offsets of ``response``, half-open,
    ``score``, ``error``) as the response with its spans highlighted and a table of the spans."""
    text = _highlighted(response, detection["spans"])
    score = detection.get("score")
    head = user_text(f"{title + ' — ' if title else ''}response score {_fmt(score)} · {len(detection['spans'])} "
                     "span(s)", style="bold")
    parts: list[Any] = [head, text]
    if detection.get("error"):
        parts.append(user_text(f"the detector could not judge this response: {detection['error']}", style="red"))
    if detection["spans"]:
        evidence = any("verdict" in span for span in detection["spans"])
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("[start, end)", "type", "score", "text") + (("verdict", "why (evidence: context offsets)")
                                                                   if evidence else ()):
            table.add_column(Text(column))
        for span in detection["spans"]:
            row = [f"\\[{span['start']}, {span['end']})", user_text(span.get("type") or "–"), _fmt(span.get("score")),
                   user_text(response[span["start"]:span["end"]])]
            if evidence:
                where = " ".join(f"[{p['start']}, {p['end']})" for p in span.get("evidence", []))
                row += [user_text(span.get("verdict", "–")), user_text(f"{span.get('reason', '')} · {where}")]
            table.add_row(*row)
        parts.append(table)
    return Group(*parts)


def _highlighted(response: str, spans: list[Mapping[str, Any]]) -> Text:
    """The response with its spans styled, cut at the span edges so that escaping control characters
    (:func:`printable`) never shifts a highlight."""
    edges = sorted({0, len(response), *(p for s in spans for p in (s["start"], s["end"]))})
    text = Text()
    for start, end in itertools.pairwise(edges):
        styles = [f"{SPAN_STYLES.get(s.get('type') or '', 'bold black on grey70')} underline" for s in spans
                  if s["start"] <= start < s["end"]]
        text.append(printable(response[start:end]), style=styles[-1] if styles else "")
    return text
