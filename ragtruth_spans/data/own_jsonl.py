"""``ragtruth-spans import jsonl``: your own annotated data, one JSON object per line, in a minimal format.

Required: ``context`` (the passages, article or record the response must stay within), ``response`` (the text
checked) and ``spans`` (a list, ``[]`` for a response without hallucination) of ``{"start", "end"}`` character
offsets into ``response`` (half-open: ``response[start:end]`` is the span), each with an optional ``type`` (one
of RAGTruth's four, or null) and an optional ``text`` (checked against ``response[start:end]``).

Optional, with the default used when absent (each default is counted in the summary and in ``stats.json``):

=============  ===============================================================================================
field          default
=============  ===============================================================================================
``question``   none (null)
``task``       ``QA`` when the record has a question, else ``Summary`` (one of QA, Summary, Data2txt)
``id``         ``<file stem>-<line>`` (a string or an integer; unique in the file)
``source_id``  the source of an identical context: records of one context share one source (the ``source_id``
               given to a record of that context, else the id of its first record), so they stay in one split
``model``      ``unknown`` (the system that wrote the response; reports break results down by it)
``split``      none: a seeded re-split by source (train 0.7, dev 0.15, test 0.15 per task); give it on every
               record or on none
=============  ===============================================================================================

Any other field, a span outside the response, a ``text`` that differs from the response there, or a bad type is
an :class:`~ragtruth_spans.core.errors.InputError` naming the file, line and field; nothing is guessed from other
fields. Exact duplicate spans are merged and counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import check_id, check_text
from ragtruth_spans.core.jsonl import iter_jsonl
from ragtruth_spans.core.types import HALLUCINATION_TYPES, SPLITS, TASK_TYPES, Record, Span, canonical_spans
from ragtruth_spans.data.imported import ImportReport, stable_id

FIELDS: tuple[str, ...] = ("context", "response", "spans", "question", "task", "id", "source_id", "model", "split")
SPAN_FIELDS: tuple[str, ...] = ("start", "end", "type", "text")
DEFAULT_MODEL = "unknown"
RESERVED_ID_MARKS = ("#aug-", "#extra-")


def read_own_jsonl(path: str | Path) -> tuple[list[Record], ImportReport]:
    """The records of a file in the minimal format (module docstring) and the report of what was defaulted;
    bad input raises :class:`InputError` naming file, line and field.

    >>> import json, pathlib, tempfile
    >>> from ragtruth_spans import read_own_jsonl
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "mine.jsonl"
    >>> line = {"context": "The museum opened in 1999 in Lyon.", "response": "The museum opened in 1998.",
    ...         "spans": [{"start": 21, "end": 25}]}
    >>> _ = path.write_text(json.dumps(line) + "\\n", encoding="utf-8")
    >>> records, report = read_own_jsonl(path)
    >>> [records[0].response[s.start:s.end] for s in records[0].spans], records[0].task_type, records[0].id
    (['1998'], 'Summary', 'mine-1')
    >>> sorted(report.defaulted)
    ['id', 'model', 'question', 'source_id', 'split', 'task (Summary)']
    """
    path = Path(path)
    report = ImportReport(importer="jsonl", input_path=str(path))
    records: list[Record] = []
    first_line: dict[str, int] = {}
    with_split: list[int] = []
    without_split: list[int] = []
    for lineno, obj in iter_jsonl(path):
        report.input += 1
        record = _record(obj, path, lineno, report)
        if record.id in first_line:
            raise InputError(f"duplicate id {record.id!r} (first on line {first_line[record.id]})", path=path,
                             line=lineno, field="id")
        first_line[record.id] = lineno
        (with_split if record.split else without_split).append(lineno)
        records.append(record)
        if with_split and without_split:
            line = max(with_split[0], without_split[0])
            raise InputError(f"give split on every record or on none (line {with_split[0]} has one, line "
                             f"{without_split[0]} has none)", path=path, line=line, field="split")
    if not records:
        raise InputError("no records: the file is empty", path=path)
    group_by_context(records, report)
    return records, report


def group_by_context(records: list[Record], report: ImportReport) -> None:
    """Give each record without a ``source_id`` (``""``) the source of its context: the first ``source_id`` given
    to a record of the identical context, else the id of the first record of that context. So answers to one
    context never land in two splits unless the file's own ``source_id`` says so; records that joined another
    record's source are counted."""
    given: dict[str, str] = {}
    first: dict[str, str] = {}
    for record in records:
        key = stable_id(record.context, length=32)
        first.setdefault(key, record.id)
        if record.source_id:
            given.setdefault(key, record.source_id)
    joined = 0
    for record in records:
        if not record.source_id:
            key = stable_id(record.context, length=32)
            record.source_id = given.get(key, first[key])
            joined += record.source_id != record.id
    if joined:
        report.repair("records without source_id given the source of an identical context", joined)


