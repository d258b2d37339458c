"""Detector families: what each ``kind`` of detector brings, and the table that lists them.

A family is one folder (or module) under ``ragtruth_spans/detectors/`` that defines a module-level
``FAMILY = Family(...)``: its ``kind``, how to load a saved run directory into a
:class:`~ragtruth_spans.detectors.base.Detector`, and, when it can be trained, its recipe class and train
function; it may also offer detectors that need no run directory, built by name (``named``).

:data:`BUILTIN_FAMILIES` maps each shipped kind to that module; :func:`register_family` adds one at run time (a
plugin, or a test). Family modules must stay light to import: heavy libraries are imported inside ``load`` and
``train``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal

from ragtruth_spans.core.errors import InputError

if TYPE_CHECKING:  # pragma: no cover
    from ragtruth_spans.detectors.base import Detector
    from ragtruth_spans.training.recipe import Recipe

BUILTIN_FAMILIES: dict[str, str] = {
    "entailment": "ragtruth_spans.detectors.entailment.family",
    "generative": "ragtruth_spans.detectors.generative.family",
    "llm-judge": "ragtruth_spans.detectors.judge.family",
    "rules": "ragtruth_spans.detectors.rules",
    "similarity": "ragtruth_spans.detectors.similarity.family",
    "stacked": "ragtruth_spans.detectors.stacked.family",
    "token-classification": "ragtruth_spans.detectors.token_classification.family",
    "two-tier": "ragtruth_spans.detectors.twotier.family",
}
"""``{kind: module defining FAMILY}`` of the families shipped with ragtruth-spans."""


@dataclass(frozen=True)
class Family:
    """One kind of detector.

    ``load(run_dir, **options)`` returns a detector from a directory that ``train`` wrote (options are the
    family's own, e.g. ``device`` or ``batch_size``; an unknown one is an :class:`InputError`).
    ``recipe``/``train``: the recipe class (``kind: Literal[kind]``) and ``train(recipe, *, resume, …)``, or None
    for families that are not trained. ``named``: ``{name: factory(**options)}`` of detectors built by name.
    ``extra``: the pip extra its detectors need (:mod:`ragtruth_spans.core.extras`; None: the core suffices);
    training always needs ``train``. ``extra_sources``: what its training does with ``data.extra``
    (:mod:`ragtruth_spans.training.data`): ``None`` refuses a recipe that names extra sources, ``"unweighted"``
    trains on them but refuses a ``weight`` other than 1, ``"weighted"`` uses the weights too.
    """

    kind: str
    summary: str
    load: Callable[..., Detector] | None = None
    recipe: type[Recipe] | None = None
    train: Callable[..., Any] | None = None
    named: Mapping[str, Callable[..., Detector]] = field(default_factory=dict)
    extra: str | None = "detect"
    extra_sources: Literal["unweighted", "weighted"] | None = None


_registered: dict[str, Family] = {}


def register_family(family: Family) -> None:
    """Make ``family`` known to the loader, the recipe schema and ``train`` (replacing one of the same kind)."""
    _registered[family.kind] = family


def get_family(kind: str) -> Family:
    """The family of ``kind``; an unknown kind raises :class:`InputError` listing the known ones."""
    if kind in _registered:
        return _registered[kind]
    if kind in BUILTIN_FAMILIES:
        return import_module(BUILTIN_FAMILIES[kind]).FAMILY
    known = ", ".join(sorted({*BUILTIN_FAMILIES, *_registered}))
    raise InputError(f"unknown detector kind {kind!r} (known kinds: {known})", field="kind")


def all_families() -> list[Family]:
    """Every known family: the built-in ones, then those registered at run time."""
    kinds = list(BUILTIN_FAMILIES) + [k for k in _registered if k not in BUILTIN_FAMILIES]
    return [get_family(kind) for kind in kinds]


def named_detectors() -> dict[str, tuple[Family, Callable[..., Detector]]]:
    """``{name: (family, factory)}`` of every detector that can be built by name."""
    return {name: (family, factory) for family in all_families() for name, factory in family.named.items()}


def check_options(kind: str, options: Mapping[str, Any], allowed: set[str]) -> None:
    """Raise :class:`InputError` when ``options`` holds a key that the ``kind`` family does not take."""
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise InputError(f"option(s) {', '.join(unknown)} do not apply to a {kind} detector "
                         f"(it takes: {', '.join(sorted(allowed)) or 'none'})")
