"""The ``ragtruth-spans`` command line (Typer). Each command is a thin wrapper over a module's function, in one
file per concern; heavy imports (torch, transformers) happen inside the commands so ``--help`` stays fast."""

from ragtruth_spans.cli import (  # noqa: F401,I001  (registers them, in pipeline order)
    data, importers, train, predict, detect, evaluate, benchmark, report, select, serve, quickstart,
)
from ragtruth_spans.cli.common import app


def main() -> None:  # pragma: no cover - entry point for `python -m ragtruth_spans`
    app()


__all__ = ["app", "main"]
