"""The ``ragtruth-spans`` command line (typer). Each command is a thin wrapper over a module's function;
heavy imports (torch, transformers) happen inside the commands so ``--help`` stays fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from .schema import InputError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find the exact hallucinated spans in RAG answers (RAGTruth).")
console = Console(stderr=True)


def fail(exc: Exception) -> None:
    """Print a one-line error (no traceback) and exit with status 2."""
    console.print(f"[bold red]error:[/] {exc}", highlight=False, markup=True)
    raise typer.Exit(code=2)


# --- prepare (issue: foundation / data) ------------------------------------------------------------------

# --- evaluate (issue: foundation / evaluator) --------------------------------------------------------------

# --- train (issue: QLoRA training) -------------------------------------------------------------------------

# --- predict (issue: inference) ----------------------------------------------------------------------------

# --- quickstart (issue: inference) -------------------------------------------------------------------------

# --- select (issue: best-of-N) -----------------------------------------------------------------------------


def main() -> None:  # pragma: no cover - entry point for `python -m ragtruth_spans`
    app()
