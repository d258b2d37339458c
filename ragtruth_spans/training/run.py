"""What every family's train function shares: the result, claiming the run directory once per run, resuming
from the last checkpoint, running a transformers ``Trainer``. The entry that dispatches on a recipe's ``kind`` is
:func:`ragtruth_spans.detectors.train.train`."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.locks import exclusive_output
from ragtruth_spans.runs.run_dir import claim_output_dir

logger = logging.getLogger(__name__)

@dataclass
class TrainResult:
    """A finished run: where it was written, what happened to the data (the family's
    :class:`~ragtruth_spans.training.data.RecordStats`), the trainer's metrics, the checkpoint resumed from, and
    ``summary``: the run in one line (what was trained, its tuned operating point, where), which the caller
    renders (the command line prints it as its result)."""

    output_dir: Path
    stats: Any
    metrics: dict[str, Any]
    resumed_from: str | None
    summary: str = ""


def claim_on_main_process(output_dir: str | Path, fingerprint: dict[str, Any], *, overwrite: bool,
                           resume: bool, lock: ExitStack | None = None) -> bool:
    """:func:`claim_output_dir` once per run: under accelerate/torchrun (``WORLD_SIZE`` > 1) only the main process
    claims (and may delete or write) the directory; the other ranks wait for its answer, a refusal included, so
    that every rank raises the same :class:`InputError`. Claiming on every rank would race (one rank could delete
    the directory another had just started) and make the later ranks resume the run rank 0 had just started.

    With ``lock``, the main process first takes the run directory's lock
    (:func:`~ragtruth_spans.core.locks.exclusive_output`) and keeps it on that stack for the whole run: a second
    ``train`` into the same directory is refused at once with the holder named (whatever its settings, since a
    running run holds only ``fingerprint.json`` for a while), and loads of the run (which read under the same
    lock) are refused while it is written, and waited for before ``overwrite`` deletes it."""
    def claim() -> bool:
        if lock is not None:
            lock.enter_context(exclusive_output(output_dir, what="folder"))
        return claim_output_dir(output_dir, fingerprint, overwrite=overwrite, resume=resume)

    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return claim()
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list, parse_flag_from_env

    answer: list[Any] = [None]
    # the state the trainer will use (on CPU, accelerate needs ACCELERATE_USE_CPU, as TrainingArguments does)
    if PartialState(cpu=parse_flag_from_env("ACCELERATE_USE_CPU")).is_main_process:
        try:
            answer[0] = claim()
        except InputError as e:
            answer[0] = {"message": e.message, "path": e.path, "line": e.line, "field": e.field}
    broadcast_object_list(answer)  # the other ranks wait here for the main process's answer
    if isinstance(answer[0], dict):
        raise InputError(**answer[0])
    return bool(answer[0])


def last_checkpoint(output_dir: str | Path, resume: bool) -> str | None:
    """The checkpoint of ``output_dir`` a resumed run continues from (announced as an ``INFO`` record); None for a
    new run."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(str(output_dir)) if resume else None
    if last:
        logger.info("resuming from %s", last)
    return last


def run_trainer(trainer: Any, last: str | None, *, best_metric: str | None = None,
                callbacks: Sequence[Any] = ()) -> dict[str, Any]:
    """Train (continuing from checkpoint ``last`` when not None) and return the trainer's metrics plus ``wall_s``
    and ``train_loss_whole_run``; with ``best_metric`` (the name under which to record the best evaluation
    figure, for a run with an eval split) also that figure and ``best_checkpoint``. Progress and metrics are
    shown as :func:`~ragtruth_spans.training.progress.attach_progress` says; ``callbacks``
    (``transformers.TrainerCallback``) are added to the trainer, e.g. to time steps
    (``scripts/gpu_check.py``)."""
    from ragtruth_spans.training.progress import attach_progress

    attach_progress(trainer)
    for callback in callbacks:
        trainer.add_callback(callback)
    start = time.time()
    metrics = dict(trainer.train(resume_from_checkpoint=last).metrics)
    metrics["wall_s"] = round(time.time() - start, 2)
    initial_step = int(Path(last).name.rsplit("-", 1)[-1]) if last else 0  # HF names them checkpoint-<step>
    metrics["train_loss_whole_run"] = whole_run_train_loss(trainer.state.log_history, initial_step)
    if best_metric is not None:
        metrics[best_metric] = trainer.state.best_metric
        metrics["best_checkpoint"] = trainer.state.best_model_checkpoint
    return metrics


def whole_run_train_loss(log_history: list[dict[str, Any]], initial_step: int = 0) -> float | None:
    """The mean training loss of a whole run, resumed ones included. The trainer's final ``train_loss`` is the
    exact mean over the steps of the last session (from ``initial_step``, the resumed checkpoint's step, to the
    end); the steps before it are counted by the losses logged up to ``initial_step`` (each the mean over the
    steps since the previous log), weighted by the steps they cover. Without a final ``train_loss`` (an
    interrupted history), the logged losses alone. None when nothing was logged."""
    def logged_mean(up_to: float) -> float | None:
        total = steps = 0.0
        previous = 0
        for entry in log_history:
            if "loss" in entry and "step" in entry and int(entry["step"]) <= up_to:
                width = max(int(entry["step"]) - previous, 1)
                total += float(entry["loss"]) * width
                steps += width
                previous = int(entry["step"])
        return total / steps if steps else None

    final = [e for e in log_history if "train_loss" in e and "step" in e]
    if not final:
        return logged_mean(float("inf"))
    end, session = int(final[-1]["step"]), float(final[-1]["train_loss"])
    before = logged_mean(initial_step) if initial_step > 0 else None
    if before is None or end <= initial_step:
        return session
    return (before * initial_step + session * (end - initial_step)) / end
