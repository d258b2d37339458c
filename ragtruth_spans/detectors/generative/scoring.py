"""Confidence scores of the generative detector, both probabilities of the model itself.

- Response score ``Detection.score = 1 - P(clean)``: ``P(clean)`` is the probability that the model generates
  exactly the clean answer — the token ids that training put after the prompt for the target ``[]``
  (:func:`clean_completion_ids`), up to and including the first end-of-sequence token.
- Span score ``Span.score``: the mean probability of the generated tokens that spell the item's ``text`` value
  (:func:`item_scores`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ragtruth_spans.detectors.generative import prompts
from ragtruth_spans.detectors.shared.parsing import ParsedItem


@dataclass
class Generation:
    """One greedy generation: ``text`` (special tokens removed), the generated ``token_ids`` up to and including
    the first end-of-sequence token (padding excluded), and the model's probability of each of them."""

    text: str
    token_ids: list[int]
    token_probs: list[float]


def stop_token_ids(tokenizer: Any, eos_token_id: int | Sequence[int] | None = None) -> set[int]:
    """Token ids that end a generation: the generation config's ``eos_token_id`` (an int or a list) and the
    tokenizer's EOS."""
    ids = set(eos_token_id if isinstance(eos_token_id, (list, tuple)) else
              [eos_token_id] if eos_token_id is not None else [])
    if tokenizer.eos_token_id is not None:
        ids.add(tokenizer.eos_token_id)
    return ids


def clean_completion_ids(tokenizer: Any, messages: list[dict[str, str]], prompt_ids: Sequence[int],
                         stop_ids: Iterable[int] = ()) -> list[int]:
    """The token ids the model must generate for the clean answer ``[]``, derived as training does (TRL
    prompt-completion): the ids of the whole chat with the assistant message ``prompts.format_target([])``,
    after the ``prompt_ids`` (the generation prompt). They are cut after the first of ``stop_ids`` (generation
    ends there; a template may add tokens after its end-of-turn, e.g. a newline). When the tokenized prompt is
    not a prefix of the tokenized chat (a template rendering the prompt differently), the completion starts where
    the two diverge, as in TRL."""
    text = prompts.render_conversation(tokenizer, messages, prompts.format_target([]))
    full = tokenizer(text, add_special_tokens=False)["input_ids"]
    common = 0
    while common < min(len(full), len(prompt_ids)) and full[common] == prompt_ids[common]:
        common += 1
    completion = list(full[common:])
    stops = set(stop_ids)
    for k, token in enumerate(completion):
        if token in stops:
            return completion[:k + 1]
    return completion


def hallucination_score(clean_logprob: float) -> float:
    """``1 - P(clean)`` from ``log P(clean)``, clipped to [0, 1]."""
    return min(1.0, max(0.0, 1.0 - math.exp(clean_logprob)))


def token_char_ends(tokenizer: Any, token_ids: Sequence[int]) -> list[int]:
    """For each generated token, the length of the text decoded up to and including it (incremental decoding,
    special tokens skipped, made non-decreasing): token ``k`` spells characters ``[ends[k-1], ends[k])`` of the
    decoded text. A token that completes a multi-byte character split across tokens may span 0 characters."""
    ends: list[int] = []
    longest = 0
    for k in range(1, len(token_ids) + 1):
        longest = max(longest, len(tokenizer.decode(list(token_ids[:k]), skip_special_tokens=True)))
        ends.append(longest)
    return ends


def locate_items(raw: str, items: Sequence[ParsedItem]) -> list[tuple[int, int] | None]:
    """Character range ``[start, end)`` in ``raw`` of each item's ``text`` value, searched left to right from the
    end of the previous one: the JSON-escaped form between quotes first, then the escaped form, then the text as
    is (e.g. a single-quoted, repaired output); None when not found."""
    cursor = 0
    found: list[tuple[int, int] | None] = []
    for item in items:
        escaped = json.dumps(item.text, ensure_ascii=False)[1:-1]
        where = None
        for needle, inner in ((f'"{escaped}"', 1), (escaped, 0), (item.text, 0)):
            pos = raw.find(needle, cursor)
            if pos >= 0:
                where = (pos + inner, pos + len(needle) - inner)
                break
        found.append(where)
        if where is not None:
            cursor = where[1]
    return found


def item_scores(tokenizer: Any, generation: Generation, items: Sequence[ParsedItem]) -> list[float]:
    """Confidence of each parsed item: the mean probability of the generated tokens overlapping its ``text`` value
    in the generated text (:func:`locate_items`, :func:`token_char_ends`; a zero-width token counts when it sits
    inside the range). An item that cannot be located gets the mean probability of all generated tokens (end of
    sequence included)."""
    probs = generation.token_probs
    overall = sum(probs) / len(probs) if probs else 0.0
    ranges = locate_items(generation.text, items)
    if all(r is None for r in ranges):
        return [overall] * len(items)
    ends = token_char_ends(tokenizer, generation.token_ids)
    scores = []
    for where in ranges:
        picked = [] if where is None else [
            p for k, p in enumerate(probs)
            if _overlaps(ends[k - 1] if k else 0, ends[k], *where)]
        scores.append(sum(picked) / len(picked) if picked else overall)
    return scores


def _overlaps(token_start: int, token_end: int, start: int, end: int) -> bool:
    if token_start == token_end:
        return start < token_start <= end
    return token_start < end and token_end > start


