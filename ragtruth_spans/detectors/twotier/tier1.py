"""Tier 1: which response sentences are **no-info** (nothing in them can be checked against the context), so the
two-tier detector never flags them.

RAGHalu trained an encoder for this tier on its own labels; RAGTruth has no such labels, so tier 1 here is a small
set of named rules, each matching a whole (trimmed) sentence, checked in this order:

- ``greeting``: only a courtesy word or two ("Sure!", "Certainly.", "Hello,", "Thank you!");
- ``question``: a question back to the user (ends with "?");
- ``cannot-answer``: the answer says the passages do not give what was asked ("Unable to answer based on given
  passages.", "The passages do not provide ...", "There is no information about ...");
- ``meta-intro``: a lead-in that announces the answer and ends with a colon ("Here's a summary of the article:",
  "Based on the provided passages, here are the steps to ...:", "... is as follows:");
- ``heading``: a label of at most three words ending with a colon ("Ingredients:");
- ``closing``: meta talk at the end ("I hope this helps!", "Let me know if you have other questions.").

:func:`tier1_report` measures the rules against gold spans: a filtered sentence that a gold span overlaps is a
tier-1 error (the detector can never flag it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ragtruth_spans.core.intervals import covered_length, merge_intervals, overlap_length
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.shared.sentences import split_sentences

_COURTESY = r"(sure|certainly|of course|absolutely|okay|ok|hello|hi|hey|great|thank you|thanks|you're welcome)"
NO_INFO_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("greeting", re.compile(rf"^{_COURTESY}(\s+{_COURTESY})?[\s!.,]*$", re.IGNORECASE)),
    ("question", re.compile(r"\?[\s\"')\]]*$")),
    ("cannot-answer", re.compile(
        r"\b(unable to answer|cannot answer|can't answer|can not answer|not able to answer"
        r"|(passages?|context|text|article|data|information)( provided| given)? (do|does|did) not (provide|contain|"
        r"mention|include|specify|say|give|offer|state)"
        r"|there (is|was) no (specific )?(information|mention))\b", re.IGNORECASE)),
    ("meta-intro", re.compile(
        r"^(sure[,!.]?\s*)?((here|below)\b|based on the (given|provided)\b|according to the (given|provided)\b)"
        r".*:[\s\"']*$|\b(as follows|the following)\s*:[\s\"']*$", re.IGNORECASE | re.DOTALL)),
    ("heading", re.compile(r"^[^\s:]+(\s+[^\s:]+){0,2}\s*:[\s\"']*$")),
    ("closing", re.compile(r"^(i hope|hope this|let me know|please let me know|feel free|if you have any"
                           r"|is there anything else)\b", re.IGNORECASE)),
)
RULE_NAMES: tuple[str, ...] = tuple(name for name, _ in NO_INFO_RULES)


def no_info_rule(sentence: str) -> str | None:
    """The name of the first tier-1 rule that ``sentence`` (trimmed) matches, or None for a verifiable one."""
    for name, pattern in NO_INFO_RULES:
        if pattern.search(sentence):
            return name
    return None


def tier1_report(records: Sequence[Record], *, examples: int = 3) -> dict[str, Any]:
    """What tier 1 filters out of ``records`` and how often a gold span overlaps a filtered sentence (an error):
    counts overall and per rule, the gold characters inside filtered sentences, and a few example sentences."""
    by_rule = {name: {"filtered": 0, "with_gold_span": 0, "examples": [], "error_examples": []}
               for name in RULE_NAMES}
    sentences = filtered = errors = gold_chars = gold_chars_filtered = 0
    for record in records:
        gold = merge_intervals(record.spans)
        gold_chars += covered_length(gold)
        for start, end in split_sentences(record.response):
            sentences += 1
            rule = no_info_rule(record.response[start:end])
            if rule is None:
                continue
            filtered += 1
            inside = overlap_length(gold, [(start, end)])
            entry = by_rule[rule]
            entry["filtered"] += 1
            text = record.response[start:end][:200]
            if inside:
                errors += 1
                gold_chars_filtered += inside
                entry["with_gold_span"] += 1
                if len(entry["error_examples"]) < examples:
                    entry["error_examples"].append(text)
            elif len(entry["examples"]) < examples and text not in entry["examples"]:
                entry["examples"].append(text)
    return {"responses": len(records), "sentences": sentences, "filtered": filtered,
            "filtered_with_gold_span": errors,
            "error_rate": errors / filtered if filtered else None,
            "gold_chars": gold_chars, "gold_chars_in_filtered": gold_chars_filtered, "by_rule": by_rule}
