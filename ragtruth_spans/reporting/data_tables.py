"""Console tables of what the data commands did: ``prepare`` (:func:`prepare_summary`), ``import``
(:func:`import_summary`) and ``import nli`` (:func:`nli_import_summary`), each from the ``stats.json`` it wrote:
the counts per split, then what was read, skipped, repaired or dropped, each by reason."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.table import Table

from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.reporting.console import user_text


def _splits_table(title: str, caption: str, splits: Mapping[str, Any]) -> Table:
    """Per split, its responses by task and in total, its sources, hallucinated responses and spans."""
    table = Table(title=title, title_justify="left", caption_justify="left", caption=caption)
    table.add_column("split")
    for col in (*TASK_TYPES, "total", "sources", "halluc.", "spans"):
        table.add_column(col, justify="right")
    for name, s in splits.items():
        table.add_row(user_text(name), *(str(s["by_task"][t]["responses"]) for t in TASK_TYPES),
                      str(s["responses"]), str(s["sources"]), str(s["hallucinated_responses"]), str(s["spans"]))
    return table


def prepare_summary(stats: Mapping[str, Any]) -> Group:
    """A ``prepare`` run (``PrepareStats.to_dict()``): per-split counts, the quality filter and the labels."""
    splits = _splits_table("Prepared splits", "QA..total: responses; halluc.: responses with at least one span",
                           stats["splits"])
    responses, labels = stats["responses"], stats["labels"]
    keep = stats["keep_quality"]
    accounting = Table(title="Responses and labels", title_justify="left", show_header=False)
    accounting.add_column("what")
    accounting.add_column("count", justify="right")
    rows = [
        ("responses in response.jsonl", responses["input"]),
        ("  written (train + dev + test)", responses["written"]),
        (f"  filtered by quality (keep: {keep if isinstance(keep, str) else ', '.join(keep)})",
         responses["filtered"]),
        *((f"    quality = {q}", n) for q, n in sorted(responses["filtered_by_quality"].items())),
        ("labels in response.jsonl", labels["input"]),
        ("  exact (response[start:end] == text)", labels["exact"]),
        ("  repaired (found unambiguously nearby)", labels["repaired"]),
        ("  unrepairable (dropped, listed in stats.json)", labels["unrepairable"]),
        ("  exact duplicates removed", labels["duplicates_removed"]),
        ("spans after checking", labels["spans"]),
        ("  written", labels["spans_written"]),
        ("  in filtered responses", labels["spans_in_filtered_responses"]),
        ("overlapping span pairs (kept)", labels["overlapping_pairs"]),
    ]
    for what, count in rows:
        accounting.add_row(user_text(what), str(count))
    warnings = [user_text(f"warning: {message}", style="yellow") for message in stats["warnings"]]
    return Group(splits, accounting, *warnings)


def import_summary(stats: Mapping[str, Any]) -> Group:
    """An import (``stats.json`` of :func:`ragtruth_spans.data.imported.write_prepared`): per-split counts, then
    what was read, skipped, repaired and defaulted, each by reason."""
    splits = _splits_table(f"Imported ({stats['importer']})", "QA..total: responses; halluc.: responses with at "
                           "least one span or a response-level label without spans", stats["splits"])
    accounting = Table(title="What was read, skipped, repaired, defaulted", title_justify="left", show_header=False)
    accounting.add_column("what")
    accounting.add_column("count", justify="right")
    unit = stats.get("unit", "records")
    rows: list[tuple[str, Any]] = [(f"{unit} read", stats["input"]),
                                   ("  written (train + dev + test)", stats["written"]),
                                   ("  skipped", sum(stats["skipped"].values()))]
    rows += [(f"    {reason}", n) for reason, n in stats["skipped"].items()]
    rows += [("repaired", sum(stats["repaired"].values()))]
    rows += [(f"  {reason}", n) for reason, n in stats["repaired"].items()]
    rows += [("defaulted (field absent)", sum(stats["defaulted"].values()))]
    rows += [(f"  {name}", n) for name, n in stats["defaulted"].items()]
    split = ("the records' own split" if stats.get("split_given") else
             "re-split by source, seed " + str(stats.get("seed")) + ": "
             + ",".join(f"{k}={v:g}" for k, v in (stats.get("split_by_source") or {}).items()))
    rows += [("spans written", stats["spans"]["written"]), (f"splits: {split}", "")]
    for what, count in rows:
        accounting.add_row(user_text(what), str(count))
    warnings = [user_text(f"warning: {message}", style="yellow") for message in stats["warnings"]]
    return Group(splits, accounting, *warnings)


def nli_import_summary(stats: Mapping[str, Any]) -> Group:
    """``import nli`` (``stats.json`` of :func:`ragtruth_spans.data.nli.import_nli`): pairs per source × split ×
    label, then per set what was read, skipped, dropped as a duplicate and written."""
    labels = list(stats["labels"])
    counts = Table(title="Imported (nli): pairs per source, split and label", title_justify="left")
    counts.add_column("source")
    counts.add_column("split")
    for label in (*labels, "total"):
        counts.add_column(label, justify="right")
    for source, splits in stats["counts"].items():
        for split, by_label in splits.items():
            counts.add_row(user_text(source), user_text(split), *(str(by_label.get(x, 0)) for x in labels),
                           str(sum(by_label.values())))
    accounting = Table(title="What was read, skipped, dropped as a duplicate", title_justify="left")
    for col in ("set", "read", "skipped", "duplicates", "written"):
        accounting.add_column(col, justify="left" if col == "set" else "right")
    for name, entry in stats["by_set"].items():
        accounting.add_row(user_text(name), str(entry["input"]), str(sum(entry["skipped"].values())),
                           str(sum(entry["duplicates"].values())), str(entry["written"]))
    accounting.add_row("total", str(stats["input"]), str(stats["skipped"]), str(stats["duplicates"]),
                       str(stats["written"]), style="bold")
    splits = user_text("splits: " + ", ".join(f"{name} {n}" for name, n in stats["splits"].items()))
    return Group(counts, accounting, splits)
