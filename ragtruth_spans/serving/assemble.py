"""One chat completion assembled from the chunks of a streamed one: what the gate answers a client that asked for
the whole answer when it had the upstream stream it (``--stream-upstream``, :func:`~ragtruth_spans.serving.proxy.
complete_from_stream`), so that the answer is checked while it arrives.

The rule is the OpenAI SDK's for accumulating deltas: texts are joined, lists of objects with an ``index`` merged
by it, other lists extended, objects merged; identifiers (``index``, ``id``, ``type``, ``role``) and other values
are replaced (some servers repeat the role in every chunk).
"""

from __future__ import annotations

import copy
from typing import Any

REPLACED = frozenset({"index", "id", "type", "role"})
"""Keys whose value is replaced, never joined, when a later chunk repeats them."""
CHUNK_ONLY = frozenset({"object", "choices"})
"""A chunk's top-level keys that a completion does not take as they are."""


def accumulate(acc: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """``acc`` with ``delta`` added (see the module docstring); ``acc`` is changed and returned.

    Args:
        acc: what the earlier deltas made.
        delta: the next delta (or choice, or chunk) of the stream.

    Returns:
        ``acc``.

    >>> accumulate({"role": "assistant", "content": "It opened"}, {"role": "assistant", "content": " in 1999."})
    {'role': 'assistant', 'content': 'It opened in 1999.'}
    """
    for key, value in delta.items():
        old = acc.get(key)
        if value is None:
            acc.setdefault(key, None)  # a null never erases what came before
        elif old is None or key in REPLACED:
            acc[key] = copy.deepcopy(value) if isinstance(value, (dict, list)) else value
        elif isinstance(old, str) and isinstance(value, str):
            acc[key] = old + value
        elif isinstance(old, dict) and isinstance(value, dict):
            accumulate(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            _extend(old, value)
        else:
            acc[key] = value
    return acc


def _extend(old: list[Any], new: list[Any]) -> None:
    """``new``'s entries into ``old``: an object with an ``index`` merged into the entry of that index (a tool
    call's pieces), anything else appended (log probabilities of the next tokens)."""
    for entry in new:
        index = entry.get("index") if isinstance(entry, dict) else None
        same = next((e for e in old if isinstance(e, dict) and e.get("index") == index), None) \
            if isinstance(index, int) else None
        if same is not None:
            accumulate(same, entry)
        else:
            old.append(copy.deepcopy(entry))


def assemble(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``chat.completion`` that the streamed ``chunks`` (``chat.completion.chunk`` objects, in order, a final
    usage-only chunk included) make: the first chunk's id, created and model (later values kept when given),
    each choice's ``message`` from its deltas (role ``assistant`` unless one says otherwise, ``content`` None when
    no text came), its ``logprobs`` and its last ``finish_reason``, and the ``usage``; choices by index.

    >>> assemble([{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
    ...            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
    ...           {"id": "c", "choices": [{"index": 0, "delta": {"content": "."}, "finish_reason": "stop"}]},
    ...           {"id": "c", "choices": [], "usage": {"total_tokens": 3}}])["choices"][0]["message"]
    {'role': 'assistant', 'content': 'Hi.'}
    """
    out: dict[str, Any] = {"id": None, "object": "chat.completion", "created": None, "model": None}
    choices: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for key, value in chunk.items():
            if key not in CHUNK_ONLY and value is not None:
                out[key] = value
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            index = choice.get("index", 0)
            index = index if isinstance(index, int) and not isinstance(index, bool) else 0  # as the stream reads it
            mine = choices.setdefault(index, {"index": index, "message": {"role": "assistant", "content": None},
                                              "logprobs": None, "finish_reason": None})
            delta = choice.get("delta")
            if isinstance(delta, dict):
                accumulate(mine["message"], delta)
            accumulate(mine, {k: v for k, v in choice.items() if k not in ("index", "delta", "finish_reason")})
            if choice.get("finish_reason") is not None:
                mine["finish_reason"] = choice["finish_reason"]
    return out | {"choices": [choices[i] for i in sorted(choices)]}
