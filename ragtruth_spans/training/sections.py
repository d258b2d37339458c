"""The base of every recipe section: :class:`Strict` (unknown keys are errors) and :class:`Section` (booleans are
never read as numbers, flags take only booleans); the recipe's own sections build on them (:mod:`.recipe`,
:mod:`.data_recipe`, each family's ``recipe.py``)."""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


def _accepts_bool(annotation: Any) -> bool:
    if annotation is bool or annotation is Any:
        return True
    if get_origin(annotation) in (Union, types.UnionType, Annotated):
        return any(_accepts_bool(arg) for arg in get_args(annotation))
    return False


class Strict(BaseModel):
    """Unknown keys are errors, assignments are validated."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Section(Strict):
    """Base of every recipe section: :class:`Strict`, and ``true``/``false`` are never read as numbers
    (``num_epochs: true`` is an error, not 1.0) while flags take only ``true``/``false``."""

    @field_validator("*", mode="before")
    @classmethod
    def _booleans_are_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        annotation = cls.model_fields[info.field_name].annotation
        if isinstance(value, bool) and not _accepts_bool(annotation):
            raise ValueError(f"expected {getattr(annotation, '__name__', annotation)}, got the boolean {value}")
        if annotation is bool and not isinstance(value, bool):
            raise ValueError(f"expected true or false, got {value!r}")
        return value
