"""Per-word support features of a response against its context, for the stacked detector's combiner.

A response is cut into **words** (:data:`~.text.WORD`: runs of word characters, with inner ``-``, ``'``, ``.``, ``,``,
``/`` and ``:`` kept, so ``family-owned``, ``3.5``, ``1,200`` and ``9:30`` are one word); each word is a
character interval ``[start, end)`` of the response. Every feature is a number computed from the word, its
sentence, its neighbours and the context alone (no labels), so the same code serves training and detection:

- **lexical support**: the word (case-folded, NFKC, Unicode digits as ASCII) occurs in the context; its crude stem
  does; its best fuzzy ratio against the context's words (rapidfuzz); it occurs in the question;
- **copied phrases**: the longest run of response words through this word that occurs word for word in the
  context (``ngram``), the words of such runs being copied text and so rarely hallucinated;
- **kind of word**: number (and whether that number occurs in the context), capitalised inside a sentence, stop
  word, length;
- **neighbourhood and sentence**: the share of unsupported content words within ±3 and ±8 words and in the
  sentence; the sentence's place in the response; optional sentence similarity to the best context unit
  (``sentence_cosine``, filled in by the caller from an encoder);
- **item**: task (one-hot), log lengths of response and context, relative position of the word.

Members' scores (a token classifier's P(hallucinated), any detector's span scores) are appended by the caller
as extra columns (:func:`member_columns`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.data import lexicon
from ragtruth_spans.detectors.stacked import conflicts as conflict_signals
from ragtruth_spans.detectors.stacked import polarity as polarity_signals
from ragtruth_spans.detectors.stacked.comparisons import reversed_by_numbers
from ragtruth_spans.detectors.stacked.context_index import MAX_NGRAM, ContextIndex, Interval, sentence_ids
from ragtruth_spans.detectors.stacked.structured import hours_conflict_words, key_number_conflicts
from ragtruth_spans.detectors.stacked.text import (
    NEGATORS,
    STOP_WORDS,
    normalise,
    number_phrases,
    number_value,
    scaled_value,
    stem,
)

BASE_FEATURES: tuple[str, ...] = (
    "in_context", "stem_in_context", "fuzzy", "in_question", "false_key", "true_key", "ngram", "ngram_stem",
    "is_number",
    "number_in_context", "capitalised", "stop_word", "length", "unsupported_3", "unsupported_8",
    "distance_unsupported", "response_unsupported", "sentence_unsupported", "sentence_ngram", "sentence_max_ngram",
    "sentence_position", "sentence_length", "word_position",
    "sentence_cosine", "log_response_words", "log_context_words",
    *(f"task_{task}" for task in TASK_TYPES),
    "swap", "swap_one_side", "negation_added", "negation_dropped", "sentence_conflict", "number_near",
    "synonym_in_context", "contrast_in_context", "antonym_in_context",
    "soft_support", "soft_support_3", "sentence_soft_support", *polarity_signals.RESTATED_COLUMNS,
    "reversed_by_numbers",
)
"""Column names of :func:`word_features`, in order."""


def _synonym_support(tokens: Sequence[str], numbers: Sequence[str | None], index: ContextIndex) -> np.ndarray:
    """1 for a word the context supports through another form: a listed synonym or another form of its closed-class
    sense (``kg`` for ``kilograms``), a number word or a scaled
    number whose value the context states, a negated negative (``not uncommon`` where the context says
    ``common``)."""
    out = np.zeros(len(tokens), dtype=np.float32)
    for i, t in enumerate(tokens):
        synonym = any(s in index.words for s in (*lexicon.SYNONYMS.get(t, ()), *lexicon.other_forms(t)))
        number_word = t in lexicon.NUMBER_WORDS and f"{lexicon.NUMBER_WORDS[t]:g}" in index.numbers
        scaled = numbers[i] is not None and (scaled_value(tokens, i) or "") in index.numbers
        negated_negative = i > 0 and tokens[i - 1] in NEGATORS and any(
            t.startswith(p) and t[len(p):] in index.words for p in ("un", "in", "im", "dis", "ir", "il"))
        out[i] = float(synonym or number_word or scaled or negated_negative)
    return out


def _other_form_columns(tokens: Sequence[str], numbers: Sequence[str | None], content: np.ndarray,
                        sid: np.ndarray, soft_support: np.ndarray | None, index: ContextIndex) -> dict:
    """The columns of support in another form and of closed-class contradiction: soft support (the word, ±3
    content words, its sentence's content words; 0 without token embeddings), synonym support, a closed-class
    word or an antonym the context holds another member of."""
    soft = np.zeros(len(tokens), dtype=np.float32) if soft_support is None else \
        np.asarray(soft_support, dtype=np.float32)
    return {
        "soft_support": soft,
        "soft_support_3": _window_mean(soft, content, 3),
        "sentence_soft_support": _sentence_means(soft, content > 0, sid),
        "synonym_in_context": _synonym_support(tokens, numbers, index),
        "contrast_in_context": [t not in index.words and any(o in index.words for o in lexicon.contrasting(t))
                                for t in tokens],
        "antonym_in_context": [t not in index.words and any(a in index.words for a in lexicon.ANTONYMS.get(t, ()))
                               for t in tokens],
    }


def _sentence_means(values: np.ndarray, mask: np.ndarray, sid: np.ndarray) -> np.ndarray:
    """Per word, the mean of ``values`` over the ``mask``-ed words of its sentence (``sid``: each word's sentence
    index), 0.0 for a sentence with none; each sentence's mean computed once.

    >>> _sentence_means(np.array([1.0, 3.0, 5.0], dtype=np.float32), np.array([True, True, False]), np.array([0, 0, 1]))
    array([2., 2., 0.], dtype=float32)
    """
    means = {}
    for s in np.unique(sid):
        inside = values[(sid == s) & mask]
        means[s] = inside.mean() if len(inside) else 0.0
    return np.array([means[s] for s in sid], dtype=np.float32)


def _longest_runs(tokens: Sequence[str], grams: frozenset[tuple[str, ...]]) -> np.ndarray:
    """For each token, the length of the longest run of consecutive tokens through it found in ``grams``
    (1 when none of length ≥ 2 is)."""
    best = np.ones(len(tokens), dtype=np.float32)
    for i in range(len(tokens)):
        for n in range(min(MAX_NGRAM, len(tokens) - i), 1, -1):
            if tuple(tokens[i:i + n]) in grams:
                best[i:i + n] = np.maximum(best[i:i + n], n)
                break
    return best


def _window_mean(values: np.ndarray, mask: np.ndarray, radius: int) -> np.ndarray:
    """Mean of ``values`` over the ``mask``-ed positions within ``radius`` of each position (0 when none)."""
    weighted = np.concatenate([[0.0], np.cumsum(values * mask)])
    counts = np.concatenate([[0.0], np.cumsum(mask)])
    n = len(values)
    lo = np.clip(np.arange(n) - radius, 0, n)
    hi = np.clip(np.arange(n) + radius + 1, 0, n)
    total = counts[hi] - counts[lo]
    return np.where(total > 0, (weighted[hi] - weighted[lo]) / np.maximum(total, 1), 0.0)


def _distance_to(flags: np.ndarray, cap: int = 10) -> np.ndarray:
    """Words from each position to the nearest flagged one (0 on it; ``cap`` when none is that close)."""
    where = np.flatnonzero(flags)
    if not len(where):
        return np.full(len(flags), cap, dtype=np.float32)
    positions = np.arange(len(flags))
    nearest = np.abs(positions[:, None] - where[None, :]).min(axis=1) if len(flags) * len(where) < 4_000_000 else cap
    return np.minimum(nearest, cap).astype(np.float32)


def _fuzzy(tokens: Sequence[str], vocabulary: Sequence[str]) -> np.ndarray:
    """Best normalised Levenshtein similarity (0–1) of each token to any context word."""
    if not tokens or not vocabulary:
        return np.zeros(len(tokens), dtype=np.float32)
    from rapidfuzz import fuzz, process

    scores = process.cdist(list(tokens), list(vocabulary), scorer=fuzz.ratio, dtype=np.uint8, workers=1)
    return scores.max(axis=1).astype(np.float32) / 100.0


def _sentence_columns(sid: np.ndarray, content: np.ndarray, unsupported: np.ndarray, ngram: np.ndarray,
                      any_conflict: np.ndarray) -> dict[str, np.ndarray]:
    """Per word, aggregates over its sentence (``sid``: each word's sentence): the share of its content words
    unsupported, the mean and the longest copied run, and whether any of its words is contradicted."""
    n = len(sid)
    out = {name: np.zeros(n, dtype=np.float32)
           for name in ("sentence_unsupported", "sentence_ngram", "sentence_max_ngram", "sentence_conflict")}
    for s in np.unique(sid):
        members = sid == s
        weights = content[members]
        out["sentence_unsupported"][members] = (unsupported[members] * weights).sum() / max(weights.sum(), 1.0)
        out["sentence_ngram"][members] = ngram[members].mean()
        out["sentence_max_ngram"][members] = ngram[members].max()
        out["sentence_conflict"][members] = any_conflict[members].max()
    return out


def _key_columns(key_stems: Sequence[str], negated: np.ndarray, index: ContextIndex) -> dict[str, list[bool]]:
    """``false_key``: the word names a JSON key of the context and says the opposite of its value (asserts a false
    one, negates a true one); ``true_key``: it agrees with the value (``does not take reservations`` with
    ``"RestaurantsReservations": false``). ``key_stems``: the words' stems without hyphens (``Wi-Fi`` reads the
    key ``WiFi``)."""
    keyed = [k in index.false_keys or k in index.true_keys for k in key_stems]
    return {"false_key": [on and (k in index.false_keys) != bool(neg) for k, neg, on in zip(key_stems, negated, keyed)],
            "true_key": [on and (k in index.true_keys) != bool(neg) for k, neg, on in zip(key_stems, negated, keyed)]}


def list_markers(response: str, spans: Sequence[Interval], first_in_sentence: Sequence[bool]) -> list[bool]:
    """Per word, whether it numbers an item of a list (``9.`` or ``9)`` opening a sentence or a line).

    >>> from ragtruth_spans.detectors.stacked.text import words
    >>> text = "Steps: 1. Add wine. 9. Add 2 cups."
    >>> spans = words(text)
    >>> [text[a:b] for (a, b), m in zip(spans, list_markers(text, spans, [True] * len(spans))) if m]
    ['1', '9']
    """
    out = []
    for (a, b), first in zip(spans, first_in_sentence):
        word = response[a:b]
        opens = first or response[:a].rstrip(" \t").endswith(("\n", ":"))
        out.append(word.isdigit() and len(word) <= 2 and response[b:b + 1] in (".", ")") and opens)
    return out


def _conflict_columns(response: str, spans: Sequence[Interval], sentences: Sequence[Interval], raw: Sequence[str],
                      tokens: Sequence[str], stems: Sequence[str], numbers: Sequence[str | None],
                      names: Sequence[bool], negated: np.ndarray, sid: np.ndarray,
                      index: ContextIndex) -> dict[str, np.ndarray]:
    """The conflict columns of the words (:func:`.conflicts.conflicts`, the polarity signals), ``swap_one_side``
    also marking what a JSON record contradicts: a number its key does not hold, times its opening hours do not."""
    markers = list_markers(response, spans, np.r_[True, sid[1:] != sid[:-1]])
    conflict = conflict_signals.conflicts(tokens, [w[:1].isupper() for w in raw], index, markers)
    conflict["swap_one_side"] = np.maximum.reduce([
        conflict["swap_one_side"], key_number_conflicts(response, spans, stems, numbers, index.key_numbers, markers),
        hours_conflict_words(response, spans, sentences, index.hours)])
    conflict.update(polarity_signals.restated_signals(tokens, stems, names, negated, sid, index))
    conflict["reversed_by_numbers"] = reversed_by_numbers(response, spans, tokens, sid)
    return conflict


def word_features(response: str, spans: Sequence[Interval], index: ContextIndex, *, task: str,
                  sentences: Sequence[Interval], sentence_cosine: Sequence[float] | None = None,
                  soft_support: np.ndarray | None = None) -> np.ndarray:
    """``(len(spans), len(BASE_FEATURES))`` float32 features of the response words ``spans`` (see the module
    docstring); ``sentences`` are the response's sentence intervals, ``sentence_cosine`` one similarity per
    sentence and ``soft_support`` one token-alignment similarity per word (0.0 everywhere when None)."""
    n = len(spans)
    out = np.zeros((n, len(BASE_FEATURES)), dtype=np.float32)
    if n == 0:
        return out
    raw = [response[a:b] for a, b in spans]
    tokens = [normalise(w) for w in raw]
    stems = [stem(t) for t in tokens]
    numbers, phrases = [number_value(t) for t in tokens], number_phrases(tokens)
    sid = sentence_ids(spans, sentences)
    first_in_sentence = np.r_[True, sid[1:] != sid[:-1]]
    stop = np.array([t in STOP_WORDS for t in tokens], dtype=np.float32)
    unsupported = np.array([s not in index.stems for s in stems], dtype=np.float32)
    content = 1.0 - stop
    ngram = _longest_runs(tokens, index.ngrams)
    cosine = np.asarray(sentence_cosine, dtype=np.float32)[sid] if sentence_cosine is not None else 0.0
    names = [w[:1].isupper() and not first for w, first in zip(raw, first_in_sentence)]
    negated = polarity_signals.negated(tokens, polarity_signals.breaks_after(response, spans))
    conflict = _conflict_columns(response, spans, sentences, raw, tokens, stems, numbers, names, negated, sid, index)
    columns = {
        "in_context": [t in index.words for t in tokens],
        "stem_in_context": 1.0 - unsupported,
        "fuzzy": _fuzzy(tokens, index.vocabulary),
        "in_question": [t in index.question for t in tokens],
        "ngram": ngram,
        "ngram_stem": _longest_runs(stems, index.stem_ngrams),
        "is_number": [v is not None for v in numbers],
        "number_in_context": [v is not None and (v in index.numbers or scaled_value(tokens, i) in index.numbers
                                                 or phrases.get(i) in index.numbers) for i, v in enumerate(numbers)],
        "capitalised": names,
        "stop_word": stop,
        "length": [min(len(w), 20) for w in raw],
        "unsupported_3": _window_mean(unsupported, content, 3),
        "unsupported_8": _window_mean(unsupported, content, 8),
        "distance_unsupported": _distance_to(unsupported * content),
        "response_unsupported": (unsupported * content).sum() / max(content.sum(), 1.0),
        "sentence_position": sid / max(len(sentences), 1),
        "sentence_length": np.bincount(sid)[sid],
        "word_position": np.arange(n) / n,
        "sentence_cosine": cosine,
        "log_response_words": math.log1p(n),
        "log_context_words": math.log1p(index.size),
    }
    key_negated = polarity_signals.clause_negated(response, spans, tokens) if index.false_keys or index.true_keys \
        else negated
    columns.update(_key_columns([stem(t.replace("-", "")) for t in tokens], key_negated, index))
    for task_name in TASK_TYPES:
        columns[f"task_{task_name}"] = float(task == task_name)
    columns.update(conflict)
    columns.update(_sentence_columns(sid, content, unsupported, ngram, np.maximum.reduce(list(conflict.values()))))
    columns["number_near"] = [conflict_signals.near_number(t, index.numbers) for t in tokens]
    columns.update(_other_form_columns(tokens, numbers, content, sid, soft_support, index))
    for j, name in enumerate(BASE_FEATURES):
        out[:, j] = np.asarray(columns[name], dtype=np.float32)
    return out


def member_columns(spans: Sequence[Interval], char_scores: np.ndarray) -> np.ndarray:
    """``(len(spans), 3)`` columns from one member's per-character scores of the response: the word's maximum,
    and the mean of word maxima within ±3 and ±8 words."""
    word_max = np.array([char_scores[a:b].max() if b > a else 0.0 for a, b in spans], dtype=np.float32)
    ones = np.ones(len(spans), dtype=np.float32)
    return np.stack([word_max, _window_mean(word_max, ones, 3), _window_mean(word_max, ones, 8)], axis=1
                    ) if len(spans) else np.zeros((0, 3), dtype=np.float32)
