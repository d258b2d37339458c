"""``ragtruth-spans prepare``: RAGTruth directory → ``OUT/{train,dev,test}.jsonl`` + ``OUT/stats.json``.

Splits (:mod:`ragtruth_spans.data.splits`, always by source): RAGTruth's ``test`` stays ``test`` and ``dev``
takes ``dev_per_task`` train sources per task, or, with ``split_by_source``, every record is re-split by source
with seeded shares or counts per task. A split with no records is a warning, not an error.

Quality filter: responses whose ``quality`` is not in ``keep_quality`` are dropped and counted (``None`` keeps
all). Label checking, repair, duplicates and overlaps: see :mod:`ragtruth_spans.data.ragtruth`.

Counts add up (checked before writing): ``responses.input == sum(split responses) + responses.filtered`` and
``labels.spans == sum(split spans) + labels.spans_in_filtered_responses``.
"""

from __future__ import annotations

import warnings as pywarnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.directories import replace_directory
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_json, write_records
from ragtruth_spans.core.types import HALLUCINATION_TYPES, SPLITS, TASK_TYPES, Record
from ragtruth_spans.data.ragtruth import convert_ragtruth, normalize_quality, resolve_files
from ragtruth_spans.data.splits import assign_splits

PREPARED_FILES = (*(f"{split}.jsonl" for split in SPLITS), "stats.json")
"""What a prepared directory holds (``prepare``, ``import``): an existing output folder holding anything else is
refused, never replaced."""


@dataclass
class SplitStats:
    """Counts of one written split file."""

    responses: int = 0
    sources: int = 0
    hallucinated_responses: int = 0
    spans: int = 0
    by_task: dict[str, dict[str, int]] = field(default_factory=dict)
    by_type: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Sequence[Record]) -> SplitStats:
        by_task = {}
        for task in TASK_TYPES:
            rs = [r for r in records if r.task_type == task]
            by_task[task] = {"responses": len(rs), "hallucinated_responses": sum(r.hallucinated for r in rs),
                             "spans": sum(len(r.spans) for r in rs)}
        types = Counter(s.type for r in records for s in r.spans)
        return cls(responses=len(records), sources=len({r.source_id for r in records}),
                   hallucinated_responses=sum(r.hallucinated for r in records),
                   spans=sum(len(r.spans) for r in records), by_task=by_task,
                   by_type={t: types.get(t, 0) for t in HALLUCINATION_TYPES})


@dataclass
class PrepareStats:
    """Everything ``prepare`` did; ``to_dict()`` is what ``stats.json`` holds (and what the console summary,
    :func:`ragtruth_spans.reporting.data_tables.prepare_summary`, shows)."""

    ragtruth_dir: str
    out_dir: str
    seed: int
    dev_per_task: int
    keep_quality: list[str] | None
    input_responses: int
    input_sources: int
    quality_counts: dict[str, int]
    filtered: dict[str, int]
    filtered_by_split: dict[str, int]
    splits: dict[str, SplitStats]
    dev_source_ids: dict[str, list[str]]
    split_source_ids: dict[str, list[str]] | None
    split_by_source: dict[str, float] | None
    labels: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ragtruth_dir": self.ragtruth_dir,
            "out_dir": self.out_dir,
            "seed": self.seed,
            "dev_per_task": self.dev_per_task,
            "keep_quality": self.keep_quality if self.keep_quality is not None else "all",
            "responses": {
                "input": self.input_responses,
                "written": sum(s.responses for s in self.splits.values()),
                "filtered": sum(self.filtered.values()),
                "quality_counts": self.quality_counts,
                "filtered_by_quality": self.filtered,
                "filtered_by_split": self.filtered_by_split,
            },
            "sources": {"input": self.input_sources},
            "splits": {name: vars(s) for name, s in self.splits.items()},
            "dev_source_ids": self.dev_source_ids,
            "split_by_source": self.split_by_source,
            "split_source_ids": self.split_source_ids,
            "labels": self.labels,
            "warnings": self.warnings,
        }


