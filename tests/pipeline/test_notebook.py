"""The notebooks (quickstart, own data) are saved executed: valid nbformat, every code cell run in order, no error
output, and every `ragtruth_spans` name they import exists (so a rename cannot leave one silently stale)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
NAMES = ["quickstart.ipynb", "own_data.ipynb"]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_saved_executed_without_errors(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, "the notebook has no code cells"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), "cells not run once, in order"
    assert all(c.outputs for c in code[1:]), "a code cell after the setup cell was saved without output"
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]


@pytest.mark.parametrize("name", NAMES)
def test_notebook_imports_exist(name: str) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
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
