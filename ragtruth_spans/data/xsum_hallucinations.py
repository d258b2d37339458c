"""``ragtruth-spans import xsum-hallucinations``: the XSum hallucination annotations of Maynez et al. (ACL 2020;
CC BY 4.0) with the BBC articles as FRANK distributes them (MIT) → prepared records.

Input folder: ``hallucination_annotations_xsum_summaries.csv`` (columns ``bbcid, system, summary,
hallucination_type, hallucinated_span, hallucinated_span_start, hallucinated_span_end, worker_id``; one row per
annotator and span, ``NULL`` for an annotator who marked nothing) and ``articles/<bbcid>.json`` (``article``).

Records: one per (article, system) summary; context = the article, response = the summary with the CSV's
escaped apostrophes (``\\'``) unescaped, task ``Summary``, model = the system (``Gold`` is the reference), source
``xsum-<bbcid>``.

Offsets: the CSV's are mostly 1-based with an exclusive end, but not all; each annotated span is therefore
located by its text: the occurrence in the summary nearest to ``start - 1`` (``exact``: at ``start - 1``;
``moved``: elsewhere, counted as repaired); a span text not in the summary is dropped and counted.

Annotators: a character is hallucinated when at least ``min_votes`` (default 2) of the summary's annotators
marked it; contiguous characters form one span (surrounding spaces trimmed); its type is the majority of the
votes on it: ``intrinsic`` → Evident Conflict, ``extrinsic`` → Evident Baseless Info (a tie: Baseless). Summaries
whose article is not in ``articles/`` are skipped and counted.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import is_blank
from ragtruth_spans.core.jsonl import read_json_file
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.data.imported import ImportReport, read_csv_strict

CSV_NAME = "hallucination_annotations_xsum_summaries.csv"
COLUMNS = ("bbcid", "system", "summary", "hallucination_type", "hallucinated_span", "hallucinated_span_start",
           "hallucinated_span_end", "worker_id")
TYPES = {"intrinsic": "Evident Conflict", "extrinsic": "Evident Baseless Info"}
NO_TYPE = "NULL"
"""The ``hallucination_type`` of an annotator who marked nothing (and, in 7 rows of the original file, of a marked
span whose type the annotator left out: the span gets the vote, not a type)."""


def unescape(text: str) -> str:
    """The CSV's summaries escape apostrophes (``britain\\'s``)."""
    return text.replace("\\'", "'")


def read_xsum_hallucinations(folder: str | Path, *, min_votes: int = 2) -> tuple[list[Record], ImportReport]:
    """Every annotated summary of ``folder`` whose article is there, spans by ``min_votes`` annotators (module
    docstring), and the report."""
    folder = Path(folder)
    path = folder / CSV_NAME
    if not path.is_file():
        raise InputError(f"no {CSV_NAME} here (google-research-datasets/xsum_hallucination_annotations)",
                         path=folder)
    if min_votes < 1:
        raise InputError(f"must be >= 1, got {min_votes}", field="--min-votes")
    report = ImportReport(importer="xsum-hallucinations", input_path=str(folder), unit="summaries")
    groups: dict[tuple[str, str], list[dict[str, str]]] = defaultdict(list)
    for line, row in read_csv_strict(path, COLUMNS):
        check_row(row, path, line)
        groups[(row["bbcid"], row["system"])].append(row | {"_line": str(line)})
    report.details = {"min_votes": min_votes, "annotation_rows": sum(len(g) for g in groups.values()),
                      "span_rows": Counter(), "annotators_per_summary": Counter()}
    articles: dict[str, str | None] = {}
    records: list[Record] = []
    for (bbcid, system), rows in sorted(groups.items()):
        report.input += 1
        if bbcid not in articles:
            articles[bbcid] = _article(folder / "articles" / f"{bbcid}.json")
        article = articles[bbcid]
        if article is None:
            report.skip("article not in articles/")
            continue
        summaries = {unescape(r["summary"]) for r in rows}
        if len(summaries) != 1:
            raise InputError(f"{len(summaries)} different summaries for article {bbcid}, system {system}",
                             path=path, line=int(rows[0]["_line"]))
        summary = summaries.pop()
        if is_blank(summary):
            report.skip("empty summary")
            continue
        spans = _vote(summary, rows, min_votes, report)
        records.append(Record(id=f"xsum-{bbcid}-{system}", source_id=f"xsum-{bbcid}", task_type="Summary",
                              model=system, split="", quality="good", response=summary, context=article,
                              question=None, spans=spans))
    details = report.details
    details["span_rows"] = dict(sorted(details["span_rows"].items()))
    details["annotators_per_summary"] = {str(k): v for k, v in sorted(details["annotators_per_summary"].items())}
    return records, report


def check_row(row: dict[str, str], path: Path, line: int) -> None:
    """Refuse a row whose fields are not what the format says (:class:`InputError` naming file, line and field):
    empty ``bbcid``/``system``/``worker_id``, a ``hallucination_type`` other than intrinsic, extrinsic or NULL, and
    offsets of a marked span that are not integers."""
    where = {"path": path, "line": line}
    for key in ("bbcid", "system", "worker_id"):
        if not row[key].strip():
            raise InputError("must not be empty", **where, field=key)
    if row["hallucination_type"] not in (*TYPES, NO_TYPE):
        raise InputError(f"unknown hallucination type {row['hallucination_type'][:40]!r} (expected intrinsic, "
                         f"extrinsic or {NO_TYPE})", **where, field="hallucination_type")
    if row["hallucinated_span"] in ("", NO_TYPE):
        return
    for key in ("hallucinated_span_start", "hallucinated_span_end"):
        try:
            int(row[key])
        except ValueError:
            raise InputError(f"must be an integer offset, got {row[key][:40]!r}", **where, field=key) from None


def _article(path: Path) -> str | None:
    if not path.is_file():
        return None
    data = read_json_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("article"), str):
        raise InputError("expected an object with an 'article' string", path=path, field="article")
    return data["article"] if data["article"].strip() else None


def locate(summary: str, text: str, start: int) -> tuple[int, int] | None:
    """``[a, b)`` of the occurrence of ``text`` in ``summary`` nearest to ``start`` (None: not there)."""
    hits = []
    at = summary.find(text)
    while at >= 0:
        hits.append(at)
        at = summary.find(text, at + 1)
    if not hits:
        return None
    best = min(hits, key=lambda a: (abs(a - start), a))
    return best, best + len(text)


def _vote(summary: str, rows: list[dict[str, str]], min_votes: int, report: ImportReport) -> list[Span]:
    details = report.details
    workers = {r["worker_id"] for r in rows}
    details["annotators_per_summary"][len(workers)] += 1
    marks: dict[str, set[int]] = defaultdict(set)
    kinds: list[Counter[str]] = [Counter() for _ in summary]
    for row in rows:
        text = unescape(row["hallucinated_span"] or "").strip()
        if row["hallucinated_span"] in (None, "", "NULL"):
            details["span_rows"]["none marked (NULL)"] += 1
            continue
        start = int(row["hallucinated_span_start"]) - 1  # checked by check_row
        found = locate(summary, text, start) if text else None
        if found is None:
            details["span_rows"]["text not in the summary (dropped)"] += 1
            report.repair("annotated span text not in the summary (that vote dropped)")
            continue
        if found[0] == start:
            details["span_rows"]["exact (1-based start)"] += 1
        else:
            details["span_rows"]["moved to the nearest occurrence"] += 1
            report.repair("annotated span offsets off, located by its text")
        chars = set(range(*found)) - marks[row["worker_id"]]
        marks[row["worker_id"]] |= chars
        for i in chars:
            kinds[i][row["hallucination_type"]] += 1
    votes = Counter(i for chars in marks.values() for i in chars)
    hot = [i for i in range(len(summary)) if votes[i] >= min_votes]
    spans: list[Span] = []
    for i in hot:
        if spans and spans[-1].end == i:
            spans[-1] = Span(spans[-1].start, i + 1)
        else:
            spans.append(Span(i, i + 1))
    typed = []
    for span in spans:
        a, b = span.start, span.end
        while a < b and summary[a].isspace():
            a += 1
        while b > a and summary[b - 1].isspace():
            b -= 1
        if a == b:
            continue
        count = sum((kinds[i] for i in range(a, b)), Counter())
        if not count["intrinsic"] and not count["extrinsic"]:
            report.repair(f"span whose votes carry no type ({NO_TYPE}): untyped")
            kind = None
        else:
            kind = TYPES["intrinsic"] if count["intrinsic"] > count["extrinsic"] else TYPES["extrinsic"]
        typed.append(Span(a, b, kind, summary[a:b]))
    return typed
