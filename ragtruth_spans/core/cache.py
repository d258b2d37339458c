"""The one cache root of the package: where converted GGUF models, LM-gain features and judge answers are kept.

``$RAGTRUTH_SPANS_CACHE``, else ``$XDG_CACHE_HOME/ragtruth-spans``, else ``~/.cache/ragtruth-spans``; each user of
the cache keeps its files in its own subfolder (``gguf/``, ``judge/``).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "RAGTRUTH_SPANS_CACHE"
"""Environment variable naming the cache root."""


def cache_root() -> Path:
    """``$RAGTRUTH_SPANS_CACHE``, else ``$XDG_CACHE_HOME/ragtruth-spans``, else ``~/.cache/ragtruth-spans``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "ragtruth-spans"
