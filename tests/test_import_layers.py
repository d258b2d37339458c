"""Imports flow one way: every ``ragtruth_spans`` import (lazy ones inside functions included) goes from a
higher layer to a lower one, so the top-level subpackages form no cycle, and no two modules import each other
through a chain."""

from __future__ import annotations

import ast
from pathlib import Path

import ragtruth_spans

PACKAGE = Path(ragtruth_spans.__file__).parent
LAYERS = ["core", "data", "evaluation", "reporting", "models", "runs", "training", "detectors", "evidence", "selection",
          "serving", "pipeline", "cli"]
"""Lowest first: a subpackage may import only the ones before it (and itself)."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, known: set[str] | None = None) -> set[str]:
    """``ragtruth_spans`` modules that ``path`` imports anywhere in its body (relative imports resolved;
    ``from package import name`` counts as an import of the submodule ``package.name`` when ``known`` has it)."""
    this = module_name(path)
    package = this if path.name == "__init__.py" else this.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if known is not None and sub in known else base)
    return {m for m in found if m.split(".")[0] == "ragtruth_spans"}


def module_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    known = set(files)
    return {name: {m for m in imported_modules(path, known) if m in files and m != name}
            for name, path in files.items()}


def subpackage(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (PACKAGE / parts[1]).is_dir()) else None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_every_subpackage_has_a_layer():
    subpackages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert subpackages - {"recipes"} <= set(LAYERS), sorted(subpackages - set(LAYERS))


def test_lower_layers_never_import_higher_ones():
    wrong = []
    for module, imports in module_graph().items():
        src = subpackage(module)
        for target in imports:
            dst = subpackage(target)
            if src in LAYERS and dst in LAYERS and LAYERS.index(dst) > LAYERS.index(src):
                wrong.append(f"{module} ({src}) imports {target} ({dst})")
    assert not wrong, "\n".join(sorted(wrong))


def test_no_cycle_between_subpackages():
    graph: dict[str, set[str]] = {}
    for module, imports in module_graph().items():
        src = subpackage(module)
        if src is not None:
            graph.setdefault(src, set()).update(d for t in imports if (d := subpackage(t)) not in (None, src))
    assert find_cycle(graph) is None, find_cycle(graph)


def test_no_cycle_between_modules():
    assert find_cycle(module_graph()) is None, " → ".join(find_cycle(module_graph()) or [])


def test_the_checker_sees_a_cycle_and_an_upward_import():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    assert subpackage("ragtruth_spans.training.recipe") == "training"
    assert "ragtruth_spans.detectors.family" in imported_modules(PACKAGE / "detectors" / "recipes.py")
