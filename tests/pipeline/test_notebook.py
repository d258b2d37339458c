"""The quickstart notebook is saved executed: valid nbformat, every code cell run in order, no error output, and
every `ragtruth_spans` name it imports exists (so a rename cannot leave it silently stale)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import nbformat

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_is_saved_executed_without_errors() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the notebook has no code cells"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "cells not run once, in order"
    assert all(c.outputs for c in code[1:]), "a code cell after the setup cell was saved without output"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


def test_quickstart_notebook_imports_exist() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    imported = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ragtruth_spans"):
                imported += [(node.module, alias.name) for alias in node.names]
    assert imported
    for module, name in imported:
        assert hasattr(importlib.import_module(module), name), f"{module}.{name}"
