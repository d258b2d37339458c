"""``ragtruth-spans train``: train any detector family from a recipe (its ``kind``)."""

from __future__ import annotations

import sys

import typer

from ragtruth_spans.cli.common import app, err, fail, user_errors


@app.command("train")
def train_command(
    recipe: str = typer.Argument(..., help="Recipe YAML path or shipped name (tiny-cpu, "
                                 "llama-3.1-8b-instruct/qlora, ...)."),
    overrides: list[str] = typer.Option([], "--set", help="Override a recipe key, e.g. --set training.max_steps=20 "
                                        "(value parsed as YAML; repeatable)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the resolved recipe; load no model."),
) -> None:
    """Train the detector a recipe describes (its `kind`: generative QLoRA span writer, ...); resumes from the
    last checkpoint in the output dir. Multi-GPU: `accelerate launch --config_file recipes/accelerate/ddp.yaml
    -m ragtruth_spans train RECIPE`."""
    from ragtruth_spans.training.recipe import load_recipe

    with user_errors():
        resolved = load_recipe(recipe, overrides)
        if dry_run:
            sys.stdout.write(resolved.to_yaml())
            return
        from ragtruth_spans.training.run import train

        try:
            train(resolved, console=err)
        except OSError as exc:  # model or tokenizer not found / not accessible
            fail(exc)
