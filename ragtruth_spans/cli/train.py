"""``ragtruth-spans train``: train any detector family from a recipe (its ``kind``)."""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from ragtruth_spans.cli.common import app, fail, out, user_errors


@app.command("train")
def train_command(
    recipe: str = typer.Argument(..., help="Recipe YAML path or shipped name (tiny-cpu, "
                                 "llama-3.1-8b-instruct/qlora, ...)."),
    overrides: list[str] = typer.Option([], "--set", help="Override a recipe key, e.g. --set training.max_steps=20 "
                                        "(value parsed as YAML; repeatable)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the resolved recipe; load no model."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Delete the run already in output_dir and start "
                                   "over."),
    resume: bool = typer.Option(False, "--resume", help="Continue the unfinished run in output_dir even though "
                                "its recipe or data differ (recorded in run_info.json)."),
) -> None:
    """Train the detector a recipe describes (its `kind`). An unfinished run of the same recipe and data resumes
    from its last checkpoint; a finished run, or one of other settings, is never silently reused or rewritten.
    Multi-GPU: `accelerate launch --config_file recipes/accelerate/ddp.yaml -m ragtruth_spans train RECIPE`."""
    from ragtruth_spans.core.extras import require
    from ragtruth_spans.detectors.recipes import load_recipe

    with user_errors():
        require("train", "ragtruth-spans train")  # recipes are checked against transformers' names
        resolved = load_recipe(recipe, overrides)
        if dry_run:
            _check_gguf_file(resolved)
            sys.stdout.write(resolved.to_yaml())
            off = resolved.switched_off()
            if off:
                sys.stdout.write(f"# not read with these settings (left out above): {', '.join(off)}\n")
            return
        from ragtruth_spans.detectors.train import train

        try:
            result = train(resolved, overwrite=overwrite, resume=resume)
        except OSError as exc:  # model or tokenizer not found / not accessible
            fail(exc)
        if result.summary:  # the result, on stdout (also with --quiet); progress went to the log on stderr
            from ragtruth_spans.reporting.console import printable

            out.print(f"[bold green]done[/]: {escape(printable(result.summary))}")


def _check_gguf_file(recipe: object) -> None:
    """``--dry-run`` loads no model, but a recipe's ``model.gguf_file`` must exist and be a GGUF file (magic and
    structure), as training would find."""
    from pathlib import Path

    from ragtruth_spans.models.gguf import check_gguf_file

    model = getattr(recipe, "model", None)
    gguf_file = getattr(model, "gguf_file", None)
    if not gguf_file:
        return
    path = Path(gguf_file).expanduser()
    if not path.is_absolute():
        path = Path(model.name_or_path).expanduser() / path  # type: ignore[union-attr]
    check_gguf_file(path)
