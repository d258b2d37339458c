"""Optional dependencies: which pip extra brings what, and one check with a one-line error.

``pip install ragtruth-spans`` installs the core only: prepare data, evaluate prediction files, write reports
(no torch). Each other part comes with an extra (see pyproject.toml): ``detect`` (torch, transformers,
sentence-transformers, the sentence-level baselines' splitters), ``train`` (``detect`` + TRL, datasets),
``serve`` (``detect`` + FastAPI, uvicorn), ``judge`` (the LLM judge's HTTP client), ``ray`` (``detect`` + Ray
Data: ``predict --engine ray``), ``all``.
:func:`require` checks that an extra's modules can be imported (without importing them) and otherwise raises
:class:`MissingExtra`, an :class:`~ragtruth_spans.core.errors.InputError`: one line, exit status 2.
"""

from __future__ import annotations

from importlib.util import find_spec

from ragtruth_spans.core.errors import InputError

EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "detect": ("torch", "transformers", "sentence_transformers", "peft", "accelerate", "pysbd", "yake",
               "rapidfuzz", "matplotlib", "lightgbm"),
    "train": ("torch", "transformers", "peft", "trl", "datasets", "accelerate"),
    "serve": ("fastapi", "uvicorn", "httpx"),
    "judge": ("httpx", "pysbd"),
    "ray": ("ray", "pyarrow"),
}
"""The modules each extra must make importable (a subset of what it installs)."""


class MissingExtra(InputError):
    """A command needs an optional dependency that is not installed."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported here."""
    return [m for m in EXTRA_MODULES[extra] if find_spec(m) is None]


def require(extra: str, purpose: str) -> None:
    """Raise :class:`MissingExtra` naming ``extra`` when one of its modules is missing (``purpose``: what needs
    it, e.g. ``"training"``)."""
    if extra not in EXTRA_MODULES:
        raise ValueError(f"unknown extra {extra!r}")
    missing = missing_modules(extra)
    if missing:
        raise MissingExtra(f"{purpose} needs the '{extra}' extra ({', '.join(missing)} not installed): "
                           f"pip install 'ragtruth-spans[{extra}]' (in a clone: pip install -e '.[{extra}]')")
