"""The leaderboard of ``ragtruth-spans benchmark`` from its JSON payload (``leaderboard.json``): Markdown for its
files (:func:`render_markdown`), a rich table for the terminal (:func:`leaderboard_view`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragtruth_spans.core.types import HALLUCINATION_TYPES, TASK_TYPES

TYPE_ABBREVIATIONS = {"Evident Conflict": "EC", "Subtle Conflict": "SC", "Evident Baseless Info": "EBI",
                      "Subtle Baseless Info": "SBI"}
PRF = ("precision", "recall", "f1")


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _with_ci(value: float | None, interval: list[float] | None) -> str:
    if interval is None:
        return _num(value)
    return f"{_num(value)} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _rate(throughput: Mapping[str, Any]) -> str:
    rate = throughput.get("responses_per_second")
    return "–" if rate is None else (f"{rate:.1f}" if rate < 100 else f"{rate:.0f}")


def _name(entry: Mapping[str, Any]) -> str:
    detector = entry["detector"]
    thresholds = detector.get("thresholds") or (
        {"threshold": detector["threshold"]} if "threshold" in detector else None)
    shown = f"`{entry['label']}`"
    if thresholds:
        shown += " (" + ", ".join(f"{k} {v:g}" for k, v in thresholds.items()) + ")"
    return shown


def overall_table(payload: Mapping[str, Any]) -> list[str]:
    """The main table: one row per detector, best span F1 first."""
    types = [t for t in HALLUCINATION_TYPES]
    header = (["#", "detector", "span P", "span R", "span F1 [95% CI]", "resp. P", "resp. R", "resp. F1 [95% CI]",
               "resp. macro-F1", "AUROC"] + [f"recall {TYPE_ABBREVIATIONS[t]}" for t in types] + ["responses/s"])
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|"]
    for rank, entry in enumerate(payload["detectors"], start=1):
        report = entry["report"]
        overall, ci = report["overall"], (report.get("ci") or {}).get("overall", {})
        cells = [str(rank), _name(entry), _num(overall["span"]["precision"]), _num(overall["span"]["recall"]),
                 _with_ci(overall["span"]["f1"], ci.get("span", {}).get("f1")),
                 _num(overall["response"]["precision"]), _num(overall["response"]["recall"]),
                 _with_ci(overall["response"]["f1"], ci.get("response", {}).get("f1")),
                 _num(overall["response_macro"]["f1"]), _num(overall["auroc"])]
        cells += [_num(overall["type_recall"].get(t)) for t in types]
        cells.append(_rate(entry["throughput"]))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def group_table(payload: Mapping[str, Any], group: str, keys: list[str], metric: tuple[str, str]) -> list[str]:
    """One row per detector, one column per task or generating model: the chosen metric."""
    level, name = metric
    lines = ["| detector | " + " | ".join(keys) + " |", "|---|" + "---:|" * len(keys)]
    for entry in payload["detectors"]:
        groups = entry["report"][group]
        cells = [_num(groups[k][level][name]) if k in groups else "–" for k in keys]
        lines.append(f"| `{entry['label']}` | " + " | ".join(cells) + " |")
    return lines


def overlap_table(payload: Mapping[str, Any]) -> list[str]:
    """One row per detector whose report counts its overlap with the training data: how many gold responses share
    a source or a response with it, how many were dropped, and span / response F1 overall and on the rest (empty
    when no report has an overlap)."""
    entries = [e for e in payload["detectors"] if e["report"].get("overlap")]
    if not entries:
        return []
    lines = ["| detector | overlap | share a source | share a response | dropped | span F1 | span F1 rest | "
             "resp. F1 | resp. F1 rest |", "|---|" + "---:|" * 8]
    for entry in entries:
        overlap, overall = entry["report"]["overlap"], entry["report"]["overall"]
        if overlap["status"] == "unknown":
            lines.append(f"| `{entry['label']}` | unknown: {overlap['reason']} |" + " |" * 7)
            continue
        rest = (overlap.get("rest") or {}).get("overall")
        cells = [f"{overlap['overlapping']} of {overlap['gold_responses']}", str(overlap["shared_source"]),
                 str(overlap["shared_response"]), str(overlap["dropped"]), _num(overall["span"]["f1"]),
                 _num(rest["span"]["f1"]) if rest else "–", _num(overall["response"]["f1"]),
                 _num(rest["response"]["f1"]) if rest else "–"]
        lines.append(f"| `{entry['label']}` | " + " | ".join(cells) + " |")
    return lines


def render_markdown(payload: Mapping[str, Any]) -> str:
    """The whole ``leaderboard.md``: settings, the main table, span F1 by task and by generating model, notes."""
    tasks = [t for t in TASK_TYPES if any(t in e["report"]["by_task"] for e in payload["detectors"])]
    models = sorted({m for e in payload["detectors"] for m in e["report"]["by_model"]})
    bootstrap = payload["bootstrap"]
    out = [f"# Leaderboard: {payload['responses']} responses of `{payload['data']}`", "",
           f"Ranked by span F1 (characters). Intervals: 95 % percentile bootstrap over responses ({bootstrap} "
           f"resamples, seed {payload['seed']})." if bootstrap else "Ranked by span F1 (characters).",
           "Thresholds tuned on the dev split are marked `@dev` "
           f"(criterion {payload['criterion']}, dev file `{payload['dev']}`)." if payload.get("dev") else
           "No dev split: detectors run with their own (paper or trained) thresholds.",
           "Recall per type: share of the gold characters of that type covered by any predicted span. "
           "responses/s: detection only, model loading excluded.", ""]
    out += overall_table(payload)
    out += ["", "## Span F1 by task", ""] + group_table(payload, "by_task", tasks, ("span", "f1"))
    out += ["", "## Response F1 by task", ""] + group_table(payload, "by_task", tasks, ("response", "f1"))
    out += ["", "## Span F1 by generating model", ""] + group_table(payload, "by_model", models, ("span", "f1"))
    overlap = overlap_table(payload)
    if overlap:
        out += ["", "## Overlap with each detector's training data", "",
                "Gold responses that share a source (context) or a response with what the detector trained or was "
                "tuned on, and the figures on the rest" + (" (`--drop-overlap`: left out of every figure above)."
                                                          if payload.get("drop_overlap") else "."), "", *overlap]
    notes = [f"- `{e['label']}`: {note}" for e in payload["detectors"] for note in e["report"].get("notes", [])]
    if notes:
        out += ["", "## Notes", "", *notes]
    return "\n".join(out) + "\n"


def leaderboard_view(payload: Mapping[str, Any], title: str | None = None, *, compact: bool = False) -> Any:
    """The main figures as a rich table for the terminal (what ``benchmark`` and ``quickstart`` print; the full
    table, recall per type included, is ``leaderboard.md``): one row per detector, best span F1 first.
    ``compact``: for narrow consoles (80 columns), the detector's label without its operating point, span F1 with
    its interval, response F1, AUROC and speed only."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title or f"Leaderboard: {payload.get('responses', '?')} responses (span F1 with its 95 % "
                                 "bootstrap interval; full table in leaderboard.md)", title_justify="left")
    columns = ("#", "detector", "span F1 [95% CI]", "resp. F1", "AUROC", "resp./s") if compact else (
        "#", "detector", "span P", "span R", "span F1 [95% CI]", "resp. F1 [95% CI]", "resp. macro-F1", "AUROC",
        "resp./s")
    for name in columns:
        table.add_column(name, justify="left" if name == "detector" else "right",
                         no_wrap=compact and name != "detector")
    for rank, entry in enumerate(payload["detectors"], start=1):
        report = entry["report"]
        overall, ci = report["overall"], (report.get("ci") or {}).get("overall") or {}
        span_f1 = _with_ci(overall["span"]["f1"], ci.get("span", {}).get("f1"))
        if compact:
            table.add_row(str(rank), Text(entry["label"]), span_f1, _num(overall["response"]["f1"]),
                          _num(overall["auroc"]), _rate(entry["throughput"]))
            continue
        table.add_row(str(rank), Text(_name(entry).replace("`", "")), _num(overall["span"]["precision"]),
                      _num(overall["span"]["recall"]), span_f1,
                      _with_ci(overall["response"]["f1"], ci.get("response", {}).get("f1")),
                      _num(overall["response_macro"]["f1"]), _num(overall["auroc"]), _rate(entry["throughput"]))
    return table
