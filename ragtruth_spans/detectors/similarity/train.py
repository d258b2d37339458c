"""``ragtruth-spans train`` for the similarity family: tune the method's thresholds on ``data.eval_split`` and
write the run directory (``recipe.yaml``, ``run_info.json`` with the thresholds and the whole tuning grid)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.similarity.detector import PAPER_THRESHOLDS, SimilarityDetector
from ragtruth_spans.detectors.similarity.recipe import SimilarityRecipe
from ragtruth_spans.evaluation.overlap import TrainedOn
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.training.data import RecordStats
from ragtruth_spans.training.run import TrainResult
from ragtruth_spans.training.skeleton import data_record, eval_records

logger = logging.getLogger(__name__)


def detector_from_recipe(recipe: SimilarityRecipe, thresholds: dict[str, float] | None = None,
                         **options: Any) -> SimilarityDetector:
    """The recipe's detector with ``thresholds`` (default: the paper's)."""
    return SimilarityDetector(recipe.method, thresholds or PAPER_THRESHOLDS[recipe.method], encoder=recipe.encoder,
                              max_ngram=recipe.keywords.max_ngram, top_keywords=recipe.keywords.top, **options)


def train(recipe: SimilarityRecipe, *, resume: bool = False,
          fingerprint: dict[str, Any] | None = None) -> TrainResult:
    """Tune per ``recipe`` into ``recipe.output_dir`` (claimed by :func:`ragtruth_spans.detectors.train.train`)."""
    stats = RecordStats()
    loaded = eval_records(recipe.data, stats)
    assert loaded is not None  # the recipe requires data.eval_split
    kept, source = loaded
    if not kept:
        raise InputError(f"no {'/'.join(recipe.data.tasks)} responses in {source} to tune on",
                         field="data.eval_split")
    logger.info("tuning the %s thresholds on %d responses of %s (%s, %d values per threshold)", recipe.method,
                len(kept), source, recipe.tuning.criterion, len(recipe.tuning.grid))
    started = time.perf_counter()
    detector = detector_from_recipe(recipe, PAPER_THRESHOLDS[recipe.method])
    paper = {r.id: d for r, d in zip(kept, detector.detect_batch(kept))}
    tuned, result = detector.tune(kept, criterion=recipe.tuning.criterion, split=recipe.data.eval_split or "",
                                  values=recipe.tuning.grid)
    seconds = round(time.perf_counter() - started, 2)
    paper_row = next((row for row in result.table if all(row[k] == v for k, v in detector.thresholds.items())),
                     None)
    output_dir = Path(recipe.output_dir)
    tuned_on = TrainedOn.from_records({"eval": kept})  # the thresholds are all it learns
    write_run_files(output_dir, recipe, fingerprint=fingerprint, trained_on=tuned_on, info={
        "method": recipe.method,
        "thresholds": tuned.thresholds,
        "paper_thresholds": PAPER_THRESHOLDS[recipe.method],
        "data": data_record(None, eval_split=recipe.data.eval_split, eval_only=(kept, source, stats)),
        "tuning": result.to_dict() | {"source": source, "other_tasks_skipped": stats.other_tasks,
                                      "paper_thresholds_figures": paper_row, "seconds": seconds},
        "paper_flagged_responses": sum(bool(d.spans) for d in paper.values()),
    })
    def words(thresholds: dict[str, Any]) -> str:
        return ", ".join(f"{name.replace('_', ' ')} {value:g}" for name, value in thresholds.items())

    summary = (f"{recipe.method} thresholds {words(tuned.thresholds)} ({result.criterion} {result.value:.4f} on "
               f"{result.split}; the paper's thresholds {words(detector.thresholds)} give "
               f"{paper_row[result.criterion] if paper_row else float('nan'):.4f}) → {output_dir}")
    return TrainResult(output_dir=output_dir, stats={"responses": len(kept)}, metrics=result.to_dict(),
                       resumed_from=None, summary=summary)
