"""What every family's training starts from, by one rule: the records (:func:`select_data`), the base model
(:func:`base_model`) and the ``data`` header of ``run_info.json`` (:func:`data_record`). Then each family builds its
own examples and runs its own trainer.

**Records.** Training: ``data.split``, kept by :func:`~ragtruth_spans.training.data.select_records` (``data.tasks``,
a seeded ``data.clean_fraction`` of the clean ones, at most ``data.max_examples``), then the ``data.augment``
records, then the ``data.extra`` ones (:func:`~ragtruth_spans.training.data.selected_training_records`). Eval:
``data.eval_split``, every record of ``data.tasks`` in file order (:func:`eval_records`) — augmentation and extra
sources never reach it, and neither do ``clean_fraction`` and ``max_examples``, except for the generative family,
whose dev loss has always run on an eval split sampled like its training split (``eval_as_training``). Every drop
is counted in the family's :class:`~ragtruth_spans.training.data.RecordStats`.

**Base model.** ``model.name_or_path: tiny`` builds the family's tiny random model once under
``<output_dir>/base_model``; anything else is resolved once by
:func:`~ragtruth_spans.models.hf_models.resolve_base_model` (packaged model, GGUF file, local folder, hub id at
``model.revision``). dtype and attention are applied where the family loads it.

**run_info.json.** Every family records ``kind`` (:func:`~ragtruth_spans.runs.run_dir.write_run_files`) and
``data`` (:func:`data_record`): ``source``, ``counts`` (the training counts; null for a family that does not
train, like similarity) and ``eval`` (``split``, ``source``, ``counts``; null without an eval split), plus the
family's own keys (e.g. ``examples_sha256``); and ``trained_on.json`` (:func:`trained_on`), the fingerprints of
the sources and responses of those records, which the evaluation commands compare with their gold. Stacked runs
written before this header kept the training counts under ``data_stats``; nothing reads either to decide spans.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ragtruth_spans.core.types import Record
from ragtruth_spans.evaluation.overlap import TrainedOn
from ragtruth_spans.models.tiny import BASE_MODEL_DIR, TINY
from ragtruth_spans.training.data import (
    RecordStats,
    load_eval_records,
    select_records,
    selected_training_records,
    synth_records,
)
from ragtruth_spans.training.data_recipe import DataSection
from ragtruth_spans.training.recipe import ModelSection


@dataclass
class SelectedData:
    """The records a family trains and evaluates on, where they came from and what was dropped."""

    train: list[Record]
    source: str
    stats: RecordStats
    eval: list[Record] | None
    """None without ``data.eval_split``."""
    eval_source: str | None
    eval_stats: RecordStats | None


def eval_records(data: DataSection, stats: RecordStats | None = None, *,
                 as_training: bool = False) -> tuple[list[Record], str] | None:
    """The records of ``data.eval_split`` of ``data.tasks``, in file order, and where they came from (None when
    the recipe names no eval split); drops counted in ``stats``. ``as_training``: sampled like the training split
    too (``clean_fraction``, ``max_examples``; the generative family's rule)."""
    loaded = load_eval_records(data)
    if loaded is None:
        return None
    records, source = loaded
    rule = data if as_training else data.model_copy(update={"clean_fraction": 1.0, "max_examples": None})
    stats = stats if stats is not None else RecordStats()
    kept = select_records(records, rule, stats)
    if data.synth is not None and data.synth.eval_count:
        generated = synth_records(data, kept, "dev", data.synth.eval_count, stats)
        return kept + generated, f"{source} + {len(generated)} generated"
    return kept, source


def select_data(data: DataSection, stats: RecordStats, eval_stats: RecordStats | None = None, *,
                eval_as_training: bool = False, unlocated: bool = False) -> SelectedData:
    """The training records (counted in ``stats``; no real record left is an :class:`InputError`) and the eval
    records (:func:`eval_records`, counted in ``eval_stats``, a fresh ``type(stats)`` when None). Without
    ``unlocated`` (a family whose labels are words only), training records labelled hallucinated without spans
    (:attr:`~ragtruth_spans.core.types.Record.unlocated`) are left out — as clean responses they would teach the
    opposite of their label — and counted in ``stats.unlocated_left_out``."""
    train, source = selected_training_records(data, stats)
    if not unlocated and any(r.unlocated for r in train):
        stats.unlocated_left_out = sum(r.unlocated for r in train)
        train = [r for r in train if not r.unlocated]
        source += f" less {stats.unlocated_left_out} unlocated"
    eval_stats = eval_stats if eval_stats is not None else type(stats)()
    held_out = eval_records(data, eval_stats, as_training=eval_as_training)
    if held_out is None:
        return SelectedData(train, source, stats, None, None, None)
    return SelectedData(train, source, stats, held_out[0], held_out[1], eval_stats)


def trained_on(selected: SelectedData) -> TrainedOn:
    """The fingerprints of what a family trained (``train``: every training record, augmented and extra ones
    included) and tuned or early-stopped on (``eval``), for ``trained_on.json``
    (:func:`~ragtruth_spans.runs.run_dir.write_run_files`)."""
    return TrainedOn.from_records({"train": selected.train, "eval": selected.eval or []})


def base_model(model: ModelSection, output_dir: Path, build_tiny: Callable[[Path], Any]) -> tuple[str, str | None]:
    """``(path_or_id, revision)`` of the base model: with ``model.name_or_path: tiny``,
    ``<output_dir>/base_model``, built by ``build_tiny(folder)`` unless it is already there (a resumed run);
    else :func:`~ragtruth_spans.models.hf_models.resolve_base_model` of ``name_or_path``, ``revision`` and
    ``gguf_file``."""
    if model.name_or_path != TINY:
        from ragtruth_spans.models.hf_models import resolve_base_model

        return resolve_base_model(model.name_or_path, model.revision, model.gguf_file)
    base = output_dir / BASE_MODEL_DIR
    if not (base / "config.json").is_file():
        build_tiny(base)
    return str(base), None


def tiny_texts(records: Sequence[Record], *, questions: bool = True) -> list[str]:
    """The texts a tiny model's tokenizer is trained on: every record's context, response (and question)."""
    return [t for r in records for t in (r.context, r.response, *((r.question or "",) if questions else ()))]


def data_record(selected: SelectedData | None, *, eval_split: str | None, eval_extra: dict[str, Any] | None = None,
                eval_only: tuple[list[Record], str, RecordStats] | None = None, **extra: Any) -> dict[str, Any]:
    """The ``data`` header of ``run_info.json`` (module docstring): ``source``, ``counts``, the family's ``extra``
    keys, and ``eval`` (``split``, ``source``, ``counts`` and ``eval_extra``). A family that does not train passes
    ``selected=None`` and its eval records as ``eval_only`` ``(records, source, stats)``."""
    if selected is not None:
        source, counts = selected.source, asdict(selected.stats)
        held_out = None if selected.eval is None else (selected.eval_source, selected.eval_stats)
    else:
        source, counts = None, None
        held_out = None if eval_only is None else (eval_only[1], eval_only[2])
    return {"source": source, "counts": counts, **extra,
            "eval": None if held_out is None else {"split": eval_split, "source": held_out[0],
                                                   "counts": asdict(held_out[1]), **(eval_extra or {})}}
