"""Recipe files and ``--set`` overrides: shipped recipes by name, YAML that refuses a duplicate key, and
``key=value`` parsing. The schema they are validated against: :mod:`ragtruth_spans.training.recipe` (the union over
the families: :mod:`ragtruth_spans.detectors.recipes`).

Shipped recipes live in ``ragtruth_spans/recipes/`` and can be named without the ``.yaml`` suffix (``tiny-cpu``,
``llama-3.1-8b-instruct/qlora``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_text

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"


def resolve_recipe_path(name_or_path: str | Path) -> Path:
    """A recipe file path: an existing file, or a shipped recipe name (``tiny-cpu``, ``llama-2-13b/qlora``)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    shipped = RECIPES_DIR / (str(name_or_path) if str(name_or_path).endswith(".yaml") else f"{name_or_path}.yaml")
    if shipped.is_file():
        return shipped
    raise InputError(f"recipe not found: {name_or_path!r} is neither a file nor a shipped recipe "
                     f"({', '.join(shipped_recipes())})")


def shipped_recipes() -> list[str]:
    """Names of the recipes shipped with the package."""
    return sorted(str(p.relative_to(RECIPES_DIR).with_suffix("")) for p in RECIPES_DIR.rglob("*.yaml")
                  if "accelerate" not in p.parts)


def parse_override(item: str, *, flag: str = "--set") -> tuple[list[str], Any]:
    """``"training.max_steps=20"`` → ``(["training", "max_steps"], 20)``; the value is parsed as YAML. ``flag``
    names the command-line option in errors."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise InputError(f"{flag} {item!r} is not of the form key=value", field=flag)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise InputError(f"{flag} {item!r}: value is not valid YAML ({' '.join(str(exc).split())})",
                         field=flag) from None
    return key.strip().split("."), value


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a mapping naming one key twice is an error (PyYAML keeps the last value
    silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *base`` then overriding keys is the YAML idiom
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: PyYAML's own check reports it
                break
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {str(key)[:40]!r} (only one value can count: give it once)",
                    key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` that refuses a mapping with a duplicate key (``yaml.YAMLError``): every recipe and
    judge file is read with it."""
    return yaml.load(text, Loader=_UniqueKeyLoader)


def read_recipe_data(path: Path) -> dict[str, Any]:
    """The mapping in a recipe YAML file; bad YAML (a duplicate key included) or another top-level value is an
    :class:`InputError`."""
    try:
        data = load_yaml(read_text(path)) or {}
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", path=path) from None
    if not isinstance(data, dict):
        raise InputError("expected a mapping at the top level", path=path)
    return data
