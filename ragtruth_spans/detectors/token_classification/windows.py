"""Model inputs that fit ``max_length``: context windows beside the response, and their aggregation.

One input is ``[start] question [sep] context-window [sep] response-segment [end]`` (``question [sep]`` whenever
the item has a non-empty question, whatever its task; RAGTruth gives one to QA records only), where
``start``/``end`` are the special tokens of the tokenizer's own pair template (BERT: ``[CLS]`` … ``[SEP]``; Llama 3:
``<|begin_of_text|>``) and ``sep`` is the template's separator when the tokenizer has a sep token, else the text
``"\\n\\n"`` (decoders: the context comes first, so causal attention lets every response token see it).

- The context is tokenized once and cut into **windows** of the tokens left beside the response, ending at a
  sentence end or line break when one lies in the second half of the window (``context_overlap`` tokens may be
  repeated at the start of the next window). Every window is run: nothing is truncated.
- A response too long to leave ``min_context_tokens`` of context beside it is cut into **segments** of
  consecutive tokens (``response_overlap`` tokens shared by neighbours), each run with every window of context.
- Token ids are sliced from the texts' own tokenizations, never re-tokenized, so every window holds exactly the
  response tokens whose ``offset_mapping`` gives the spans.

**Aggregation** (:data:`AGGREGATIONS`) turns the label probabilities a token gets from the windows that hold it into
one distribution: ``mean``; ``max`` / ``min`` (the distribution of the window most / least sure that the token is
hallucinated: a contradiction seen in any window flags it / support found in any window clears it); ``best`` (the
window whose context shares most distinct token ids with the response segment: the likeliest evidence; ties: the
earliest window in plan order, the rule ``train_windows: best`` trains with); ``by-type`` (typed labels: the
conflict types take their maximum over windows, the baseless types their minimum, O the rest). Measurements:
docs/TOKEN_CLASSIFICATION.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import HALLUCINATION_TYPES

AGGREGATIONS: tuple[str, ...] = ("mean", "max", "min", "best", "by-type")
TEXT_SEPARATOR = "\n\n"
CONFLICT_TYPES = tuple(t for t in HALLUCINATION_TYPES if "Conflict" in t)
_SENTENCE_END = re.compile(r"[.!?]")


@dataclass(frozen=True)
class Layout:
    """Where the special tokens go, from the tokenizer's pair template (see the module docstring)."""

    start: tuple[int, ...]
    sep: tuple[int, ...]
    end: tuple[int, ...]
    types: tuple[int, int, int, int] | None  # token type of (start + prefix, sep, response, end); None: unused

    @classmethod
    def of(cls, tokenizer: Any) -> Layout:
        enc = tokenizer("a", "b", add_special_tokens=True)
        seq = enc.sequence_ids()
        ids = enc["input_ids"]
        first_a, last_a = seq.index(0), len(seq) - 1 - seq[::-1].index(0)
        first_b, last_b = seq.index(1), len(seq) - 1 - seq[::-1].index(1)
        start, mid, end = ids[:first_a], ids[last_a + 1:first_b], ids[last_b + 1:]
        if tokenizer.sep_token_id is None or not mid:
            mid = tokenizer(TEXT_SEPARATOR, add_special_tokens=False)["input_ids"]
        types = None
        if "token_type_ids" in tokenizer.model_input_names and "token_type_ids" in enc:
            tt = enc["token_type_ids"]
            types = (tt[first_a], tt[last_a + 1] if last_a + 1 < first_b else tt[first_a], tt[first_b],
                     tt[last_b + 1] if last_b + 1 < len(tt) else tt[first_b])
        return cls(tuple(start), tuple(mid), tuple(end), types)

    @property
    def fixed_length(self) -> int:
        """Special and separator tokens of one input without a question."""
        return len(self.start) + len(self.sep) + len(self.end)

    def assemble(self, prefix: Sequence[int], response: Sequence[int]) -> tuple[list[int], list[int] | None]:
        """``(input_ids, token_type_ids)`` of one input; the response starts at ``len(start + prefix + sep)``."""
        ids = [*self.start, *prefix, *self.sep, *response, *self.end]
        if self.types is None:
            return ids, None
        a, s, b, e = self.types
        types = ([a] * (len(self.start) + len(prefix)) + [s] * len(self.sep) + [b] * len(response)
                 + [e] * len(self.end))
        return ids, types


