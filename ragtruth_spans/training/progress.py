"""What a transformers ``Trainer`` shows while it trains: one progress bar (on a terminal) and its metrics as
short lines (``step 10/36  loss 1.234  lr 9.6e-05  grad_norm 0.52``), instead of tqdm bars with the metric
dicts spliced into them and a nested evaluation bar. The lines are ``INFO`` records of this module's logger; the
bar is drawn when :func:`~ragtruth_spans.core.logs.progress_enabled` (a terminal, not quiet). Quiet runs show
neither; verbose runs (:func:`~ragtruth_spans.core.logs.verbose`) keep the Trainer's own bars."""

from __future__ import annotations

import logging
from typing import Any

from ragtruth_spans.core import logs

logger = logging.getLogger(__name__)

SHOWN = ("loss", "eval_loss", "learning_rate", "grad_norm", "epoch")
"""Metrics of a training log line, in this order, then any other ``eval_*`` figure."""
LINES = 5
"""About how many training-loss lines a run prints (the Trainer logs every ``logging_steps``)."""


def format_metrics(step: int, max_steps: int, entry: dict[str, Any]) -> str:
    """One log entry of the Trainer as a short line."""
    if "train_runtime" in entry:
        loss = entry.get("train_loss")
        return (f"trained {step} steps in {float(entry['train_runtime']):.0f} s"
                + (f" (mean loss {float(loss):.4f})" if loss is not None else ""))
    names = [k for k in SHOWN if k in entry] + sorted(k for k in entry if k.startswith("eval_") and k not in SHOWN
                                                      and not k.endswith(("_runtime", "_per_second")))
    parts = [f"step {step}/{max_steps}"]
    for name in names:
        value = entry[name]
        short = {"learning_rate": "lr"}.get(name, name)
        if isinstance(value, float):
            text = f"{value:.1e}" if name == "learning_rate" else f"{value:.2f}" if name == "epoch" else f"{value:.4f}"
        else:
            text = str(value)
        parts.append(f"{short} {text}")
    return "  ".join(parts)


def console_progress() -> Any:
    """A ``TrainerCallback`` that draws one bar (terminal only) and logs each log entry as a short line."""
    from transformers import TrainerCallback

    class ConsoleProgress(TrainerCallback):
        def __init__(self) -> None:
            self.progress: Any = None
            self.task: Any = None
            self.next_line = 0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.is_world_process_zero and logs.progress_enabled():
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

                self.progress = Progress("train", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                         console=logs.make_console(stderr=True), transient=True)
                self.progress.start()
                self.task = self.progress.add_task("train", total=state.max_steps, completed=state.global_step)

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.progress is not None:
                self.progress.update(self.task, completed=state.global_step)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if not (state.is_world_process_zero and logs and logger.isEnabledFor(logging.INFO)):
                return
            training_line = "loss" in logs and not any(k.startswith("eval_") for k in logs)
            if training_line and state.global_step < self.next_line and state.global_step != state.max_steps:
                return  # at most about LINES training lines per run; evaluations and the summary always show
            self.next_line = state.global_step + max(1, state.max_steps // LINES)
            logger.info(format_metrics(state.global_step, state.max_steps, logs))

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if self.progress is not None:
                self.progress.stop()
                self.progress = None

    return ConsoleProgress()


def attach_progress(trainer: Any) -> None:
    """Replace the Trainer's tqdm bars and printed dicts with :func:`console_progress` (not when verbose)."""
    if logs.verbose():
        return
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(console_progress())
