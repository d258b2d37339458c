"""What every importer shares (``ragtruth-spans import jsonl|summedits|xsum-hallucinations|expertqa``): the
report of what it read, repaired, skipped and defaulted, and the writer of the prepared directory.

The output is what ``prepare`` writes and ``train`` reads: ``OUT/{train,dev,test}.jsonl`` (prepared records,
:class:`~ragtruth_spans.core.types.Record`) and ``OUT/stats.json``. Splits are always by source
(:mod:`ragtruth_spans.data.splits`): records that all carry a ``split`` keep it; otherwise a seeded re-split by
source per task (``--split-by-source``, default :data:`DEFAULT_SPLIT`).

Accounting (checked before writing): ``input == written + sum(skipped)``. Every repair and every defaulted field
is counted by reason in ``stats.json`` and in the console summary.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_text, write_json, write_records
from ragtruth_spans.core.types import SPLITS, Record

DEFAULT_SPLIT: dict[str, float] = {"train": 0.7, "dev": 0.15, "test": 0.15}
"""The seeded re-split by source an import uses when its records carry no split."""


@dataclass
class ImportReport:
    """What an importer did. ``input``: the items it read (records, summaries, answers: ``unit`` names them);
    ``skipped``/``repaired``/``defaulted``: counts by reason or field; ``details``: the importer's own settings
    and counts (e.g. how annotators were combined)."""

    importer: str
    input_path: str
    unit: str = "records"
    input: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    repaired: Counter[str] = field(default_factory=Counter)
    defaulted: Counter[str] = field(default_factory=Counter)
    details: dict[str, Any] = field(default_factory=dict)

    def skip(self, reason: str, n: int = 1) -> None:
        self.skipped[reason] += n

    def repair(self, reason: str, n: int = 1) -> None:
        self.repaired[reason] += n

    def default(self, name: str, n: int = 1) -> None:
        self.defaulted[name] += n


def stable_id(*parts: str, length: int = 16) -> str:
    """A short deterministic id from ``parts`` (sha256 hex prefix), e.g. a source id for a question's text."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:length]


