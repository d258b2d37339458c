"""The records a recipe trains on, as every family reads them: which file, which tasks, how many clean ones,
and the extra training-only sources of ``data.extra``.

Every record that is left out is counted in :class:`RecordStats` (and written into the run's ``run_info.json``).

**Origins.** A training record is ``real`` (from ``data.prepared_dir``), ``augmented`` (made by ``data.augment``
from a real one; id ``<id>#aug-<kind>``) or ``extra`` (from ``data.extra[k]``; id ``<id>#extra-<k>``, source id
``extra-<k>:<source_id>`` so that no extra source shares an id with a real one). :func:`record_origin` tells them
apart and :func:`record_weight` gives a record's weight (``data.extra[k].weight`` for extra records, 1 otherwise).
Extra records are appended after augmentation (they are never augmented) and only by
:func:`selected_training_records`; a family whose decisions (thresholds, out-of-fold tuning) run on the training
records must leave the ``extra`` ones out of them. Families that do not declare they use extra sources
(:attr:`ragtruth_spans.detectors.family.Family.extra_sources`) refuse a recipe with ``data.extra``.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.text import normal_record
from ragtruth_spans.core.types import Record
from ragtruth_spans.training.data_recipe import SAMPLE, DataSection


@dataclass
class RecordStats:
    """What happened to the records before they became training examples (every drop is counted).
    Families subclass it to add their own counts (e.g. shortened contexts, windows)."""

    records: int = 0
    other_tasks: int = 0
    with_spans: int = 0
    clean: int = 0
    clean_kept: int = 0
    over_max_examples: int = 0
    examples: int = 0
    augmented: dict[str, dict[str, int]] = field(default_factory=dict)
    extra: list[dict[str, Any]] = field(default_factory=list)
    """One entry per ``data.extra`` source: ``dir``, ``files``, ``records`` read, ``other_tasks`` left out,
    ``kept``, ``with_spans``, ``weight``, and ``unlocated`` (response-level labels without spans) when any."""
    unlocated_left_out: int = 0
    """Training records labelled hallucinated without spans that a family of word labels only left out."""
    synth: dict[str, Any] = field(default_factory=dict)
    """What ``data.synth`` generated: ``made`` per edit kind, ``faithful`` transforms, ``skipped`` edits,
    ``documents``, ``records``."""

    def by_origin(self) -> dict[str, int]:
        """Training records by origin: ``real`` (after task/clean/max filters), ``augmented`` (generated ones
        included), ``extra``."""
        augmented = sum((self.augmented.get("made") or {}).values()) + int(self.synth.get("records", 0))
        extra = sum(int(e.get("kept", 0)) for e in self.extra)
        real = self.records - self.other_tasks - (self.clean - self.clean_kept) - self.over_max_examples
        return {"real": real, "augmented": augmented, "extra": extra}


def split_file(data: DataSection, split: str) -> Path | None:
    """``<prepared_dir>/<split>.jsonl``, or None for the embedded sample (read on the fly)."""
    return None if data.prepared_dir == SAMPLE else Path(data.prepared_dir) / f"{split}.jsonl"


def training_file(data: DataSection) -> Path | None:
    """The prepared file a recipe trains on (None for the embedded sample)."""
    return split_file(data, data.split)


def load_split(data: DataSection, split: str, *, field: str = "data.split") -> tuple[list[Record], str]:
    """The records of one split and a description of where they came from: ``<prepared_dir>/<split>.jsonl``
    written by ``ragtruth-spans prepare``, or, with ``prepared_dir: sample``, the embedded sample's RAGTruth split
    (``train`` or ``test``; it has no dev split), every text in NFC with its gold spans moved onto it
    (:func:`~ragtruth_spans.core.text.normal_record`: training reads the text detection reads). ``field``: the
    recipe field that named ``split`` (for errors)."""
    path = split_file(data, split)
    if path is None:
        from ragtruth_spans.data.ragtruth import RAGTRUTH_SPLITS, load_ragtruth, sample_data_dir

        if split not in RAGTRUTH_SPLITS:
            raise InputError(f"the embedded sample has the splits {' and '.join(RAGTRUTH_SPLITS)}, not {split!r} "
                             "(prepare it with `ragtruth-spans prepare --sample` for a dev split)",
                             field=field)
        records, source = load_ragtruth(sample_data_dir(), split=split), f"embedded sample ({sample_data_dir()})"
        return [normal_record(r) for r in records], f"{source}, split {split}"
    return [normal_record(r) for r in read_records(path)], str(path)


def load_training_records(data: DataSection) -> tuple[list[Record], str]:
    """The records to train on (``data.split``) and a description of where they came from."""
    return load_split(data, data.split)


def load_eval_records(data: DataSection) -> tuple[list[Record], str] | None:
    """The records evaluated during training (``data.eval_split``), or None when the recipe names none."""
    return None if data.eval_split is None else load_split(data, data.eval_split, field="data.eval_split")


EXTRA_ID = "#extra-"
EXTRA_SOURCE = "extra-"
ORIGINS: tuple[str, ...] = ("real", "augmented", "extra")


def extra_index(record: Record) -> int | None:
    """``k`` of a record from ``data.extra[k]`` (its id ends in ``#extra-<k>``), None for any other record."""
    head, sep, tail = record.id.rpartition(EXTRA_ID)
    return int(tail) if sep and head and tail.isdigit() else None


def record_origin(record: Record) -> str:
    """``"real"``, ``"augmented"`` or ``"extra"`` (module docstring)."""
    from ragtruth_spans.data.augment import is_augmented

    if extra_index(record) is not None:
        return "extra"
    return "augmented" if is_augmented(record) else "real"


def record_weight(record: Record, data: DataSection) -> float:
    """The training weight of ``record``: ``data.extra[k].weight`` for a record of extra source ``k``,
    ``data.synth.weight`` for a generated one, else 1."""
    from ragtruth_spans.data.synth import is_generated

    k = extra_index(record)
    if k is not None and k < len(data.extra):
        return data.extra[k].weight
    return data.synth.weight if data.synth is not None and is_generated(record) else 1.0


def unlocated_words(record: Record, data: DataSection) -> str:
    """What ``record``'s response-level label without spans teaches a word model: its extra source's
    ``unlocated_words`` (``left_out`` for a record of no extra source).

    >>> from ragtruth_spans.training.recipe import DataSection
    >>> data = DataSection(extra=[{"dir": "begin", "unlocated_words": "absent"}])
    >>> record = Record("r#extra-0", "s", "QA", "m", "train", "good", "It rained.", "Sunny.", unlocated=True)
    >>> unlocated_words(record, data)
    'absent'
    """
    k = extra_index(record)
    return data.extra[k].unlocated_words if k is not None and k < len(data.extra) else "left_out"


def extra_files(data: DataSection) -> list[Path]:
    """Every file ``data.extra`` reads, in order (what the run's fingerprint hashes)."""
    return [Path(source.dir) / f"{split}.jsonl" for source in data.extra for split in source.splits]


def synth_files(data: DataSection) -> list[Path]:
    """Every file ``data.synth`` reads contexts from, in order (what the run's fingerprint hashes)."""
    if data.synth is None:
        return []
    splits = ["train", "dev"] if data.synth.eval_count else ["train"]
    return [Path(d) / f"{split}.jsonl" for d in data.synth.documents for split in splits]


def synth_records(data: DataSection, own: Sequence[Record], split: str, count: int, stats: RecordStats
                  ) -> list[Record]:
    """``count`` records generated (:mod:`ragtruth_spans.data.synth`) from the contexts of ``own`` and of each
    ``data.synth.documents`` directory's ``split`` file (labels never read), seeded by ``data.synth.seed`` (+1
    for the eval split); the counts go to ``stats.synth``. A missing file is an :class:`InputError` naming the
    recipe field."""
    from ragtruth_spans.data import synth

    assert data.synth is not None
    docs = synth.documents(own, "prepared")
    for k, directory in enumerate(data.synth.documents):
        path = Path(directory) / f"{split}.jsonl"
        if not path.is_file():
            raise InputError(f"no such file: {path} (data.synth.documents[{k}] is read for its {split} split)",
                             field=f"data.synth.documents[{k}]")
        docs += synth.documents([normal_record(r) for r in read_records(path) if r.task_type in data.tasks],
                                str(directory))
    seed = data.synth.seed + (0 if split == "train" else 1)
    made, counts = synth.generate(docs, count, seed=seed, kinds=data.synth.kinds,
                                  edited_share=data.synth.edited_share, split=split,
                                  aligned_share=data.synth.aligned_share)
    stats.synth = counts.to_dict() | {"documents": len(docs), "records": len(made)}
    return made


def load_extra_records(data: DataSection, stats: RecordStats,
                       held: Sequence[tuple[str, Sequence[Record]]] = ()) -> list[Record]:
    """The records of every ``data.extra`` source, marked (module docstring) and filtered to the source's tasks
    (``tasks``, else ``data.tasks``); each source's counts go to ``stats.extra``. A missing file, a file of the
    run's own prepared directory, and a record that shares its id or its context with a record of ``held`` (the
    run's training, eval and test records: :func:`held_by_run`) are :class:`InputError` naming the recipe field:
    extra records are training-only, and one that is also evaluated makes early stopping and the eval figures
    meaningless."""
    from dataclasses import replace

    guard = ExtraGuard.of(data, held)
    out: list[Record] = []
    for k, source in enumerate(data.extra):
        tasks = source.tasks if source.tasks is not None else data.tasks
        read: list[Record] = []
        files = []
        for split in source.splits:
            path = Path(source.dir) / f"{split}.jsonl"
            if not path.is_file():
                raise InputError(f"no such file: {path} (data.extra[{k}] reads {', '.join(source.splits)} of "
                                 f"{source.dir}; write it with `ragtruth-spans import` or `prepare`)",
                                 field=f"data.extra[{k}].split")
            guard.check_file(path, k)
            files.append(str(path))
            records = [normal_record(r) for r in read_records(path)]
            guard.check_records(records, path, k)
            read.extend(records)
        kept = [replace(r, id=f"{r.id}{EXTRA_ID}{k}", source_id=f"{EXTRA_SOURCE}{k}:{r.source_id}")
                for r in read if r.task_type in tasks]
        stats.extra.append({"dir": source.dir, "files": files, "records": len(read),
                            "other_tasks": len(read) - len(kept), "kept": len(kept),
                            "with_spans": sum(bool(r.spans) for r in kept), "weight": source.weight,
                            **({"unlocated": unlocated} if (unlocated := sum(r.unlocated for r in kept)) else {})})
        out.extend(kept)
    return out


def context_sha256(record: Record) -> str:
    """sha256 of a record's context (how ``data.extra`` records are compared with the run's own)."""
    return hashlib.sha256(record.context.encode("utf-8")).hexdigest()


def held_by_run(data: DataSection, training: Sequence[Record]) -> list[tuple[str, Sequence[Record]]]:
    """What ``data.extra`` may not overlap: the run's training records (all of ``data.split``), its eval split and
    the prepared directory's test split when it has one (each named for errors)."""
    held: list[tuple[str, Sequence[Record]]] = [(f"training split {data.split!r}", training)]
    names = [data.eval_split] if data.eval_split not in (None, data.split) else []
    test = split_file(data, "test")
    if "test" not in (data.split, *names) and test is not None and test.is_file():
        names.append("test")
    for name in names:
        held.append((f"{'eval' if name == data.eval_split else 'held-out'} split {name!r}",
                     load_split(data, name, field="data.eval_split")[0]))
    return held


@dataclass
class ExtraGuard:
    """The run's own files and records, by file, id and context hash, that ``data.extra`` may not hold."""

    files: dict[Path, str]
    ids: dict[str, str]
    contexts: dict[str, tuple[str, str]]

    @classmethod
    def of(cls, data: DataSection, held: Sequence[tuple[str, Sequence[Record]]]) -> ExtraGuard:
        files = {}
        if data.prepared_dir != SAMPLE:
            files = {path.resolve(): path.stem for path in Path(data.prepared_dir).glob("*.jsonl")}
        ids: dict[str, str] = {}
        contexts: dict[str, tuple[str, str]] = {}
        for name, records in held:
            for record in records:
                ids.setdefault(record.id, name)
                contexts.setdefault(context_sha256(record), (name, record.id))
        return cls(files, ids, contexts)

    def check_file(self, path: Path, k: int) -> None:
        split = self.files.get(path.resolve())
        if split is not None:
            raise InputError(f"{path} is the run's own {split!r} split (data.prepared_dir): extra sources are "
                             "training-only and must be other data", field=f"data.extra[{k}]")

    def check_records(self, records: Sequence[Record], path: Path, k: int) -> None:
        for record in records:
            if record.id in self.ids:
                raise InputError(f"{path}: record {record.id!r} has the id of a record of the run's "
                                 f"{self.ids[record.id]} (extra sources must not overlap the run's own records)",
                                 field=f"data.extra[{k}]")
            same = self.contexts.get(context_sha256(record))
            if same is not None:
                raise InputError(f"{path}: record {record.id!r} has the context of record {same[1]!r} of the run's "
                                 f"{same[0]} (extra sources must not overlap the run's own records)",
                                 field=f"data.extra[{k}]")


def selected_training_records(data: DataSection, stats: RecordStats) -> tuple[list[Record], str]:
    """The records to train on after :func:`select_records` (counted in ``stats``), the augmented ones, then the
    ``data.extra`` records (:func:`load_extra_records`, checked against the run's own records:
    :func:`held_by_run`), and where they came from; no real record left is an :class:`InputError`."""
    loaded, source = load_training_records(data)
    records = select_records(loaded, data, stats)
    if not records:
        raise InputError(f"no training records left from {source} (tasks={data.tasks}, "
                         f"clean_fraction={data.clean_fraction})")
    if data.augment is not None:
        from ragtruth_spans.data.augment import augment

        new, counts = augment(records, kinds=data.augment.kinds, share=data.augment.share, seed=data.augment.seed,
                              rounds=data.augment.rounds)
        stats.augmented = counts.to_dict()
        records = records + new
    if data.synth is not None:
        generated = synth_records(data, records, "train", data.synth.count, stats)
        records = records + generated
        source += f" + {len(generated)} generated"
    if data.extra:
        extra = load_extra_records(data, stats, held_by_run(data, loaded))
        records = records + extra
        source += f" + {len(extra)} extra training-only record(s) from {len(data.extra)} source(s)"
    return records, source


def select_records(records: Sequence[Record], data: DataSection, stats: RecordStats) -> list[Record]:
    """Keep ``data.tasks``; keep a seeded ``clean_fraction`` of the clean records; cap at ``max_examples``."""
    stats.records = len(records)
    kept = [r for r in records if r.task_type in data.tasks]
    stats.other_tasks = len(records) - len(kept)
    clean_idx = [i for i, r in enumerate(kept) if not r.hallucinated]
    stats.clean = len(clean_idx)
    stats.with_spans = len(kept) - len(clean_idx)
    n_clean = round(data.clean_fraction * len(clean_idx))
    rng = random.Random(data.seed)
    drop = set(clean_idx) - set(rng.sample(clean_idx, n_clean))
    stats.clean_kept = n_clean
    kept = [r for i, r in enumerate(kept) if i not in drop]
    if data.max_examples is not None and len(kept) > data.max_examples:
        stats.over_max_examples = len(kept) - data.max_examples
        kept = [kept[i] for i in sorted(rng.sample(range(len(kept)), data.max_examples))]
    return kept


def examples_sha256(examples: Sequence[dict[str, Any]]) -> str:
    """sha256 of the exact training examples (canonical JSON lines, in training order)."""
    h = hashlib.sha256()
    for ex in examples:
        h.update(json.dumps(ex, ensure_ascii=False, sort_keys=True).encode("utf-8") + b"\n")
    return h.hexdigest()