@dataclass(frozen=True)
class WindowSettings:
    max_length: int
    context_overlap: int = 0
    min_context_tokens: int = 128
    response_overlap: int = 64


@dataclass(frozen=True)
class Window:
    """One model input: ``input_ids`` hold response tokens ``[first, first + count)`` from position
    ``response_start``, beside the context characters ``context``."""

    input_ids: list[int]
    token_type_ids: list[int] | None
    response_start: int
    first: int
    count: int
    context: tuple[int, int]
    overlap: int  # distinct response token ids that also occur in this window's context


@dataclass(frozen=True)
class ResponseWindows:
    """The windows of one response, and its tokens' character offsets (the response tokenized on its own)."""

    offsets: list[tuple[int, int]]
    windows: list[Window]
    segments: int

    def best_window(self) -> list[Window]:
        """Per response segment, the window whose context shares most token ids with it (ties: the earliest in plan
        order, as in :func:`aggregate`'s ``best``)."""
        best: dict[int, Window] = {}
        for window in self.windows:
            if window.first not in best or window.overlap > best[window.first].overlap:
                best[window.first] = window
        return list(best.values())


def sentence_ends(text: str, offsets: Sequence[tuple[int, int]]) -> list[int]:
    """Token indices ``i`` such that a window may end before token ``i``: after a token that ends a sentence
    (``.!?`` followed by whitespace) or a line, and at the end of the text."""
    ends = []
    for i, (_, end) in enumerate(offsets[:-1]):
        last, after = text[end - 1:end], text[end:end + 1]
        if last == "\n" or after == "\n" or (_SENTENCE_END.match(last) and after.isspace()):
            ends.append(i + 1)
    ends.append(len(offsets))
    return ends


def context_chunks(n_tokens: int, budget: int, ends: Sequence[int], overlap: int = 0) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of at most ``budget`` tokens covering ``n_tokens``; each ends at a sentence
    end in its second half when there is one, and the next starts ``overlap`` tokens earlier (at a sentence end
    when one lies in that stretch)."""
    if n_tokens == 0:
        return [(0, 0)]
    if budget < 1:
        raise ValueError(f"context budget must be positive, got {budget}")
    chunks, start = [], 0
    while True:
        limit = start + budget
        if limit >= n_tokens:
            chunks.append((start, n_tokens))
            return chunks
        fits = [e for e in ends if start + budget // 2 < e <= limit]
        end = fits[-1] if fits else limit
        chunks.append((start, end))
        back = [e for e in ends if end - overlap <= e < end and e > start]
        start = back[0] if overlap and back else max(end - overlap, start + 1)


def response_segments(n_tokens: int, length: int, overlap: int) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of at most ``length`` tokens covering ``n_tokens``, ``overlap`` shared."""
    if n_tokens <= length:
        return [(0, n_tokens)]
    step = length - overlap
    if step < 1:
        raise InputError(f"windows.response_overlap={overlap} leaves no room to slide over a response in "
                         f"segments of {length} tokens", field="windows.response_overlap")
    segments, start = [], 0
    while True:
        segments.append((start, min(start + length, n_tokens)))
        if start + length >= n_tokens:
            return segments
        start += step


