"""Pairs from a task's own labels (the entailment family's last stage): every response sentence of a prepared
RAGTruth-style directory against the premises the detector judges it by, labelled from the gold spans.

- **Premises.** The detector that reads the run (an :class:`~.detector.EntailmentDetector` of the recipe's
  ``model.max_length`` and ``detection`` settings) chooses them: :meth:`~.detector.EntailmentDetector.
  judged_windows` — the same sentences (the project's splitter, half-open ``[start, end)``), the same windows and
  the same best ``detection.windows`` by the same encoder — so a pair trained on is a pair the detector asks.
- **Labels.** A sentence that overlaps a gold span of a Conflict type is contradicted, of a Baseless type (only) is
  not supported, one that overlaps none is entailed; a partial overlap counts (the sentence is not entailed whole).
  The detector calls a sentence entailed when its best window entails it, so an entailed sentence gives one pair,
  its best window (``entailment``); a sentence no window entails gives a pair with each of its windows: all
  ``neutral`` for a baseless one; for a contradicted one its best window ``contradiction`` (where the claim it
  changes is most likely read) and the others ``not_entailment`` (``binary``: which of the two is not known).
  A response labelled as a whole (``unlocated``: not supported, no words marked) of one sentence gives that
  sentence's windows ``not_entailment``; of more sentences it is skipped (which one is unsupported is not known).
- **Splits.** The source directory's ``train`` → train, ``dev`` → dev; its ``test.jsonl`` is never read (an empty
  ``test.jsonl`` is written: the pairs of a task's test split are never made). ``extras`` (other prepared
  directories, e.g. SummEdits, BEGIN, ExpertQA) give their ``train`` split only; a ``replay`` sample of another
  prepared NLI directory's ``train.jsonl`` is copied as it is (its sources kept) to keep the model's NLI.
- Pairs repeated in a split (the same sentence over the same context from two models) are kept once; with two
  labels, dropped (:func:`~ragtruth_spans.data.nli_pairs.remove_duplicates`, counted).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256, iter_jsonl, read_records, write_json, write_jsonl
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.data.nli_pairs import NLI_LABELS, NLI_SPLITS, NliPair, remove_duplicates
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.entailment.detector import EntailmentDetector
from ragtruth_spans.detectors.entailment.pairs import read_pairs, sample_pairs
from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe

logger = logging.getLogger(__name__)

SOURCE_SPLITS: tuple[str, ...] = ("train", "dev")
"""The splits of a task's prepared directory that pairs are made of (its test split is never read)."""
BATCH = 32
"""Records whose windows are chosen together (one batch of the encoder)."""
UNLOCATED_SKIP = "labelled as a whole, more than one sentence"


def pair_detector(recipe: EntailmentRecipe) -> EntailmentDetector:
    """The detector a run of ``recipe`` loads, without its model: what chooses the premises of training pairs."""
    d = recipe.detection
    return EntailmentDetector(None, None, max_length=recipe.model.max_length, threshold=d.threshold,
                              windows=d.windows, window_sentences=d.window_sentences,
                              window_fields=d.window_fields, encoder=d.encoder)


def sentence_label(start: int, end: int, spans: Sequence[Span]) -> str:
    """The label of the sentence ``[start, end)`` from the response's gold ``spans``: ``contradiction`` when it
    overlaps a Conflict span, ``neutral`` when it overlaps a Baseless one only, else ``entailment``.

    >>> spans = [Span(5, 9, type="Evident Baseless Info"), Span(30, 34, type="Subtle Conflict")]
    >>> [sentence_label(*s, spans) for s in ((0, 8), (10, 20), (25, 40))]
    ['neutral', 'entailment', 'contradiction']
    """
    kinds = {s.type or "" for s in spans if s.start < end and start < s.end}
    if any("Conflict" in kind for kind in kinds):
        return "contradiction"
    return "neutral" if kinds else "entailment"


def _window_labels(label: str, count: int) -> list[str]:
    """The labels of a sentence's pairs with its ``count`` windows, best first (module docstring)."""
    if label == "entailment":
        return ["entailment"]
    if label == "contradiction":
        return ["contradiction", *["not_entailment"] * (count - 1)]
    return [label] * count


