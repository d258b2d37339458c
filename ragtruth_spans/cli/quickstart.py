"""``ragtruth-spans quickstart``: the whole pipeline on the embedded sample, on CPU."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import app, out, user_errors


@app.command("quickstart")
def quickstart_command(
    workdir: Path = typer.Option(Path("ragtruth-spans-quickstart"), "--workdir",
                                 help="Where data, model, predictions and report are written."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1,
                                            help="Override the tiny-cpu recipe's training steps."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the previous quickstart outputs in --workdir first "
                               "(by default finished steps are reused)."),
) -> None:
    """Run the whole pipeline on the embedded sample on CPU: prepare → train tiny-cpu → predict → evaluate →
    train the MiniLM token classifier → leaderboard beside baselines."""
    from ragtruth_spans.core.extras import require
    from ragtruth_spans.pipeline.quickstart import run_quickstart

    with user_errors():
        require("train", "ragtruth-spans quickstart")
        run_quickstart(workdir, max_steps=max_steps, fresh=fresh, console=out)
