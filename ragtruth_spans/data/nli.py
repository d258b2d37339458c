"""``ragtruth-spans import nli``: the labelled NLI sets of an NLI directory (``../shared/data/external/nli``, one
folder per set, each in its original format) → one prepared NLI directory: ``{train,dev,test}.jsonl`` of pairs
(:class:`~ragtruth_spans.data.nli_pairs.NliPair`) and ``stats.json``.

Readers: :mod:`ragtruth_spans.data.nli_sets`. Duplicates across sets: :func:`~ragtruth_spans.data.nli_pairs.
remove_duplicates`. Accounting (checked before writing): ``input == written + skipped + duplicates``, per set and
in all. ``stats.json`` holds the counts per source × split × label, what was skipped, repaired and dropped as a
duplicate by set and reason, and the SHA-256 of every file read.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_json, write_jsonl
from ragtruth_spans.data.imported import ImportReport
from ragtruth_spans.data.nli_pairs import NLI_LABELS, NLI_SPLITS, NliPair, premise_overlap, remove_duplicates
from ragtruth_spans.data.nli_sets import SET_READERS

logger = logging.getLogger(__name__)


def parse_only(value: str | None) -> list[str]:
    """The sets ``--only`` picks (``"snli,cad"``), in :data:`~ragtruth_spans.data.nli_sets.SET_READERS` order;
    every set when ``value`` is None; an unknown or empty name is an :class:`InputError`."""
    if value is None:
        return list(SET_READERS)
    names = [name.strip() for name in value.split(",")]
    unknown = [name for name in names if name not in SET_READERS]
    if unknown or not names:
        raise InputError(f"unknown set {unknown[0] if unknown else ''!r} (known: {', '.join(SET_READERS)})",
                         field="--only")
    return [name for name in SET_READERS if name in names]


def set_folders(nli_dir: str | Path, sets: Sequence[str]) -> dict[str, Path]:
    """``{set: its folder}`` of the picked ``sets``; the NLI directory or a picked set's folder missing is an
    :class:`InputError` (a set not picked may be absent)."""
    root = Path(nli_dir)
    if not root.is_dir():
        raise InputError("not a folder (the NLI directory: one folder per set, README in docs/DATA.md)", path=root,
                         field="--nli-dir")
    folders = {name: root / SET_READERS[name][0] for name in sets}
    for name, folder in folders.items():
        if not folder.is_dir():
            raise InputError(f"no folder for the set {name!r} (expected {SET_READERS[name][0]}/; pick the sets "
                             "present with --only)", path=folder, field="--nli-dir")
    return folders


def read_nli(nli_dir: str | Path, sets: Sequence[str] | None = None) -> tuple[list[NliPair], dict[str, Any]]:
    """Read the picked ``sets`` (default: all; read in :data:`~ragtruth_spans.data.nli_sets.SET_READERS` order
    whatever order they are given in) of ``nli_dir`` and remove duplicates; ``(pairs, stats)`` (the stats that
    :func:`write_nli` writes, accounting checked)."""
    picked = [name for name in SET_READERS if sets is None or name in sets]  # the order ties are resolved in
    unknown = sorted(set(sets or ()) - set(SET_READERS))
    if unknown:
        raise InputError(f"unknown set {unknown[0]!r} (known: {', '.join(SET_READERS)})", field="--only")
    folders = set_folders(nli_dir, picked)
    pairs: list[NliPair] = []
    reports: dict[str, ImportReport] = {}
    for name, folder in folders.items():
        found, reports[name] = SET_READERS[name][1](folder)
        logger.info("%s: %d pairs from %s", name, len(found), folder)
        pairs.extend(found)
    kept, duplicates = remove_duplicates(pairs)
    return kept, _stats(nli_dir, kept, reports, duplicates, premise_overlap(kept))


def _stats(nli_dir: str | Path, kept: Sequence[NliPair], reports: dict[str, ImportReport],
           duplicates: dict[str, Counter[str]], overlap: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The stats of an import (module docstring); a count that does not add up is a bug (``RuntimeError``)."""
    written = Counter(p.source for p in kept)
    by_set: dict[str, Any] = {}
    for name, report in reports.items():
        dropped = duplicates.get(name, Counter())
        entry = {"input": report.input, "written": written[name], "skipped": dict(sorted(report.skipped.items())),
                 "duplicates": dict(sorted(dropped.items())), "repaired": dict(sorted(report.repaired.items())),
                 "folder": SET_READERS[name][0], **report.details}
        if report.input != written[name] + sum(report.skipped.values()) + sum(dropped.values()):
            raise RuntimeError(f"import nli: counts of {name} do not add up ({entry})")
        by_set[name] = entry
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for pair in kept:
        labels = counts.setdefault(pair.source, {}).setdefault(pair.split, {})
        labels[pair.label] = labels.get(pair.label, 0) + 1
    for source in counts.values():
        for split, labels in source.items():
            source[split] = {label: labels[label] for label in NLI_LABELS if label in labels}
    return {
        "importer": "nli", "nli_dir": str(nli_dir), "sets": list(reports), "labels": list(NLI_LABELS),
        "input": sum(r.input for r in reports.values()), "written": len(kept),
        "skipped": sum(sum(r.skipped.values()) for r in reports.values()),
        "duplicates": sum(sum(c.values()) for c in duplicates.values()),
        "splits": {split: sum(p.split == split for p in kept) for split in NLI_SPLITS},
        "counts": {name: {split: counts[name][split] for split in NLI_SPLITS if split in counts.get(name, {})}
                   for name in reports},
        "binary_sources": sorted({p.source for p in kept if p.binary}),
        "dev_test_premises_in_train": overlap, "by_set": by_set,
    }


def write_nli(building: Path, pairs: Sequence[NliPair], stats: dict[str, Any], out_dir: str | Path) -> None:
    """Write ``building/{train,dev,test}.jsonl`` (pairs in their order) and ``stats.json`` (naming ``out_dir``,
    where the folder goes); no pair at all is an :class:`InputError`."""
    if not pairs:
        raise InputError(f"no pairs left to write (read {stats['input']}, skipped {stats['skipped']}, "
                         f"duplicates {stats['duplicates']})", path=stats["nli_dir"])
    for split in NLI_SPLITS:
        write_jsonl(building / f"{split}.jsonl", (p.to_dict() for p in pairs if p.split == split))
    write_json(building / "stats.json", {**stats, "out_dir": str(out_dir)})


def import_nli(nli_dir: str | Path, out_dir: str | Path, sets: Sequence[str] | None = None) -> dict[str, Any]:
    """Read, deduplicate and write the prepared NLI directory ``out_dir`` whole (checked and locked before any
    input is read, built beside and swapped in: :func:`~ragtruth_spans.data.prepare.prepared_output`); return
    the stats written."""
    from ragtruth_spans.data.prepare import prepared_output

    with prepared_output(out_dir, field="--out", inputs=[("--nli-dir", nli_dir)]) as building:
        pairs, stats = read_nli(nli_dir, sets)
        write_nli(building, pairs, stats, out_dir)
    return {**stats, "out_dir": str(out_dir)}
