"""``ragtruth-spans import begin``: BEGIN (Dziri et al., TACL 2022; CC BY 4.0 / CDLA-Sharing-1.0) → prepared records.

Input: a folder holding BEGIN's ``begin_<split>_<dataset>.tsv`` files (google/BEGIN-dataset, found in the folder
and its subfolders: ``cmu-dog/``, ``topicalchat/``, ``wow/``): tab-separated, one response per line, a header of
``model_name, data_source, knowledge, message, response, begin_label``. The files are plain TSV: a ``"`` is text,
never a quote (a tab inside a field shows as a line with too many fields and is refused).

Records: context = ``knowledge`` (the snippet the response should be grounded in), question = ``message`` (the
previous turn; an empty one is ``None``, counted as defaulted), response = ``response``, task ``QA`` (a reply to a
turn from a passage: the nearest of the three tasks), model ``begin/<model_name>``, source = the snippet
(``begin-<data_source>-<sha256>``), so responses grounded in one snippet stay on one side of a split.

Labels are per response, without offsets (each stripped of the stray whitespace the files carry; any other label is
refused, naming file, line and field):

- ``Fully attributable``: no span (every word supported);
- ``Not fully attributable``: :attr:`~ragtruth_spans.core.types.Record.unlocated` (hallucinated somewhere, no
  words marked; no span is invented: what such a label teaches a word model is the trainer's choice,
  ``data.extra[k].unlocated``);
- ``Generic`` (a response that makes no claim to attribute, "I love that movie!"): skipped and counted.

Skipped and counted as well: an empty knowledge snippet or response, and a line that repeats an earlier one's
snippet, turn and response (the second is dropped). BEGIN's own dev/test division is not kept: the records are
re-split by source like any import (every file's counts are in ``details``).
"""

from __future__ import annotations

import csv
import logging
import re
from pathlib import Path

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.fields import check_text, is_blank
from ragtruth_spans.core.types import Record
from ragtruth_spans.data.imported import ImportReport, read_csv_strict, stable_id

logger = logging.getLogger(__name__)

COLUMNS: tuple[str, ...] = ("model_name", "data_source", "knowledge", "message", "response", "begin_label")
LABELS: dict[str, bool | None] = {"Fully attributable": False, "Not fully attributable": True, "Generic": None}
"""BEGIN's labels: hallucinated (unlocated) or not; ``None``: skipped (a generic response)."""
DATA_SOURCES: tuple[str, ...] = ("wow", "cmu", "tc")
"""The dialogue sets BEGIN's responses were generated for (Wizard of Wikipedia, CMU-DoG, Topical-Chat)."""
FILE_NAME = re.compile(r"begin_(?P<split>[a-z]+)_(?P<set>[a-z]+)\.tsv")


def read_begin(folder: str | Path) -> tuple[list[Record], ImportReport]:
    """Every response of the ``begin_*.tsv`` files under ``folder`` (sorted by path) as a record, and the report.

    Args:
        folder: BEGIN's data folder (or one subset's folder).

    Returns:
        ``(records, report)``: the records carry no split (:func:`~ragtruth_spans.data.imported.write_splits`
        re-splits them by source).

    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> rows = ["\\t".join(COLUMNS), "t5\\twow\\tThe tower is 300 m tall.\\tHow tall?\\tIt is 300 m tall.\\t"
    ...         "Fully attributable", "gpt2\\twow\\tThe tower is 300 m tall.\\tHow tall?\\tIt was built in 1889."
    ...         "\\tNot fully attributable "]
    >>> _ = (folder / "begin_dev_wow.tsv").write_text("\\n".join(rows) + "\\n", encoding="utf-8")
    >>> records, report = read_begin(folder)
    >>> [(r.model, r.spans, r.unlocated) for r in records]
    [('begin/t5', [], False), ('begin/gpt2', [], True)]
    """
    folder = Path(folder)
    files = sorted(folder.rglob("begin_*.tsv")) if folder.is_dir() else []
    if not files:
        raise InputError("no begin_<split>_<set>.tsv file here or below (BEGIN's data folder)", path=folder)
    report = ImportReport(importer="begin", input_path=str(folder), unit="responses")
    report.details = {"files": {}, "labels": {}}
    records: list[Record] = []
    seen: set[str] = set()
    for path in files:
        name = FILE_NAME.fullmatch(path.name)
        if name is None:
            raise InputError("expected a name begin_<split>_<set>.tsv (e.g. begin_dev_wow.tsv)", path=path)
        counts = report.details["files"].setdefault(str(path.relative_to(folder)), {"lines": 0, "written": 0})
        for line, row in read_csv_strict(path, COLUMNS, delimiter="\t", quoting=csv.QUOTE_NONE):
            report.input += 1
            counts["lines"] += 1
            record = _record(row, path, line, name["split"], report, seen)
            if record is not None:
                records.append(record)
                counts["written"] += 1
    logger.info("begin: %d responses read, %d written", report.input, len(records))
    return records, report


def _record(row: dict[str, str], path: Path, line: int, split: str, report: ImportReport,
            seen: set[str]) -> Record | None:
    """The record of one TSV row (None: skipped and counted in ``report``); a bad field is an InputError."""
    where = {"path": path, "line": line}
    label = row["begin_label"].strip()
    check_choice(label, LABELS, "BEGIN label", **where, field="begin_label")
    source = row["data_source"].strip()
    check_choice(source, DATA_SOURCES, "data source", **where, field="data_source")
    model = row["model_name"].strip()
    if not model:
        raise InputError("empty model name", **where, field="model_name")
    knowledge, message, response = (check_text(row[key], field=key, **where)
                                    for key in ("knowledge", "message", "response"))
    labels = report.details["labels"]
    labels[label] = labels.get(label, 0) + 1
    hallucinated = LABELS[label]
    if hallucinated is None:
        report.skip("generic response (no claim to attribute)")
        return None
    if is_blank(knowledge) or is_blank(response):
        report.skip("empty knowledge or response")
        return None
    key = stable_id(knowledge, message, response, length=32)
    if key in seen:
        report.skip("repeats an earlier line's knowledge, message and response")
        return None
    seen.add(key)
    if not message.strip():
        report.default("question (empty message)")
    return Record(id=f"begin-{split}-{source}-{line}", source_id=f"begin-{source}-{stable_id(knowledge)}",
                  task_type="QA", model=f"begin/{model}", split="", quality="good", response=response,
                  context=knowledge, question=message if message.strip() else None, unlocated=hallucinated)
