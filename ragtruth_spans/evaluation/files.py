"""Evaluate a predictions file against gold records on disk: what ``ragtruth-spans evaluate`` reports, as a
function, so every command that scores predictions (``evaluate``, ``benchmark``, ``report``) gives the same
figures and notes."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.evaluation.overlap import Overlap, TrainingData, without
from ragtruth_spans.evaluation.report import Report

if TYPE_CHECKING:
    from ragtruth_spans.core.predictions import PredictionFile
    from ragtruth_spans.core.types import Record


def diagnostics_notes(diagnostics: dict[str, Any]) -> list[str]:
    """The notes a predictions file's diagnostics call for (detector failures, the detector's own counters); none
    for a :class:`~ragtruth_spans.core.predictions.PredictionFile` built in code (empty diagnostics)."""
    notes = []
    if diagnostics.get("errors"):
        notes.append(f"{diagnostics['errors']} of {diagnostics['lines']} prediction lines are detector failures "
                     "(their 'error' is set): they count as predicting no span")
    counters = {k: v for k, v in (diagnostics.get("counters") or {}).items() if v}
    if counters:
        notes.append("detector diagnostics (counted by name over the prediction lines): "
                     + ", ".join(f"{k} {v}" for k, v in counters.items()))
    return notes


def evaluate_files(gold: str | Path, pred: str | Path, *, ignore_implicit_true: bool = False,
                   ignore_due_to_null: bool = False, allow_missing: bool = False, bootstrap: int = 0,
                   seed: int = 0, training: TrainingData | None = None, drop_overlap: bool = False,
                   also_drop: Collection[str] = ()) -> Report:
    """The :class:`Report` of the predictions file ``pred`` against ``gold`` (a prepared split file or a RAGTruth
    directory, see :func:`~ragtruth_spans.evaluation.load_gold`), with the gold source, the predictions'
    diagnostics and the notes they call for. ``training``: what the detector trained on (its overlap with the
    gold is reported, and with ``drop_overlap`` left out; :mod:`ragtruth_spans.evaluation.overlap`);
    ``also_drop``: more gold ids to leave out (the overlap of the other detectors a benchmark compares)."""
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation.gold import load_gold
    from ragtruth_spans.evaluation.overlap import count_overlap

    records, gold_info = load_gold(gold)
    pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
    overlap = None if training is None else count_overlap(records, training)
    return evaluate_prediction_file(records, pred_file, pred, gold_info=gold_info,
                                    ignore_implicit_true=ignore_implicit_true, ignore_due_to_null=ignore_due_to_null,
                                    allow_missing=allow_missing, bootstrap=bootstrap, seed=seed, overlap=overlap,
                                    drop=set(also_drop) | (overlap.ids if overlap is not None and drop_overlap
                                                           else set()))


def restrict_predictions(pred_file: PredictionFile, ids: Collection[str]) -> PredictionFile:
    """``pred_file`` restricted to the lines of ``ids`` (its diagnostics stay those of the whole file)."""
    from ragtruth_spans.core.predictions import PredictionFile

    keep = set(ids)
    return PredictionFile(spans={k: v for k, v in pred_file.spans.items() if k in keep},
                          response_scores={k: v for k, v in pred_file.response_scores.items() if k in keep},
                          errors={k: v for k, v in pred_file.errors.items() if k in keep},
                          diagnostics=pred_file.diagnostics)


def _scored(records: Sequence[Record], pred_file: PredictionFile, source: str | Path, **options: Any) -> Report:
    from ragtruth_spans.evaluation.evaluator import evaluate

    try:
        return evaluate(records, pred_file.spans, response_scores=pred_file.response_scores, **options)
    except InputError as exc:  # what evaluate() rejects here is about the predictions (e.g. a missing id)
        raise InputError(str(exc), path=source) from None


def evaluate_prediction_file(records: Sequence[Record], pred_file: PredictionFile, source: str | Path, *,
                             gold_info: dict[str, Any] | None = None, overlap: Overlap | None = None,
                             drop: Collection[str] = (), **options: Any) -> Report:
    """The :class:`Report` of ``pred_file`` (the predictions read from ``source``) against the gold ``records``
    (``options`` go to :func:`~ragtruth_spans.evaluation.evaluate`), with the predictions' source and diagnostics
    and the notes they call for; with ``gold_info`` (from :func:`~ragtruth_spans.evaluation.load_gold`) also the
    gold source and its note. What ``evaluate`` rejects is an :class:`InputError` naming ``source``.

    ``overlap``: the gold responses the detector saw in training (:func:`~ragtruth_spans.evaluation.overlap.
    count_overlap`), reported in ``Report.overlap`` with the figures on the other responses (``rest``, no
    bootstrap). ``drop``: ids of gold responses left out of the whole evaluation (``--drop-overlap``: this
    detector's overlap, or every compared detector's)."""
    if drop:
        kept = without(records, drop)
        if not kept:
            raise InputError(f"all {len(records)} gold responses overlap the training data: --drop-overlap leaves "
                             "nothing to evaluate", field="--drop-overlap")
        report = _scored(kept, restrict_predictions(pred_file, {r.id for r in kept}), source, **options)
        report.notes.append(f"--drop-overlap: {len(records) - len(kept)} of {len(records)} gold responses that "
                            "share a source or a response with the training data are left out; every figure is on "
                            f"the other {len(kept)}")
    else:
        report = _scored(records, pred_file, source, **options)
    if overlap is not None:
        report.overlap = overlap_section(records, pred_file, source, overlap, drop, **options)
        report.notes.append(overlap.words())
    if gold_info is not None:
        report.settings["gold"] = gold_info
    report.settings.update(predictions=str(source), prediction_diagnostics=pred_file.diagnostics)
    report.notes.extend(diagnostics_notes(pred_file.diagnostics))
    if gold_info is not None and gold_info.get("labels_unrepairable_dropped"):
        report.notes.append(f"{gold_info['labels_unrepairable_dropped']} gold label(s) of the RAGTruth test split "
                            "could not be aligned to the response and were dropped by the conversion")
    return report


def overlap_section(records: Sequence[Record], pred_file: PredictionFile, source: str | Path, overlap: Overlap,
                    drop: Collection[str], **options: Any) -> dict[str, Any]:
    """``Report.overlap``: the counts (:meth:`Overlap.to_dict`), how many responses were ``dropped`` and, when
    some overlap and none were dropped, ``rest``: the figures (overall and by task) on the responses that do
    not overlap."""
    section = overlap.to_dict() | {"dropped": len(set(drop) & {r.id for r in records}), "rest": None}
    if overlap.ids and not drop and len(overlap.ids) < len(records):
        rest = without(records, overlap.ids)
        scored = _scored(rest, restrict_predictions(pred_file, {r.id for r in rest}), source,
                         **(options | {"bootstrap": 0}))
        section["rest"] = {"responses": len(rest), "overall": scored.overall, "by_task": scored.by_task}
    return section
