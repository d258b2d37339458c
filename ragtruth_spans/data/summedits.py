"""``ragtruth-spans import summedits``: SummEdits (Laban et al., 2023; Apache-2.0) → prepared records.

Input: a folder of ``summedits_<domain>.json`` files (salesforce/factualNLG ``data/summedits/``), each a JSON list
of ``{"id", "doc", "summary", "label", "original_summary", "edit_types", ...}``. ``label`` 1: annotators found
the summary consistent with ``doc``; 0: inconsistent (the integers, or the strings "0"/"1"; ``true``, ``1.0`` and
any other value are refused, as is an unknown edit type).

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

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import check_id, check_text, is_blank
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
    check_item(item, path, index)
    summary, doc = item["summary"], item["doc"]
    if is_blank(summary) or is_blank(doc):
        report.skip("empty summary or document")
        return None
    spans: list[Span] = []
    if label_of(item["label"]) == 0:
        regions, deletions = diff_regions(item["original_summary"], summary)
        if not regions:
            report.skip("inconsistent, identical to original_summary" if not deletions
                        else "inconsistent by deletion only (nothing to mark)")
            return None
        if deletions:
            report.repair("deletions beside marked edits (not marked)", deletions)
        edit_types = item.get("edit_types") or []  # checked by check_item
        kind = EDIT_TYPES.get(edit_types[0]) if len(edit_types) == 1 else None
        if kind is None:
            report.repair("inconsistent, type unknown (no or several edit_types): spans untyped")
        spans = [Span(a, b, kind, summary[a:b]) for a, b in regions]
    return Record(id=f"summedits-{domain}-{item['id']}", source_id=f"summedits-{domain}-{stable_id(doc)}",
                  task_type="Summary", model=f"summedits/{domain}", split="", quality="good", response=summary,
                  context=doc, question=None, spans=spans)


def label_of(value: Any) -> int | None:
    """SummEdits' label: the JSON integer 0 or 1 (the files' own), or the string "0" or "1"; None for anything else
    (``true``, ``1.0``, ``2``: never coerced)."""
    if type(value) is int and value in (0, 1):
        return value
    return {"0": 0, "1": 1}.get(value) if isinstance(value, str) else None


def check_item(item: Any, path: Path, index: int) -> None:
    """Refuse an item whose fields are not what SummEdits writes (:class:`InputError` naming the file, the item and
    the field): ``doc``, ``summary``, ``original_summary`` strings of valid Unicode; ``id`` a string or an
    integer; ``label`` 0 or 1 (:func:`label_of`); ``edit_types``
    absent, null or a list of the known edit types."""
    where = f"item {index}"
    if not isinstance(item, dict):
        raise InputError(f"{where}: expected an object", path=path)
    for key in _KEYS:
        if key not in item:
            raise InputError(f"{where}: missing field", path=path, field=key)
    for key in ("doc", "summary", "original_summary"):
        check_text(item[key], field=f"{where}.{key}", path=path)
    check_id(item["id"], field=f"{where}.id", path=path)
    if label_of(item["label"]) is None:
        raise InputError(f"must be the integer 0 or 1 (or the string \"0\" or \"1\"), got {item['label']!r:.40}",
                         path=path, field=f"{where}.label")
    edit_types = item.get("edit_types")
    if edit_types is not None and (not isinstance(edit_types, list)
                                   or not all(isinstance(kind, str) for kind in edit_types)):
        raise InputError("must be a list of edit type names", path=path, field=f"{where}.edit_types")
    for kind in edit_types or []:
        check_choice(kind, EDIT_TYPES, "edit type", path=path, field=f"{where}.edit_types")


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
