"""``run_info.json``, the metadata every run directory ends with, read and checked (:func:`read_run_info`).

Every value a family reads from ``run_info.json`` that decides spans is validated by :func:`read_run_info`:
thresholds finite numbers in [0, 1], ``max_word_gap`` an integer >= 0.
The names of the files every run directory holds are here too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError

RUN_INFO_FILE = "run_info.json"
RECIPE_FILE = "recipe.yaml"
FINGERPRINT_FILE = "fingerprint.json"


def read_run_info(run_dir: str | Path) -> dict[str, Any]:
    """``run_info.json`` of a run directory (``{}`` when the file does not exist); bad JSON is an
    :class:`InputError` naming the file."""
    path = Path(run_dir) / RUN_INFO_FILE
    if not path.is_file():
        return {}
    from ragtruth_spans.core.jsonl import read_json_file

    info = read_json_file(path)
    if not isinstance(info, dict):
        raise InputError("expected a JSON object", path=path)
    check_run_values(info, path)
    return info


PROBABILITY_KEYS = ("threshold", "response_threshold")
"""Keys whose value (a number) is a probability threshold; ``thresholds`` holds a mapping of them."""
SKIPPED_SECTIONS = ("tuning", "libraries", "data_stats", "words", "feature_gain", "seconds", "peak_rss_mb",
                    "paper_thresholds")
"""Sections of ``run_info.json`` that only report (tuning grids, timings; ``data_stats``: the data counts of stacked
runs written before ``data.counts``): not read to decide spans."""


def _check_probability(value: Any, path: Path, field: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise InputError(f"must be a finite number in [0, 1], got {json.dumps(value)[:40]}", path=path, field=field)


def check_run_values(info: Mapping[str, Any], path: Path, prefix: str = "") -> None:
    """Validate the values of ``run_info.json`` that decide spans, wherever a family keeps them: every
    ``threshold``/``response_threshold``/``fill`` (None allowed) and every value of a ``thresholds`` mapping a
    finite number in [0, 1],
    every ``max_word_gap`` an integer >= 0. One :class:`InputError` naming the file and the field."""
    for key, value in info.items():
        field = f"{prefix}{key}"
        if key in SKIPPED_SECTIONS:
            continue
        if key in PROBABILITY_KEYS or (key == "fill" and value is not None):  # fill: None means no fill
            _check_probability(value, path, field)
        elif key == "thresholds":
            if not isinstance(value, Mapping):
                raise InputError(f"must map names to thresholds, got {type(value).__name__}", path=path, field=field)
            for name, threshold in value.items():
                _check_probability(threshold, path, f"{field}.{name}")
        elif key == "max_word_gap" and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InputError(f"must be an integer >= 0, got {json.dumps(value)[:40]}", path=path, field=field)
        elif isinstance(value, Mapping):
            check_run_values(value, path, f"{field}.")
