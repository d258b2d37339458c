"""One edit of a clean response into a record with one typed gold span: the RAGTruth type of each augmentation
kind, the id an augmented record gets, and the two ways an edit makes its record (a replaced or an inserted piece
of text, which becomes the only gold span: ``response[start:end] == span.text``, half-open, characters). Used by
the kinds of :mod:`.augment` and :mod:`.augment_transfer`.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ragtruth_spans.core.types import Record, Span

TYPES = {"number": "Evident Conflict", "entity": "Evident Conflict", "negation": "Subtle Conflict",
         "clause": "Evident Baseless Info", "qualifier": "Subtle Baseless Info",
         "date": "Evident Conflict", "unit": "Evident Conflict", "quantity": "Subtle Conflict",
         "antonym": "Evident Conflict", "comparison": "Evident Conflict", "name-new": "Evident Conflict",
         "attribution": "Evident Baseless Info", "figure": "Evident Baseless Info",
         "recommendation": "Evident Baseless Info", "addition": "Evident Baseless Info",
         "sentence": "Evident Baseless Info", "json-false": "Evident Conflict",
         "json-invented": "Evident Baseless Info"}
"""The RAGTruth hallucination type of each augmentation kind."""
AUGMENTED_ID = "#aug-"
"""What an augmented record's id carries (``<id>#aug-<kind>``)."""
NAME = re.compile(r"(?<![\w])[A-Z][a-z]+(?: [A-Z][a-z]+)*")
"""A capitalised name of one or more words."""
SENTENCE = re.compile(r"[^.!?\n]+[.!?](?=\s|$)")
"""A sentence ending in ``.``, ``!`` or ``?``."""


def edited(record: Record, kind: str, start: int, end: int, new: str) -> Record:
    """``record`` with ``response[start:end]`` replaced by ``new``, which becomes the only gold span."""
    response = record.response[:start] + new + record.response[end:]
    span = Span(start, start + len(new), TYPES[kind], new)
    return replace(record, id=f"{record.id}{AUGMENTED_ID}{kind}", response=response, spans=[span])


def inserted(record: Record, kind: str, at: int, new: str, span_start: int, span_end: int) -> Record:
    """``record`` with ``new`` inserted at ``at``; ``new[span_start:span_end]`` becomes the only gold span."""
    response = record.response[:at] + new + record.response[at:]
    span = Span(at + span_start, at + span_end, TYPES[kind], new[span_start:span_end])
    return replace(record, id=f"{record.id}{AUGMENTED_ID}{kind}", response=response, spans=[span])