def plan_windows(tokenizer: Any, layout: Layout, settings: WindowSettings, *, context: str, response: str,
                 question: str | None = None) -> ResponseWindows:
    """Every window of one response (see the module docstring)."""
    resp = tokenizer(response, add_special_tokens=False, verbose=False, return_offsets_mapping=True)
    ctx = tokenizer(context, add_special_tokens=False, verbose=False, return_offsets_mapping=True)
    resp_ids, offsets = resp["input_ids"], [tuple(o) for o in resp["offset_mapping"]]
    ctx_ids, ctx_offsets = ctx["input_ids"], [tuple(o) for o in ctx["offset_mapping"]]
    question_ids = tokenizer(question, add_special_tokens=False, verbose=False)["input_ids"] if question else []
    prefix_q = question_ids + list(layout.sep) if question else []
    fixed = layout.fixed_length + len(prefix_q)
    room = settings.max_length - fixed - min(len(ctx_ids), settings.min_context_tokens)
    if room < 1:
        raise InputError(f"max_length={settings.max_length} leaves no room for the response beside the special "
                         f"tokens, the question and {settings.min_context_tokens} context tokens",
                         field="max_length")
    segments = response_segments(len(resp_ids), room, settings.response_overlap)
    ends = sentence_ends(context, ctx_offsets) if ctx_ids else []
    windows = []
    for first, last in segments:
        piece = resp_ids[first:last]
        piece_set = set(piece)
        for a, b in context_chunks(len(ctx_ids), settings.max_length - fixed - len(piece), ends,
                                   settings.context_overlap):
            ids, types = layout.assemble(prefix_q + ctx_ids[a:b], piece)
            chars = (ctx_offsets[a][0], ctx_offsets[b - 1][1]) if b > a else (0, 0)
            windows.append(Window(ids, types, len(layout.start) + len(prefix_q) + (b - a) + len(layout.sep),
                                  first, last - first, chars, len(piece_set.intersection(ctx_ids[a:b]))))
    return ResponseWindows(offsets=offsets, windows=windows, segments=len(segments))


def aggregate(n_tokens: int, pieces: Sequence[tuple[int, np.ndarray]], method: str,
              label_names: Sequence[str], relevance: Sequence[float] | None = None) -> np.ndarray:
    """``(n_tokens, labels)`` probabilities from ``pieces`` = ``(first token, (count, labels) probabilities)`` of
    each window, combined per token by ``method`` (:data:`AGGREGATIONS`); label 0 is O. ``relevance``: one number
    per window (:attr:`Window.overlap`), needed by ``best``, which takes per token the window of highest relevance
    (ties: the earliest of ``pieces``; pass them in plan order to match :meth:`ResponseWindows.best_window`)."""
    check_choice(method, AGGREGATIONS, "aggregation", field="aggregation")
    n_labels = len(label_names)
    stack = np.full((len(pieces), n_tokens, n_labels), np.nan)
    for w, (first, probs) in enumerate(pieces):
        stack[w, first:first + len(probs)] = probs
    if n_tokens == 0:
        return np.zeros((0, n_labels))
    if np.isnan(stack[:, :, 0]).all(axis=0).any():
        raise ValueError("a response token is in no window")
    if method == "mean":
        return np.nanmean(stack, axis=0)
    if method == "best":
        if relevance is None or len(relevance) != len(pieces):
            raise ValueError("aggregation best needs one relevance value per window")
        order = np.where(np.isnan(stack[:, :, 0]), -np.inf, np.asarray(relevance, dtype=float)[:, None])
        return stack[np.argmax(order, axis=0), np.arange(n_tokens)]
    if method in ("max", "min"):
        p_hal = 1.0 - stack[:, :, 0]
        pick = np.nanargmax(p_hal, axis=0) if method == "max" else np.nanargmin(p_hal, axis=0)
        return stack[pick, np.arange(n_tokens)]
    if tuple(label_names[1:]) != HALLUCINATION_TYPES:
        raise InputError("aggregation by-type needs the typed label scheme", field="aggregation")
    conflict = [i for i, name in enumerate(label_names) if name in CONFLICT_TYPES]
    baseless = [i for i in range(1, n_labels) if i not in conflict]
    out = np.zeros((n_tokens, n_labels))
    out[:, conflict] = np.nanmax(stack[:, :, conflict], axis=0)
    out[:, baseless] = np.nanmin(stack[:, :, baseless], axis=0)
    total = out[:, 1:].sum(axis=1)
    scale = np.where(total > 1.0, 1.0 / np.maximum(total, 1e-12), 1.0)
    out[:, 1:] *= scale[:, None]
    out[:, 0] = 1.0 - out[:, 1:].sum(axis=1)
    return out