def _record(obj: dict[str, Any], path: Path, line: int, report: ImportReport) -> Record:
    where: dict[str, Any] = {"path": path, "line": line}
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        raise InputError(f"unknown field (the format has: {', '.join(FIELDS)})", **where, field=unknown[0][:60])
    for key in ("context", "response", "spans"):
        if key not in obj:
            raise InputError("missing required field", **where, field=key)
    context = check_text(obj["context"], field="context", nonempty=True, **where)
    response = check_text(obj["response"], field="response", nonempty=True, **where)
    question = check_text(obj.get("question"), field="question", optional=True, **where)
    if question is None:
        report.default("question")
    if obj.get("task") is None:
        task = "QA" if question is not None else "Summary"
        report.default(f"task ({task})")
    else:
        task = check_text(obj["task"], field="task", **where)
        check_choice(task, TASK_TYPES, "task", field="task", **where)
    if obj.get("id") is None:
        record_id = f"{path.stem}-{line}"
        report.default("id")
    else:
        record_id = str(check_id(obj["id"], **where))
        if any(mark in record_id for mark in RESERVED_ID_MARKS):
            raise InputError(f"ids may not contain {' or '.join(map(repr, RESERVED_ID_MARKS))} (they mark "
                             "augmented and extra training records)", **where, field="id")
    if obj.get("source_id") is None:
        source_id = ""  # given by group_by_context once every record is read
        report.default("source_id")
    else:
        source_id = str(check_id(obj["source_id"], field="source_id", **where))
    if obj.get("model") is None:
        model = DEFAULT_MODEL
        report.default("model")
    else:
        model = check_text(obj["model"], field="model", nonempty=True, **where)
    split = ""
    if obj.get("split") is None:
        report.default("split")
    else:
        split = check_text(obj["split"], field="split", **where)
        check_choice(split, SPLITS, "split", field="split", **where)
    if not isinstance(obj["spans"], list):
        raise InputError("must be a list of {start, end, type?} objects ([] for none)", **where, field="spans")
    given = [_span(raw, response, where, f"spans[{i}]") for i, raw in enumerate(obj["spans"])]
    spans = canonical_spans(given)
    if len(spans) < len(given):
        report.repair("duplicate span merged", len(given) - len(spans))
    return Record(id=record_id, source_id=source_id, task_type=task, model=model, split=split, quality="good",
                  response=response, context=context, question=question, spans=spans)


def _span(raw: Any, response: str, where: dict[str, Any], name: str) -> Span:
    if not isinstance(raw, dict):
        raise InputError("a span must be an object {start, end, type?}", **where, field=name)
    unknown = sorted(set(raw) - set(SPAN_FIELDS))
    if unknown:
        raise InputError(f"unknown field (a span has: {', '.join(SPAN_FIELDS)})", **where,
                         field=f"{name}.{unknown[0][:60]}")
    for key in ("start", "end"):
        if key not in raw:
            raise InputError("missing required field", **where, field=f"{name}.{key}")
        if not isinstance(raw[key], int) or isinstance(raw[key], bool):
            raise InputError("must be an integer (a character offset into response)", **where,
                             field=f"{name}.{key}")
    start, end = raw["start"], raw["end"]
    if not 0 <= start < end <= len(response):
        raise InputError(f"[{start}, {end}) is not a non-empty span of the {len(response)}-character response "
                         "(offsets are characters, half-open)", **where, field=name)
    kind = check_text(raw.get("type"), field=f"{name}.type", optional=True, **where)
    if kind is not None:
        check_choice(kind, HALLUCINATION_TYPES, "span type", field=f"{name}.type", **where)
    text = check_text(raw.get("text"), field=f"{name}.text", optional=True, **where)
    if text is not None and text != response[start:end]:
        raise InputError(f"text {text[:40]!r} differs from response[{start}:{end}] = "
                         f"{response[start:end][:40]!r}", **where, field=f"{name}.text")
    return Span(start, end, kind, response[start:end])