def prepare(ragtruth_dir: str | Path, out_dir: str | Path, *, dev_per_task: int = 50, seed: int = 0,
            keep_quality: Sequence[str] | None = ("good",),
            split_by_source: Mapping[str, float] | None = None) -> PrepareStats:
    """Convert, filter and split a RAGTruth directory; write ``out_dir/{train,dev,test}.jsonl`` and ``stats.json``.

    ``split_by_source`` (e.g. ``{"train": 0.7, "dev": 0.1, "test": 0.2}``) re-splits every kept record by source
    instead of using RAGTruth's split (:mod:`ragtruth_spans.data.splits`). Returns the :class:`PrepareStats` also
    written to ``stats.json``. Raises :class:`InputError` on malformed input, a directory without responses, an
    output refused by :func:`prepared_output` (checked before any input is read), or a negative ``dev_per_task``.
    The directory is swapped in whole: a failure leaves the previous one as it was. An empty split (or a task
    whose train sources all went to dev) is not an error: it is listed in ``stats.warnings`` and emitted as a
    :class:`UserWarning`.
    """
    if dev_per_task < 0:
        raise InputError(f"must be >= 0, got {dev_per_task}", field="dev_per_task")
    quality = normalize_quality(keep_quality)
    response_path, source_path = resolve_files(ragtruth_dir)
    inputs = [("--ragtruth-dir", ragtruth_dir), ("--ragtruth-dir", response_path),
              ("--ragtruth-dir", source_path)]
    with prepared_output(out_dir, field="--out", inputs=inputs) as building:  # the output policy, before any work
        records, report = convert_ragtruth(ragtruth_dir)
        if not records:
            raise InputError("no responses: the file is empty", path=response_path)
        stats = _split_and_write(building, records, report, quality=quality, dev_per_task=dev_per_task, seed=seed,
                                 split_by_source=split_by_source)
        stats.ragtruth_dir, stats.out_dir = str(response_path.parent), str(out_dir)
        write_json(building / "stats.json", stats.to_dict())
    for message in stats.warnings:
        pywarnings.warn(message, UserWarning, stacklevel=2)
    return stats


def _split_and_write(building: Path, records: list[Record], report: Any, *, quality: Sequence[str] | None,
                     dev_per_task: int, seed: int, split_by_source: Mapping[str, float] | None) -> PrepareStats:
    """Filter by quality, split and write ``building/{train,dev,test}.jsonl``; the stats (accounting checked),
    ``ragtruth_dir``/``out_dir`` left for the caller to name."""
    kept = [r for r in records if quality is None or r.quality in quality]
    dropped = [r for r in records if not (quality is None or r.quality in quality)]
    warnings: list[str] = []
    by_split, dev_ids, split_ids = assign_splits(kept, dev_per_task=dev_per_task, seed=seed,
                                                 split_spec=split_by_source, warnings=warnings)
    for name in SPLITS:
        write_records(building / f"{name}.jsonl", by_split[name])
        if not by_split[name]:
            hint = ("; if every response carries one RAGTruth split (e.g. a slice of its test split), re-split them "
                    "by source: --split-by-source train=0.7,dev=0.1,test=0.2"
                    if name == "train" and split_by_source is None else "")
            warnings.append(f"split '{name}' has no records ({name}.jsonl is empty){hint}")
    labels = report.to_dict()
    labels["spans_written"] = sum(len(r.spans) for rs in by_split.values() for r in rs)
    labels["spans_in_filtered_responses"] = sum(len(r.spans) for r in dropped)
    labels["implicit_true_written"] = sum(s.implicit_true for rs in by_split.values() for r in rs for s in r.spans)
    labels["due_to_null_written"] = sum(s.due_to_null for rs in by_split.values() for r in rs for s in r.spans)
    stats = PrepareStats(
        ragtruth_dir="", out_dir="", seed=seed, dev_per_task=dev_per_task,
        keep_quality=list(quality) if quality is not None else None,
        input_responses=len(records), input_sources=len({r.source_id for r in records}),
        quality_counts=dict(sorted(Counter(r.quality for r in records).items())),
        filtered=dict(sorted(Counter(r.quality for r in dropped).items())),
        filtered_by_split={s: sum(r.split == s for r in dropped) for s in ("train", "test")},
        splits={name: SplitStats.of(by_split[name]) for name in SPLITS},
        dev_source_ids=dev_ids, split_source_ids=split_ids,
        split_by_source=dict(split_by_source) if split_by_source else None,
        labels=labels, warnings=warnings,
    )
    _check_accounting(stats)
    return stats


def prepared_output(out_dir: str | Path, *, field: str | None = "--out",
                    inputs: Iterable[tuple[str, str | Path | None]] = ()) -> AbstractContextManager[Path]:
    """The one way a prepared directory is written (``prepare``, every ``import``): the output checked before any
    input is read, locked, built beside and swapped in whole (:func:`~ragtruth_spans.core.directories.
    replace_directory`); an existing folder is replaced only when it holds nothing but :data:`PREPARED_FILES`."""
    return replace_directory(out_dir, field=field, inputs=inputs, writes=PREPARED_FILES)


def _check_accounting(stats: PrepareStats) -> None:
    """The identities the summary promises; a failure here is a bug in this module, not bad input."""
    d = stats.to_dict()
    resp, lab = d["responses"], d["labels"]
    identities = {
        "responses.input == written + filtered": resp["input"] == resp["written"] + resp["filtered"],
        "labels.input == exact + repaired + unrepairable":
            lab["input"] == lab["exact"] + lab["repaired"] + lab["unrepairable"],
        "labels.spans == exact + repaired - duplicates_removed":
            lab["spans"] == lab["exact"] + lab["repaired"] - lab["duplicates_removed"],
        "labels.spans == spans_written + spans_in_filtered_responses":
            lab["spans"] == lab["spans_written"] + lab["spans_in_filtered_responses"],
    }
    broken = [name for name, ok in identities.items() if not ok]
    if broken:
        raise RuntimeError(f"prepare: counts do not add up ({'; '.join(broken)})")