def read_csv_strict(path: str | Path, columns: Sequence[str], *, delimiter: str = ",",
                    quoting: int = csv.QUOTE_MINIMAL, multiline: bool = False
                    ) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line, row)`` for each row of a one-row-per-line CSV file with a header holding ``columns``, read strictly:
    bytes that are not UTF-8, a row with another number of fields than the header, a field over the csv module's
    size limit, and a quoted field that does not close on its own line (a stray ``"`` would otherwise swallow the
    rows after it) each raise one :class:`InputError` naming the file and line. Blank lines are not rows.
    ``delimiter="\\t", quoting=csv.QUOTE_NONE`` reads a plain TSV file, whose ``"`` are text (a tab inside a field
    then shows as a row with too many fields). ``multiline`` accepts a quoted field that holds line breaks (files
    whose texts span lines, e.g. FaithDial's audit); ``line`` is then the line the row starts on."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""), strict=True, delimiter=delimiter, quoting=quoting)
    header = _csv_row(reader, path, 0)
    if header is None:
        raise InputError("the file is empty (expected a header line)", path=path, line=1)
    missing = [c for c in columns if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", path=path, line=1)
    while True:
        start = reader.line_num + 1
        row = _csv_row(reader, path, start)
        if row is None:
            return
        if reader.line_num != start and not multiline:
            raise InputError(f"a quoted field runs from this line to line {reader.line_num} (a stray '\"'?): "
                             "a row must fit on one line", path=path, line=start)
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(f"{len(row)} fields where the header has {len(header)}", path=path, line=start)
        yield start, dict(zip(header, row))


def _csv_row(reader: Any, path: str | Path, start: int) -> list[str] | None:
    """The next row of ``reader`` (None at the end); a csv error becomes an :class:`InputError` naming the line the
    row started on."""
    try:
        return next(reader)
    except StopIteration:
        return None
    except csv.Error as exc:
        if "field limit" in str(exc):
            message = f"a field longer than the csv module's limit of {csv.field_size_limit()} characters"
        else:
            message = f"malformed CSV: {exc}"
        raise InputError(f"{message} (a stray '\"' opens a field that swallows the rows after it?)", path=path,
                         line=max(start, 1)) from None


def write_prepared(out_dir: str | Path, records: Sequence[Record], report: ImportReport, *,
                   split_spec: Mapping[str, float] | None = None, seed: int = 0) -> dict[str, Any]:
    """Split ``records`` by source and write the prepared directory ``out_dir`` (``{train,dev,test}.jsonl`` and
    ``stats.json``) whole, through :func:`~ragtruth_spans.data.prepare.prepared_output` (checked, locked, built
    beside and swapped in; ``report.input_path`` is an input it may not replace); return the stats written. The
    command line checks and locks the output before reading the input (:func:`write_splits` inside
    ``prepared_output``).

    >>> import json, pathlib, tempfile
    >>> from ragtruth_spans import read_own_jsonl, write_prepared
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> lines = [{"context": f"Hotel {i} opened in {1990 + i}.", "response": f"It opened in {1980 + i}.",
    ...           "spans": [{"start": 13, "end": 17}]} for i in range(10)]  # ten sources, one response each
    >>> _ = (folder / "mine.jsonl").write_text("".join(json.dumps(x) + "\\n" for x in lines), encoding="utf-8")
    >>> stats = write_prepared(folder / "data", *read_own_jsonl(folder / "mine.jsonl"))
    >>> sorted(p.name for p in (folder / "data").iterdir())
    ['dev.jsonl', 'stats.json', 'test.jsonl', 'train.jsonl']
    >>> {split: figures["sources"] for split, figures in stats["splits"].items()}  # split by source, seeded
    {'train': 7, 'dev': 1, 'test': 2}
    """
    from ragtruth_spans.data.prepare import prepared_output

    with prepared_output(out_dir, field=None, inputs=[("input", report.input_path)]) as building:
        return write_splits(building, records, report, split_spec=split_spec, seed=seed, out_dir=out_dir)


def write_splits(building: Path, records: Sequence[Record], report: ImportReport, *,
                 split_spec: Mapping[str, float] | None = None, seed: int = 0,
                 out_dir: str | Path | None = None) -> dict[str, Any]:
    """Split ``records`` by source and write ``building/{train,dev,test}.jsonl`` and ``stats.json`` (which names
    ``out_dir``, where the folder goes); return the stats written. Records that all carry a split keep it
    (``split_spec`` must then be None); otherwise the seeded re-split ``split_spec`` (default
    :data:`DEFAULT_SPLIT`) assigns every source. An empty split is a warning in the stats, not an error."""
    from ragtruth_spans.data.prepare import SplitStats
    from ragtruth_spans.data.splits import assign_splits

    out = Path(out_dir if out_dir is not None else building)
    if not records:
        raise InputError(f"no {report.unit} left to write (read {report.input}; skipped: "
                         f"{dict(report.skipped) or 'none'})", path=report.input_path)
    warnings: list[str] = []
    given = bool(records) and all(r.split in SPLITS for r in records) and report.defaulted.get("split", 0) == 0
    if given and split_spec is not None:
        raise InputError("the records carry their own split; drop --split-by-source (or the records' split)",
                         field="--split-by-source")
    if given:
        by_split = {name: [r for r in records if r.split == name] for name in SPLITS}
        shared = {r.source_id for r in by_split["train"]} & {r.source_id for rs in (by_split["dev"], by_split["test"])
                                                              for r in rs}
        shared |= {r.source_id for r in by_split["dev"]} & {r.source_id for r in by_split["test"]}
        if shared:
            warnings.append(f"{len(shared)} source(s) have records in two splits (the records' own split was kept)")
        spec: dict[str, float] | None = None
    else:
        spec = dict(split_spec or DEFAULT_SPLIT)
        by_split, _, _ = assign_splits(list(records), dev_per_task=0, seed=seed, split_spec=spec, warnings=warnings)
    for name in SPLITS:
        write_records(building / f"{name}.jsonl", by_split[name])
        if not by_split[name]:
            warnings.append(f"split '{name}' has no records ({name}.jsonl is empty)")
    written = sum(len(rs) for rs in by_split.values())
    if report.input != written + sum(report.skipped.values()):
        raise RuntimeError(f"{report.importer}: counts do not add up (input {report.input} != written {written} "
                           f"+ skipped {sum(report.skipped.values())})")
    stats = {
        "importer": report.importer, "input_path": report.input_path, "out_dir": str(out), "unit": report.unit,
        "seed": seed, "split_by_source": spec, "split_given": given,
        "input": report.input, "written": written, "skipped": dict(sorted(report.skipped.items())),
        "repaired": dict(sorted(report.repaired.items())), "defaulted": dict(sorted(report.defaulted.items())),
        "splits": {name: vars(SplitStats.of(by_split[name])) for name in SPLITS},
        "spans": {"written": sum(len(r.spans) for rs in by_split.values() for r in rs),
                  "by_type": dict(sorted(Counter(str(s.type) for rs in by_split.values() for r in rs
                                                 for s in r.spans).items()))},
        "details": report.details, "warnings": warnings,
    }
    write_json(building / "stats.json", stats)
    return stats