def record_pairs(detector: EntailmentDetector, records: Sequence[Record], *, source: str, split: str,
                 skipped: Counter[str]) -> Iterator[NliPair]:
    """The pairs of ``records`` (module docstring), in record and sentence order; sentences that give none are
    counted in ``skipped`` by reason."""
    for first in range(0, len(records), BATCH):
        batch = records[first:first + BATCH]
        items = [DetectItem.of(record) for record in batch]
        windows, sentences, choices = detector.judged_windows(items)
        for record, found, spans, rows in zip(batch, windows, sentences, choices):
            if record.unlocated and len(spans) > 1:
                skipped[UNLOCATED_SKIP] += len(spans)
                continue
            for k, ((a, b), (order, _)) in enumerate(zip(spans, rows)):
                label = "not_entailment" if record.unlocated else sentence_label(a, b, record.spans)
                labels = ["not_entailment"] * len(order) if record.unlocated else _window_labels(label, len(order))
                for rank, (w, name) in enumerate(zip(order, labels)):
                    yield NliPair(id=f"{source}-{split}-{record.id}-s{k}-w{rank}", premise=found[w].premise,
                                  hypothesis=record.response[a:b], label=name, source=source, split=split,
                                  binary=name == "not_entailment", task=record.task_type)


def _read_split(folder: Path, split: str, field: str) -> list[Record]:
    path = folder / f"{split}.jsonl"
    if not path.is_file():
        raise InputError(f"no {split}.jsonl here (a prepared directory: ragtruth-spans prepare or import)",
                         path=folder, field=field)
    return read_records(path)


def _replay(folder: Path, count: int, seed: int) -> list[NliPair]:
    """A seeded sample of ``count`` pairs of ``folder/train.jsonl`` (every line checked), copied as they are."""
    path = folder / "train.jsonl"
    if not path.is_file():
        raise InputError("no train.jsonl here (a prepared NLI directory: ragtruth-spans import nli)", path=folder,
                         field="--replay")
    read_pairs(path)  # strict: a bad line is one error naming it
    rows = [obj for _, obj in iter_jsonl(path)]
    return [NliPair(id=str(obj.get("id", f"replay-{i}")), premise=obj["premise"], hypothesis=obj["hypothesis"],
                    label=obj["label"], source=obj["source"], split="train", binary=bool(obj.get("binary", False)),
                    subset=obj.get("subset"), task=obj.get("task"))
            for i, obj in enumerate(sample_pairs(rows, count, seed))]


def _inputs(prepared: Path, extras: Mapping[str, Path]) -> Iterator[tuple[str, str, Path, str]]:
    """``(source, split, folder, field)`` of every split read: the task's train and dev, the extras' train."""
    for split in SOURCE_SPLITS:
        yield "", split, prepared, "--prepared"
    for name, folder in extras.items():
        yield name, "train", folder, "--extra"


def build_task_pairs(prepared: str | Path, detector: EntailmentDetector, *, source: str = "ragtruth",
                     extras: Mapping[str, str | Path] | None = None, replay: str | Path | None = None,
                     replay_pairs: int = 0, seed: int = 0) -> tuple[list[NliPair], dict[str, Any]]:
    """Every pair (module docstring) and the stats :func:`write_task_pairs` writes; pairs of ``prepared`` get the
    source ``source``, an extra's its name."""
    prepared, extras = Path(prepared), {name: Path(d) for name, d in (extras or {}).items()}
    if source in extras:
        raise InputError(f"the extra {source!r} has the task's own source name", field="--extra")
    pairs: list[NliPair] = []
    sentences: dict[str, dict[str, Any]] = {}
    files: dict[str, str | None] = {}
    for name, split, folder, field in _inputs(prepared, extras):
        name = name or source
        records = _read_split(folder, split, field)
        files[str(folder / f"{split}.jsonl")] = file_sha256(folder / f"{split}.jsonl")
        skipped: Counter[str] = Counter()
        made = list(record_pairs(detector, records, source=name, split=split, skipped=skipped))
        logger.info("%s %s: %d records, %d pairs", name, split, len(records), len(made))
        sentences.setdefault(name, {})[split] = {"records": len(records), "skipped": dict(skipped),
                                                 "paired": len({p.id.rsplit("-w", 1)[0] for p in made})}
        pairs.extend(made)
    if replay is not None and replay_pairs > 0:
        pairs.extend(_replay(Path(replay), replay_pairs, seed))
        files[str(Path(replay) / "train.jsonl")] = file_sha256(Path(replay) / "train.jsonl")
    kept, duplicates = remove_duplicates(pairs)
    return kept, _stats(pairs, kept, duplicates, sentences, files, detector,
                        {"prepared": str(prepared), "source": source, "extras": {k: str(v) for k, v in
                         extras.items()}, "replay": None if replay is None else str(replay),
                         "replay_pairs": replay_pairs, "seed": seed})


