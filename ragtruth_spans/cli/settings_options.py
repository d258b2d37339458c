"""Command-line options built from a settings dataclass: one declaration drives the Python API and the CLI.

:func:`with_settings` replaces a command's ``settings: SomeSettings`` parameter by one typer option per field of
the dataclass (flag, help, bounds and conversion from the field's metadata, see
:func:`ragtruth_spans.serving.settings.setting`), and gathers the values back into one instance; an invalid
combination (the dataclass's ``__post_init__`` raising :class:`~ragtruth_spans.core.errors.InputError`) is the
usual one-line error, exit 2.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import typing
from collections.abc import Callable
from typing import Any

import typer

from ragtruth_spans.cli.common import user_errors

logger = logging.getLogger(__name__)


def settings_options(cls: type) -> dict[str, tuple[Any, Any]]:
    """``{field: (type, typer option)}`` of the dataclass ``cls``'s fields that have a command-line option.

    Args:
        cls: a dataclass whose fields' metadata hold ``help``, ``flag``, ``min``, ``max``, ``cli_type``,
            ``cli_default`` (as :func:`~ragtruth_spans.serving.settings.setting` writes them).

    Returns:
        The options, in the order of the fields.

    >>> from ragtruth_spans.serving.settings import ServeSettings
    >>> settings_options(ServeSettings)["max_body_bytes"][1].param_decls
    ('--max-body-mb',)
    """
    hints = typing.get_type_hints(cls)
    out = {}
    for field in dataclasses.fields(cls):
        meta = field.metadata
        if not meta.get("cli", True) or "help" not in meta:
            continue
        bounds = {k: meta[k] for k in ("min", "max") if meta.get(k) is not None}
        flag = meta.get("flag") or f"--{field.name.replace('_', '-')}"
        option = typer.Option(meta["cli_default"], flag, help=meta["help"], **bounds)
        out[field.name] = (meta.get("cli_type") or hints[field.name], option)
    return out


def settings_from_options(cls: type, values: dict[str, Any]) -> Any:
    """An instance of ``cls`` from the options' ``values`` (each through its field's ``convert``).

    >>> from ragtruth_spans.serving.settings import ServeSettings
    >>> settings_from_options(ServeSettings, {"max_body_bytes": 0.5}).max_body_bytes
    524288
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs = {}
    for name, value in values.items():
        convert = fields[name].metadata.get("convert")
        kwargs[name] = convert(value) if convert is not None else value
    return cls(**kwargs)


def with_settings(command: Callable[..., Any], name: str = "settings") -> Callable[..., Any]:
    """``command`` with its parameter ``name`` (annotated with a settings dataclass) replaced, on the command line,
    by the dataclass's options (:func:`settings_options`, at the same place in the help), which reach it as one
    instance.

    Args:
        command: the command function.
        name: the parameter to replace.

    Returns:
        The command for ``app.command``.

    >>> from ragtruth_spans.serving.settings import ServeSettings
    >>> def show(settings: ServeSettings) -> int:
    ...     return settings.max_items
    >>> with_settings(show)(max_items=3, **{k: v[1].default for k, v in settings_options(ServeSettings).items()
    ...                                      if k != "max_items"})
    3
    """
    hints = typing.get_type_hints(command)
    cls = hints[name]
    options = settings_options(cls)
    parameters = []
    for parameter in inspect.signature(command).parameters.values():
        if parameter.name == name:
            parameters += [inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
                           for field, (kind, option) in options.items()]
        else:
            parameters.append(parameter.replace(annotation=hints.get(parameter.name, parameter.annotation),
                                                kind=inspect.Parameter.KEYWORD_ONLY))

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        with user_errors():
            settings = settings_from_options(cls, {field: kwargs.pop(field) for field in options})
        return command(**kwargs, **{name: settings})

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": hints.get("return")}
    return run
