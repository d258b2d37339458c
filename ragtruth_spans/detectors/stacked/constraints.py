"""What the stacked detector's word model may learn (``combiner.monotone``, ``combiner.additive_priors``, both off
in every recipe): the column families by what they measure, read as LightGBM's monotone and interaction
constraints. Columns a family does not list (members', LM columns) are left free."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SUPPORT_COLUMNS = frozenset({
    "in_context", "stem_in_context", "fuzzy", "in_question", "true_key", "ngram", "ngram_stem", "number_in_context",
    "sentence_ngram", "sentence_max_ngram", "sentence_cosine", "synonym_in_context", "soft_support", "soft_support_3",
    "sentence_soft_support"})
"""Columns that measure how well the context supports a word or its sentence (more: less likely hallucinated)."""
CONTRADICTION_COLUMNS = frozenset({
    "false_key", "unsupported_3", "unsupported_8", "response_unsupported", "sentence_unsupported", "swap",
    "swap_one_side", "negation_added", "negation_dropped", "sentence_conflict", "number_near", "polarity",
    "role_swap", "contrast_graded", "reversed_by_numbers"})
"""Columns that measure what the context contradicts or leaves unsupported around a word (more: more likely)."""
PRIOR_COLUMNS = frozenset({
    "task_QA", "task_Summary", "task_Data2txt", "log_response_words", "log_context_words", "sentence_position",
    "sentence_length", "word_position"})
"""Columns that describe the dataset rather than the word's support: the task, lengths and positions."""


def monotone_directions(names: Sequence[str]) -> list[int]:
    """Per column, ``-1`` for a support column (:data:`SUPPORT_COLUMNS`: more support never makes a word
    more likely hallucinated), ``1`` for a contradiction or unsupported-neighbourhood column
    (:data:`CONTRADICTION_COLUMNS`), ``0`` otherwise.

    >>> monotone_directions(["in_context", "swap", "length"])
    [-1, 1, 0]
    """
    return [-1 if name in SUPPORT_COLUMNS else 1 if name in CONTRADICTION_COLUMNS else 0 for name in names]


def interaction_groups(names: Sequence[str]) -> list[list[int]]:
    """Two groups of column indices no tree mixes: the dataset priors (:data:`PRIOR_COLUMNS`: task,
    lengths, positions) and everything else, so a prior shifts a word's log-odds but never changes how support
    or a contradiction reads.

    >>> interaction_groups(["in_context", "task_QA", "swap"])
    [[1], [0, 2]]
    """
    priors = [i for i, name in enumerate(names) if name in PRIOR_COLUMNS]
    return [group for group in (priors, [i for i in range(len(names)) if i not in priors]) if group]


def lightgbm_constraints(names: Sequence[str], *, monotone: bool, additive_priors: bool) -> dict[str, Any]:
    """The LightGBM parameters that ask for them over the columns ``names`` (none when neither is asked).

    >>> lightgbm_constraints(["in_context", "task_QA"], monotone=True, additive_priors=False)
    {'monotone_constraints': [-1, 0], 'monotone_constraints_method': 'intermediate'}
    """
    params: dict[str, Any] = {}
    if monotone:
        params.update(monotone_constraints=monotone_directions(names), monotone_constraints_method="intermediate")
    if additive_priors:
        params["interaction_constraints"] = interaction_groups(names)
    return params