def _stats(built: Sequence[NliPair], kept: Sequence[NliPair], duplicates: Mapping[str, Counter[str]],
           sentences: dict[str, Any], files: dict[str, str | None], detector: EntailmentDetector,
           settings: dict[str, Any]) -> dict[str, Any]:
    """The stats (the shape ``import nli`` writes, so its summary reads them); counts that do not add up are a
    bug (``RuntimeError``)."""
    built_by, kept_by = Counter(p.source for p in built), Counter(p.source for p in kept)
    by_set = {}
    for name in built_by:
        dropped = duplicates.get(name, Counter())
        if built_by[name] != kept_by[name] + sum(dropped.values()):
            raise RuntimeError(f"task pairs: counts of {name} do not add up")
        by_set[name] = {"input": built_by[name], "written": kept_by[name], "skipped": {},
                        "duplicates": dict(sorted(dropped.items()))}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    for pair in kept:
        labels = counts.setdefault(pair.source, {}).setdefault(pair.split, {})
        labels[pair.label] = labels.get(pair.label, 0) + 1
    counts = {s: {sp: {x: v[sp][x] for x in NLI_LABELS if x in v[sp]} for sp in NLI_SPLITS if sp in v}
              for s, v in counts.items()}
    return {"importer": "nli-sentences", **settings, "labels": list(NLI_LABELS), "input": len(built),
            "written": len(kept), "skipped": 0, "duplicates": len(built) - len(kept),
            "splits": {split: sum(p.split == split for p in kept) for split in NLI_SPLITS}, "counts": counts,
            "binary_sources": sorted({p.source for p in kept if p.binary}), "by_set": by_set,
            "sentences": sentences, "detector": detector.describe(), "files": files}


def write_task_pairs(building: Path, pairs: Sequence[NliPair], stats: dict[str, Any], out_dir: str | Path) -> None:
    """Write ``building/{train,dev,test}.jsonl`` (test empty) and ``stats.json`` (naming ``out_dir``, where the
    folder goes); no training pair is an :class:`InputError`."""
    if not any(p.split == "train" for p in pairs):
        raise InputError("no training pair made (no train record with a sentence)", path=stats["prepared"],
                         field="--prepared")
    for split in NLI_SPLITS:
        write_jsonl(building / f"{split}.jsonl", (p.to_dict() for p in pairs if p.split == split))
    write_json(building / "stats.json", {**stats, "out_dir": str(out_dir)})


def import_task_pairs(prepared: str | Path, out_dir: str | Path, detector: EntailmentDetector, *,
                      extras: Mapping[str, str | Path] | None = None, replay: str | Path | None = None,
                      **options: Any) -> dict[str, Any]:
    """Build and write the prepared NLI directory ``out_dir`` whole (checked and locked before any input is read,
    built beside and swapped in: :func:`~ragtruth_spans.data.prepare.prepared_output`); the stats written.
    ``options``: those of :func:`build_task_pairs`."""
    from ragtruth_spans.data.prepare import prepared_output

    inputs = [("--prepared", prepared), *(("--extra", d) for d in (extras or {}).values()), ("--replay", replay)]
    with prepared_output(out_dir, field="--out", inputs=inputs) as building:
        pairs, stats = build_task_pairs(prepared, detector, extras=extras, replay=replay, **options)
        write_task_pairs(building, pairs, stats, out_dir)
    return {**stats, "out_dir": str(out_dir)}
