"""Contexts that are JSON records (RAGTruth's Data2txt businesses, any structured source rendered as JSON)."""

from __future__ import annotations

import json
from typing import Any


def json_record(context: str) -> Any | None:
    """The parsed JSON of a context that is one JSON object, None for any other text (prose, broken JSON).

    >>> json_record('{"name": "Cafe", "stars": 4.5}')["stars"], json_record("A cafe rated 4.5.")
    (4.5, None)
    """
    if not context.lstrip().startswith("{"):
        return None
    try:
        return json.loads(context)
    except (ValueError, RecursionError):
        return None
