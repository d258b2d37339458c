"""The gate's block policy (``--block-above``, ``--block-mode``) and what it does with each choice of an answer.

One rule for what cannot be checked: a choice the gate could not judge (its content a list of parts, tool calls,
a refusal, empty, over ``--max-chars``, the detector failing or the service too busy past the wait) is treated as
one above the threshold — withheld in ``replace`` mode, delivered with a notice saying it was not checked in
``annotate`` mode. Without ``--block-above`` nothing is changed; the ``hallucinations`` object of the choice says
``"status": "unchecked"`` and why (``error``) in every mode. docs/SERVING.md has the table.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ragtruth_spans.core.fields import is_blank

logger = logging.getLogger(__name__)

DROPPED_WHEN_WITHHELD = ("content", "tool_calls", "function_call", "refusal")
"""The fields of a withheld choice's message (or delta) taken out."""


@dataclass
class Answer:
    """One choice to check: its ``index``, its text and why it cannot be checked (None: it can)."""

    index: int
    text: str
    why: str | None = None


def why_unchecked(message: Any, text: Any = None) -> str | None:
    """Why a choice's ``message`` (or the fields of its stream) cannot be checked; None when ``text`` (its
    content) is a text to check.

    >>> why_unchecked({"content": None, "tool_calls": [{}]}), why_unchecked({"content": "It opened."})
    ('it calls tools (tool_calls)', None)
    """
    if not isinstance(message, dict):
        return "the choice has no message"
    content = message.get("content") if text is None else text
    if message.get("tool_calls") or message.get("function_call"):
        return "it calls tools (tool_calls)"
    if message.get("refusal"):
        return "it is a refusal (refusal)"
    if isinstance(content, list):
        return "its content is a list of parts, not a text"
    if not isinstance(content, str):
        return "it has no text content"
    if is_blank(content):  # /v1/detect's rule: only whitespace or invisible characters
        return "the answer is empty"
    return None


def unchecked(index: int, why: str) -> dict[str, Any]:
    """The ``hallucinations`` object of a choice that was not checked."""
    return {"object": "hallucinations", "index": index, "status": "unchecked", "spans": [], "score": None,
            "error": f"not checked: {why}"}


def notice(found: dict[str, Any], block_above: float | None, replace: bool) -> str | None:
    """The notice the policy puts in the choice of ``found`` (its ``hallucinations``), None when it lets it
    through as it is; sets ``found["blocked"]``."""
    checked = found.get("status") == "checked"
    score = found.get("score")
    found["blocked"] = block_above is not None and (not checked or (score is not None and score > block_above))
    if not found["blocked"]:
        return None
    if not checked:
        why = found.get("error", "not checked").removeprefix("not checked: ")
        return (f"[withheld by the hallucination gate: the answer could not be checked ({why})]" if replace else
                f"\n\n[hallucination gate: this answer was not checked ({why})]")
    if replace:
        return (f"[withheld by the hallucination gate: the answer's hallucination score {score:.2f} is above "
                f"{block_above:.2f}]")
    return (f"\n\n[hallucination gate: this answer may state things its sources do not support (score {score:.2f} "
            f"> {block_above:.2f})]")


def applied(message: dict[str, Any], text: str, replace: bool) -> dict[str, Any]:
    """``message`` with a policy notice ``text``: in its place (``replace``: the content, tool calls and refusal
    taken out) or appended to its content (a text, a list of parts, or none).

    >>> applied({"role": "assistant", "content": "Hi."}, " [note]", False)["content"]
    'Hi. [note]'
    """
    if replace:
        return {k: v for k, v in message.items() if k not in DROPPED_WHEN_WITHHELD} | {"content": text}
    content = message.get("content")
    if isinstance(content, str) and content:
        return message | {"content": content + text}
    if isinstance(content, list):
        return message | {"content": [*content, {"type": "text", "text": text}]}
    return message | {"content": text.lstrip()}


def check_header(found: list[dict[str, Any]]) -> str:
    """The ``X-Hallucination-Check`` header of an answer whose choices' checks are ``found``: ``checked`` when
    every choice was, else ``unchecked; <why>`` (the first one not checked)."""
    for one in found:
        if one.get("status") != "checked":
            prefix = f"choice {one['index']}: " if len(found) > 1 else ""
            return f"unchecked; {prefix}{one.get('error', 'not checked').removeprefix('not checked: ')}"
    return "checked"
