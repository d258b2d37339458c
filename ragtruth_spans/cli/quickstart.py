"""``ragtruth-spans quickstart``: the shipped detector on the README's examples, measured on the embedded sample,
then the training path, on CPU."""

from __future__ import annotations

import logging
from pathlib import Path

import typer

from ragtruth_spans.cli.common import app, user_errors


@app.command("quickstart")
def quickstart_command(
    workdir: Path = typer.Option(Path("ragtruth-spans-quickstart"), "--workdir",
                                 help="Where examples, data, predictions, the trained detector and the reports are "
                                      "written."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the previous quickstart outputs in --workdir first "
                               "(by default finished steps are reused)."),
) -> None:
    """Five steps: detect the README's examples with the shipped detector → prepare the embedded sample → evaluate
    the shipped detector on its test split → train the recommended recipe on its train split → leaderboard beside
    baselines and an HTML report. Output fits the terminal (through a pipe: COLUMNS, else 80 columns)."""
    from ragtruth_spans.core import logs
    from ragtruth_spans.core.extras import require
    from ragtruth_spans.pipeline.quickstart import quickstart_console, run_quickstart

    # the steps' progress records at the quickstart's width too (stderr), at the level the options chose
    logs.configure(logs.verbosity(), console=quickstart_console(stderr=True))
    if not logs.verbose():  # the benchmark's per-detector lines: step 5 sums them up in one line instead
        logging.getLogger("ragtruth_spans.pipeline.benchmark").setLevel(logging.WARNING)
    with user_errors():
        require("train", "ragtruth-spans quickstart")
        run_quickstart(workdir, fresh=fresh, console=quickstart_console())
