"""``ragtruth-spans import summedits``: SummEdits (Laban et al., 2023; Apache-2.0) → prepared records.

Input: a folder of ``summedits_<domain>.json`` files (salesforce/factualNLG ``data/summedits/``), each a JSON list
of ``{"id", "doc", "summary", "label", "original_summary", "edit_types", ...}``. ``label`` 1: annotators found
the summary consistent with ``doc``; 0: inconsistent.

Records: context = ``doc``, response = ``summary``, task ``Summary``, model ``summedits/<domain>``, one source per
document (``summedits-<domain>-<sha256 of doc>``). A consistent summary has no span. An inconsistent one carries no
offsets: its spans are where it differs from ``original_summary`` in a word-level diff (:mod:`difflib` over
words and punctuation runs; a replaced or inserted run of words is one span). Counted, never silent:

- skipped: an inconsistent summary identical to its original (nothing to mark), or one whose edit only deleted
  words (a deletion leaves no characters in the summary to mark);
- repaired: deletions beside marked edits (not marked), inconsistent summaries whose type is unknown (no or
  several ``edit_types``: the spans get no type).

Span types from ``edit_types`` when there is exactly one: entity_modification and antonym_swap → Evident
Conflict, negation_insertion_removal → Subtle Conflict, hallucinated_fact_insertion → Evident Baseless Info.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_json_file
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.data.imported import ImportReport, stable_id

EDIT_TYPES: dict[str, str] = {"entity_modification": "Evident Conflict", "antonym_swap": "Evident Conflict",
                              "negation_insertion_removal": "Subtle Conflict",
                              "hallucinated_fact_insertion": "Evident Baseless Info"}
_WORD = re.compile(r"\w+|[^\w\s]+")
_KEYS = ("id", "doc", "summary", "label", "original_summary")


def read_summedits(folder: str | Path) -> tuple[list[Record], ImportReport]:
    """Every record of the ``summedits_*.json`` files of ``folder`` (sorted by name) and the report."""
    folder = Path(folder)
    files = sorted(folder.glob("summedits_*.json")) if folder.is_dir() else []
    if not files:
        raise InputError("no summedits_<domain>.json file here (SummEdits' data/summedits/ folder)", path=folder)
    report = ImportReport(importer="summedits", input_path=str(folder), unit="summaries")
    records: list[Record] = []
    seen: set[str] = set()
    for path in files:
        domain = path.stem.removeprefix("summedits_")
        items = read_json_file(path)
        if not isinstance(items, list):
            raise InputError("expected a JSON list of summaries", path=path)
        report.details.setdefault("files", {})[path.name] = len(items)
        for index, item in enumerate(items):
            report.input += 1
            record = _record(item, domain, path, index, report)
            if record is None:
                continue
            if record.id in seen:
                report.skip("duplicate id")
                continue
            seen.add(record.id)
            records.append(record)
    return records, report


def _record(item: Any, domain: str, path: Path, index: int, report: ImportReport) -> Record | None:
    where = f"item {index}"
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object", path=path)
    for key in _KEYS:
        if key not in item:
            raise InputError(f"{where}: missing field", path=path, field=key)
    if not all(isinstance(item[k], str) for k in ("doc", "summary", "original_summary")) \
            or item["label"] not in (0, 1, "0", "1"):
        raise InputError(f"{where}: doc/summary/original_summary must be strings and label 0 or 1", path=path)
    summary, doc = item["summary"], item["doc"]
    if not summary.strip() or not doc.strip():
        report.skip("empty summary or document")
        return None
    spans: list[Span] = []
    if int(item["label"]) == 0:
        regions, deletions = diff_regions(item["original_summary"], summary)
        if not regions:
            report.skip("inconsistent, identical to original_summary" if not deletions
                        else "inconsistent by deletion only (nothing to mark)")
            return None
        if deletions:
            report.repair("deletions beside marked edits (not marked)", deletions)
        edit_types = item.get("edit_types") or []
        kind = EDIT_TYPES.get(edit_types[0]) if len(edit_types) == 1 else None
        if kind is None:
            report.repair("inconsistent, type unknown (no or several edit_types): spans untyped")
        spans = [Span(a, b, kind, summary[a:b]) for a, b in regions]
    return Record(id=f"summedits-{domain}-{item['id']}", source_id=f"summedits-{domain}-{stable_id(doc)}",
                  task_type="Summary", model=f"summedits/{domain}", split="", quality="good", response=summary,
                  context=doc, question=None, spans=spans)


def diff_regions(original: str, edited: str) -> tuple[list[tuple[int, int]], int]:
    """``([(start, end)] character spans of ``edited`` replaced or inserted relative to ``original``, number of
    pure deletions)`` by a word-level :class:`difflib.SequenceMatcher` (tokens: runs of word characters, runs of
    punctuation)."""
    old = [m.group() for m in _WORD.finditer(original)]
    new = list(_WORD.finditer(edited))
    matcher = difflib.SequenceMatcher(a=old, b=[m.group() for m in new], autojunk=False)
    regions: list[tuple[int, int]] = []
    deletions = 0
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            regions.append((new[j1].start(), new[j2 - 1].end()))
        elif tag == "delete":
            deletions += 1
    return regions, deletions
