"""The recipe schema: the union over the registered families' recipe classes, next to the family table.

A recipe names its family with ``kind:`` (``generative`` when absent) and is validated as a pydantic discriminated
union over every family's recipe class (:func:`ragtruth_spans.detectors.family.all_families`). The sections and
the :class:`~ragtruth_spans.training.recipe.Recipe` base live in :mod:`ragtruth_spans.training.recipe`; this
module is the part that must know the families: validation, ``--set`` overrides checked against the family's
schema, loading a recipe file, reading the recipe a run directory saved.
"""

from __future__ import annotations

import types
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Union

import yaml
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.detectors.family import all_families
from ragtruth_spans.runs.run_dir import DEFAULT_KIND
from ragtruth_spans.runs.run_info import RECIPE_FILE
from ragtruth_spans.training.recipe import SAVED_RUN, Recipe
from ragtruth_spans.training.recipe_files import load_yaml, parse_override, read_recipe_data, resolve_recipe_path


def recipe_classes() -> dict[str, type[Recipe]]:
    """``{kind: recipe class}`` of every registered family that can be trained."""
    return {f.kind: f.recipe for f in all_families() if f.recipe is not None}


def _recipe_adapter(classes: dict[str, type[Recipe]]) -> TypeAdapter:
    return _adapter_of(tuple(classes.values()))


@lru_cache(maxsize=8)
def _adapter_of(members: tuple[type[Recipe], ...]) -> TypeAdapter:
    """The validator of the union of ``members`` (built once per set of families: building it is slow)."""
    if len(members) == 1:
        return TypeAdapter(members[0])
    return TypeAdapter(Annotated[Union[members], Field(discriminator="kind")])


def _kind_of(data: dict[str, Any], classes: dict[str, type[Recipe]], source: str) -> str:
    kind = data.get("kind", DEFAULT_KIND)
    try:
        check_choice(kind, classes, "recipe kind", field="kind")
    except InputError as exc:
        raise InputError(f"invalid recipe {source}: {exc}") from None
    return kind


def _format_validation_error(exc: ValidationError, source: str, kind: str) -> str:
    lines = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        if loc and loc[0] == kind:  # the union's tag
            loc = loc[1:]
        msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
        lines.append(f"{'.'.join(loc)}: {msg}" if loc else msg)
    return f"invalid recipe {source}: " + "; ".join(lines)


def validate_recipe(data: Any, source: str = "<dict>", *, saved_run: bool = False) -> Recipe:
    """Validate a recipe dict (``kind`` defaults to ``generative``); errors become one :class:`InputError` naming
    every bad key path. A key the family does not read is an error, except in a recipe read back from a run
    directory (``saved_run``: older versions wrote every key of the shared sections)."""
    if not isinstance(data, dict):
        raise InputError(f"invalid recipe {source}: expected a mapping at the top level")
    classes = recipe_classes()
    data = {"kind": _kind_of(data, classes, source), **{k: v for k, v in data.items() if k != "kind"}}
    try:
        return _recipe_adapter(classes).validate_python(data, context={SAVED_RUN: saved_run})
    except ValidationError as exc:
        raise InputError(_format_validation_error(exc, source, data["kind"])) from None


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set each ``dotted.key=value`` in ``data`` (a recipe dict); a key the recipe's schema (that of its ``kind``,
    after any ``kind=`` override) does not have is an error."""
    parsed = [parse_override(item) for item in overrides]
    for keys, value in parsed:
        if keys == ["kind"]:
            data["kind"] = value
    root: type[BaseModel] = recipe_classes().get(data.get("kind", DEFAULT_KIND), Recipe)
    for keys, value in parsed:
        _set_key(data, root, keys, value)
    return data


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The section model of a field annotated ``Section`` or ``Section | None``; None for any other field."""
    import typing

    options = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    models = [a for a in options if isinstance(a, type) and issubclass(a, BaseModel)]
    return models[0] if len(models) == 1 and all(a is type(None) or a is models[0] for a in options) else None


def _set_key(data: dict[str, Any], root: type[BaseModel], keys: list[str], value: Any) -> None:
    model: type[BaseModel] | None = root
    node = data
    for depth, key in enumerate(keys):
        fields = model.model_fields if model is not None else {}
        if key not in fields:
            dotted = ".".join(keys[: depth + 1])
            raise InputError(f"unknown recipe key {dotted!r} (valid here: {', '.join(fields)})", field="--set")
        model = _section_model(fields[key].annotation)
        if depth == len(keys) - 1:
            node[key] = value
        else:
            if model is None:
                raise InputError(f"recipe key {'.'.join(keys[: depth + 1])!r} has no sub-keys", field="--set")
            if node.get(key) is None:  # an optional section that is off (null) is switched on with its defaults
                node[key] = {}
            node = node[key]
            if not isinstance(node, dict):
                raise InputError(f"recipe key {'.'.join(keys[: depth + 1])!r} is not a section", field="--set")


def load_recipe(name_or_path: str | Path, overrides: list[str] | None = None) -> Recipe:
    """Load a recipe file (or shipped name), apply ``key=value`` overrides, validate.

    >>> from ragtruth_spans import load_recipe
    >>> recipe = load_recipe("recommended-cpu", ["features.encoder=null", "output_dir=runs/fast"])
    >>> recipe.kind, recipe.features.encoder, recipe.output_dir
    ('stacked', None, 'runs/fast')
    >>> load_recipe("recommended-cpu", ["combiner.num_leaves=many"])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: ...combiner.num_leaves...
    """
    path = resolve_recipe_path(name_or_path)
    data = apply_overrides(read_recipe_data(path), list(overrides or []))
    return validate_recipe(data, source=str(path))


def read_run_recipe(run_dir: str | Path) -> Recipe:
    """The resolved recipe saved in a run directory; a missing or invalid file is an :class:`InputError`."""
    path = Path(run_dir) / RECIPE_FILE
    if not path.is_file():
        raise InputError("file not found (the training run writes it into its output directory)", path=path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    return validate_recipe(data, source=str(path), saved_run=True)


def read_finished_run(run_dir: str | Path, recipe_class: type[Recipe], key: str, types: type | tuple[type, ...]
                      ) -> tuple[Recipe, dict[str, Any]]:
    """``(recipe, run_info)`` of a finished run of ``recipe_class``: its ``run_info.json`` must hold ``key`` of
    ``types`` (what the family's ``train`` writes last); anything else is an :class:`InputError`."""
    from ragtruth_spans.runs.run_info import read_run_info

    recipe = read_run_recipe(run_dir)
    info = read_run_info(run_dir)
    kind = recipe_class.model_fields["kind"].default
    if not isinstance(recipe, recipe_class) or not isinstance(info.get(key), types) or isinstance(info.get(key), bool):
        raise InputError(f"not a finished {kind} run (run_info.json has no {key})", path=run_dir)
    return recipe, info
