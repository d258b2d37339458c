"""Contexts that are JSON records (RAGTruth's Data2txt businesses, any structured source rendered as JSON)."""

from __future__ import annotations

import json
from typing import Any


def record_context(record: Any) -> str:
    """A JSON record (an object, e.g. RAGTruth's Data2txt business or an infobox) as the context text the detector
    reads: one line of JSON, keys in their order, non-ASCII kept (how ``prepare`` renders a Data2txt source).

    >>> record_context({"name": "Café", "stars": 4.5})
    '{"name": "Café", "stars": 4.5}'
    """
    return json.dumps(record, ensure_ascii=False)


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
