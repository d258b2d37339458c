"""Per-word support features of a response against its context, for the stacked detector's combiner.

A response is cut into **words** (:data:`WORD`: runs of word characters, with inner ``-``, ``'``, ``.``, ``,``,
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
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ragtruth_spans.core.types import TASK_TYPES
from ragtruth_spans.data.augment import ANTONYMS

Interval = tuple[int, int]
WORD = re.compile(r"\w+(?:[-'’.,/:]\w+)*")
MAX_NGRAM = 8
STOP_WORDS = frozenset({
    "a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as",
    "is", "are", "was", "were", "be", "been", "being", "it", "its", "this", "that", "these", "those", "there",
    "here", "he", "she", "they", "them", "his", "her", "their", "we", "our", "you", "your", "i", "me", "my",
    "not", "no", "yes", "do", "does", "did", "has", "have", "had", "will", "would", "can", "could", "should",
    "may", "might", "must", "also", "than", "then", "so", "such", "very", "more", "most", "other", "into",
    "about", "over", "after", "before", "which", "who", "whom", "whose", "what", "when", "where", "why", "how",
    "all", "any", "each", "both", "few", "many", "much", "some", "only", "own", "same", "just", "while",
    "during", "under", "above", "between", "out", "up", "down", "off", "again", "further", "once", "s", "t",
})

BASE_FEATURES: tuple[str, ...] = (
    "in_context", "stem_in_context", "fuzzy", "in_question", "false_key", "true_key", "ngram", "ngram_stem",
    "is_number",
    "number_in_context", "capitalised", "stop_word", "length", "unsupported_3", "unsupported_8",
    "distance_unsupported", "response_unsupported", "sentence_unsupported", "sentence_ngram", "sentence_max_ngram",
    "sentence_position", "sentence_length", "word_position",
    "sentence_cosine", "log_response_words", "log_context_words",
    *(f"task_{task}" for task in TASK_TYPES),
    "swap", "swap_one_side", "negation_added", "negation_dropped", "sentence_conflict", "number_near",
)
"""Column names of :func:`word_features`, in order."""


def normalise(word: str) -> str:
    """Case-folded NFKC text with every Unicode decimal digit as its ASCII digit (``١٩٩٩`` → ``1999``)."""
    text = unicodedata.normalize("NFKC", word).casefold()
    return "".join(str(unicodedata.digit(ch)) if ch.isdigit() and unicodedata.digit(ch, None) is not None else ch
                   for ch in text)


def stem(word: str) -> str:
    """A crude suffix-stripping stem of a normalised word (plural, past, gerund, adverb, possessive)."""
    for suffix in ("'s", "’s"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
    for suffix in ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def number_value(word: str) -> str | None:
    """The canonical text of a number word (``1,200`` → ``1200``, ``3.50`` → ``3.5``), None for other words."""
    text = word.replace(",", "")
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    return f"{value:g}"


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])|\n+")


_ABBREVIATIONS = frozenset({"Dr.", "Mr.", "Mrs.", "Ms.", "St.", "Jr.", "Sr.", "Inc.", "Co.", "Ltd.", "vs.", "U.S.",
                            "No.", "Prof.", "Gen.", "Gov.", "Sen.", "Rep.", "Mt.", "Ft.", "e.g.", "i.e."})


def sentences(text: str) -> list[Interval]:
    """Sentence intervals ``[start, end)`` of ``text``, cut after ``.``/``!``/``?`` followed by a capital or a
    digit, and at line breaks (a fast rule: features only need sentence groups); trimmed, never empty."""
    out, start = [], 0
    for m in [*_SENTENCE_BREAK.finditer(text), None]:
        end = m.start() if m is not None else len(text)
        if m is not None and text[start:end].rsplit(None, 1)[-1:] and \
                text[start:end].rsplit(None, 1)[-1] in _ABBREVIATIONS:
            continue
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + lead + len(piece.strip())))
        if m is not None:
            start = m.end()
    return out


def words(text: str) -> list[Interval]:
    """The words of ``text`` as character intervals ``[start, end)`` (see :data:`WORD`)."""
    return [m.span() for m in WORD.finditer(text)]


@dataclass(frozen=True)
class ContextIndex:
    """What the features look up in one context (and question): word, stem and number sets, the word n-grams."""

    words: frozenset[str]
    stems: frozenset[str]
    numbers: frozenset[str]
    question: frozenset[str]
    ngrams: frozenset[tuple[str, ...]]
    stem_ngrams: frozenset[tuple[str, ...]]
    vocabulary: tuple[str, ...]
    size: int
    false_keys: frozenset[str] = frozenset()
    true_keys: frozenset[str] = frozenset()
    tokens: tuple[str, ...] = ()
    capitalised: tuple[bool, ...] = ()
    after: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    before: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    after_word: dict[str, tuple[int, ...]] = field(default_factory=dict)
    before_word: dict[str, tuple[int, ...]] = field(default_factory=dict)
    negated: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def build(cls, context: str, question: str | None = None) -> ContextIndex:
        tokens = [normalise(context[a:b]) for a, b in words(context)]
        stems = [stem(t) for t in tokens]
        question_words = [normalise(question[a:b]) for a, b in words(question)] if question else []
        numbers = {n for t in tokens if (n := number_value(t)) is not None}
        grams = {tuple(tokens[i:i + n]) for n in range(2, MAX_NGRAM + 1) for i in range(len(tokens) - n + 1)}
        stem_grams = {tuple(stems[i:i + n]) for n in range(2, MAX_NGRAM + 1) for i in range(len(stems) - n + 1)}
        vocabulary = tuple(sorted(set(tokens) | set(question_words)))
        false_keys, true_keys = _json_key_stems(context)
        capitalised = tuple(context[a:a + 1].isupper() for a, _ in words(context))
        return cls(frozenset(tokens) | frozenset(question_words), frozenset(stems) | {stem(q) for q in question_words},
                   frozenset(numbers), frozenset(question_words), frozenset(grams), frozenset(stem_grams),
                   vocabulary, len(tokens), false_keys, true_keys, tuple(tokens), capitalised, *_anchors(tokens),
                   _negated_pairs(tokens))


_KEY_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_FALSE_VALUES = (False, None, "no", "none", "false", "null", "")


def _json_key_stems(context: str) -> tuple[frozenset[str], frozenset[str]]:
    """For a JSON context: stems of the words of keys whose leaf value is false, null or "no"
    (``RestaurantsReservations: false`` → ``restaurant``, ``reservation``), and of keys whose value is true;
    empty sets for any other context."""
    import json

    if not context.lstrip().startswith("{"):
        return frozenset(), frozenset()
    try:
        data = json.loads(context)
    except (ValueError, RecursionError):
        return frozenset(), frozenset()
    false_keys: set[str] = set()
    true_keys: set[str] = set()

    def visit(value: object, key: str) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                visit(v, f"{key} {k}")
            return
        leaf = key.split()[-1] if key.split() else key
        words_of_key = {stem(normalise(w)) for w in [*_KEY_WORD.findall(leaf), leaf]}
        if value is True or (isinstance(value, str) and value.lower() in ("yes", "true", "free")):
            true_keys.update(words_of_key)
        elif value in _FALSE_VALUES or (isinstance(value, str) and value.lower() in _FALSE_VALUES):
            false_keys.update(words_of_key)

    visit(data, "")
    return frozenset(false_keys - true_keys), frozenset(true_keys)


NEGATORS = frozenset({"not", "no", "never", "nor", "without", "cannot", "neither"})
MAX_SWAP = 3
"""Longest run of response words that :func:`conflicts` treats as one substitution."""


def _negation_base(token: str) -> str | None:
    """The verb of a contracted negation (``isn't`` → ``is``, ``doesn't`` → ``does``), None for other words."""
    for suffix in ("n't", "n’t"):
        if token.endswith(suffix) and len(token) > len(suffix):
            return {"ca": "can", "wo": "will", "sha": "shall"}.get(token[: -len(suffix)], token[: -len(suffix)])
    return None


def _anchors(tokens: Sequence[str]) -> tuple[dict, dict, dict, dict]:
    """``(after, before, after_word, before_word)`` of the context's words: for each word pair, the positions
    right after it (``after[(a, b)]`` holds ``p`` where ``tokens[p-2:p] == [a, b]``) and right before it
    (``before[(a, b)]`` holds ``q`` where ``tokens[q:q+2] == [a, b]``); the same for single content words."""
    after: dict[tuple[str, str], list[int]] = {}
    before: dict[tuple[str, str], list[int]] = {}
    after_word: dict[str, list[int]] = {}
    before_word: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        if token not in STOP_WORDS:
            after_word.setdefault(token, []).append(i + 1)
            before_word.setdefault(token, []).append(i)
        if i + 1 < len(tokens):
            pair = (token, tokens[i + 1])
            after.setdefault(pair, []).append(i + 2)
            before.setdefault(pair, []).append(i)
    return tuple({k: tuple(v) for k, v in table.items()} for table in (after, before, after_word, before_word))


def _negated_pairs(tokens: Sequence[str]) -> frozenset[tuple[str, str]]:
    """Word pairs ``(a, b)`` that the context separates by a negation (``a not b``, ``a never b``), or joins by a
    contracted one (``isn't b`` gives ``(is, b)``)."""
    pairs = set()
    for i, token in enumerate(tokens):
        if token in NEGATORS and 0 < i < len(tokens) - 1:
            pairs.add((tokens[i - 1], tokens[i + 1]))
        base = _negation_base(token)
        if base is not None and i < len(tokens) - 1:
            pairs.add((base, tokens[i + 1]))
    return frozenset(pairs)


def _same_kind(word: str, capitalised: bool, other: str, other_capitalised: bool) -> bool:
    """Whether a context word could stand where a response word stands: both numbers, or both capitalised
    content words."""
    if (number_value(word) is None) != (number_value(other) is None):
        return False
    if number_value(word) is not None:
        return True
    return capitalised and other_capitalised and other not in STOP_WORDS


def _contradicts(block: Sequence[str], capitalised: Sequence[bool], at: int, index: ContextIndex) -> list[int]:
    """The positions in ``block`` (response words) that contradict the context words of the same length at
    ``at`` — when some word differs and every differing pair is two different numbers, two different names (the
    response's not in the context) or antonyms (``rose``/``fell``); else none."""
    ctx = index.tokens[at:at + len(block)]
    differ = [i for i, (r, c) in enumerate(zip(block, ctx)) if r != c]
    if not differ or len(ctx) != len(block):
        return []
    for i in differ:
        word, other = block[i], ctx[i]
        if ANTONYMS.get(word) == other:
            continue
        if word in index.words or not _same_kind(word, capitalised[i], other, index.capitalised[at + i]):
            return []
    return differ


def near_number(token: str, numbers: frozenset[str]) -> bool:
    """Whether ``token`` is a whole number of two or more digits that the context lacks but holds one digit edit
    away, at the same length (``1923`` against ``1932``, ``208`` against ``206``): how changed numbers look. On
    the pool's training and dev responses 35 of the 60 such words are hallucinated, against 170 of all 768
    unsupported numbers."""
    from rapidfuzz.distance import DamerauLevenshtein

    digits = token.replace(",", "")
    if len(digits) < 2 or not digits.isdigit() or number_value(token) in numbers:
        return False
    return any(len(n) == len(digits) and n.isdigit() and DamerauLevenshtein.distance(n, digits) == 1
               for n in numbers)


def conflicts(tokens: Sequence[str], capitalised: Sequence[bool], index: ContextIndex
              ) -> dict[str, np.ndarray]:
    """Signals that the context says something else where the response copies it (contradicted, not merely
    absent), one 0/1 value per response word (``tokens``: normalised words; ``capitalised``: their first letter):

    - ``swap``: a run of 1–3 words between anchors that the context holds the same number of words apart, where
      the context has other numbers, other names or antonyms (``opened in [1998] and closed`` against
      ``opened in 1999 and closed``; ``sales [fell] by`` against ``sales rose by``);
    - ``swap_one_side``: a word the context lacks, right after (or before) a word pair of the context where the
      context has another word of the same kind (a number, or a capitalised name) instead;
    - ``negation_added``: a negation (``not``, ``isn't``) whose removal leaves a word pair of the context, and the
      word after it;
    - ``negation_dropped``: a word pair that the context separates by a negation (``is [open]`` against
      ``is not open``).
    """
    n = len(tokens)
    out = {name: np.zeros(n, dtype=np.float32)
           for name in ("swap", "swap_one_side", "negation_added", "negation_dropped")}
    ctx = index.tokens

    def after(j: int) -> list[tuple[int, ...]]:  # context positions that could stand at response position j
        pair = index.after.get((tokens[j - 2], tokens[j - 1]), ())[:64] if j >= 2 else ()
        single = index.after_word.get(tokens[j - 1], ())[:64] if j >= 1 and tokens[j - 1] not in STOP_WORDS else ()
        return [pair, single]

    def before(m: int) -> list[tuple[int, ...]]:  # context positions that could end a run ending at m
        pair = index.before.get((tokens[m], tokens[m + 1]), ())[:64] if m + 1 < n else ()
        single = index.before_word.get(tokens[m], ())[:64] if m < n and tokens[m] not in STOP_WORDS else ()
        return [pair, single]

    for j in range(n):
        left_pair, left_single = after(j)
        for m in range(j + 1, min(j + MAX_SWAP, n) + 1):
            right_pair, right_single = before(m)
            for lefts, rights in ((left_pair, right_pair), (left_pair, right_single), (left_single, right_pair)):
                found = next((d for p in lefts for q in rights if q - p == m - j
                              for d in [_contradicts(tokens[j:m], capitalised[j:m], p, index)] if d), [])
                for i in found:
                    out["swap"][j + i] = 1.0
                if found:
                    break
        if tokens[j] not in index.words:
            if any(p < len(ctx) and _same_kind(tokens[j], capitalised[j], ctx[p], index.capitalised[p])
                   for p in left_pair):
                out["swap_one_side"][j] = 1.0
            right_pair = before(j + 1)[0] if j + 1 < n else ()
            if any(q > 0 and _same_kind(tokens[j], capitalised[j], ctx[q - 1], index.capitalised[q - 1])
                   for q in right_pair):
                out["swap_one_side"][j] = 1.0
        base = _negation_base(tokens[j])
        removed = (tokens[j - 1], tokens[j + 1]) if 0 < j < n - 1 and tokens[j] in NEGATORS else \
            (base, tokens[j + 1]) if base is not None and j < n - 1 else None
        if removed is not None and removed in index.ngrams:  # the response without its negation copies the context
            out["negation_added"][j:j + 2] = 1.0
        if j > 0 and (tokens[j - 1], tokens[j]) in index.negated and tokens[j] not in NEGATORS:
            out["negation_dropped"][j] = 1.0
    return out


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


def sentence_ids(spans: Sequence[Interval], sentences: Sequence[Interval]) -> np.ndarray:
    """Index of the sentence that holds each word (the last sentence starting at or before it)."""
    starts = np.array([s for s, _ in sentences] or [0])
    return np.clip(np.searchsorted(starts, [a for a, _ in spans], side="right") - 1, 0, len(starts) - 1)


def word_features(response: str, spans: Sequence[Interval], index: ContextIndex, *, task: str,
                  sentences: Sequence[Interval], sentence_cosine: Sequence[float] | None = None) -> np.ndarray:
    """``(len(spans), len(BASE_FEATURES))`` float32 features of the response words ``spans`` (see the module
    docstring); ``sentences`` are the response's sentence intervals and ``sentence_cosine`` one similarity per
    sentence (0.0 everywhere when None)."""
    n = len(spans)
    out = np.zeros((n, len(BASE_FEATURES)), dtype=np.float32)
    if n == 0:
        return out
    raw = [response[a:b] for a, b in spans]
    tokens = [normalise(w) for w in raw]
    stems = [stem(t) for t in tokens]
    key_stems = [stem(t.replace("-", "")) for t in tokens]  # "Wi-Fi" reads the key WiFi
    numbers = [number_value(t) for t in tokens]
    sid = sentence_ids(spans, sentences)
    first_in_sentence = np.r_[True, sid[1:] != sid[:-1]]
    stop = np.array([t in STOP_WORDS for t in tokens], dtype=np.float32)
    unsupported = np.array([s not in index.stems for s in stems], dtype=np.float32)
    content = 1.0 - stop
    ngram = _longest_runs(tokens, index.ngrams)
    n_sentences = max(len(sentences), 1)
    sentence_unsupported = np.zeros(n, dtype=np.float32)
    sentence_ngram = np.zeros(n, dtype=np.float32)
    sentence_max_ngram = np.zeros(n, dtype=np.float32)
    for s in np.unique(sid):
        members = sid == s
        weights = content[members]
        sentence_unsupported[members] = (unsupported[members] * weights).sum() / max(weights.sum(), 1.0)
        sentence_ngram[members] = ngram[members].mean()
        sentence_max_ngram[members] = ngram[members].max()
    cosine = np.asarray(sentence_cosine, dtype=np.float32)[sid] if sentence_cosine is not None else 0.0
    conflict = conflicts(tokens, [w[:1].isupper() for w in raw], index)
    any_conflict = np.maximum.reduce(list(conflict.values()))
    sentence_conflict = np.zeros(n, dtype=np.float32)
    for s in np.unique(sid):
        sentence_conflict[sid == s] = any_conflict[sid == s].max()
    columns = {
        "in_context": [t in index.words for t in tokens],
        "stem_in_context": 1.0 - unsupported,
        "fuzzy": _fuzzy(tokens, index.vocabulary),
        "in_question": [t in index.question for t in tokens],
        "false_key": [k in index.false_keys for k in key_stems],
        "true_key": [k in index.true_keys for k in key_stems],
        "ngram": ngram,
        "ngram_stem": _longest_runs(stems, index.stem_ngrams),
        "is_number": [v is not None for v in numbers],
        "number_in_context": [v is not None and v in index.numbers for v in numbers],
        "capitalised": [w[:1].isupper() and not first for w, first in zip(raw, first_in_sentence)],
        "stop_word": stop,
        "length": [min(len(w), 20) for w in raw],
        "unsupported_3": _window_mean(unsupported, content, 3),
        "unsupported_8": _window_mean(unsupported, content, 8),
        "distance_unsupported": _distance_to(unsupported * content),
        "response_unsupported": (unsupported * content).sum() / max(content.sum(), 1.0),
        "sentence_unsupported": sentence_unsupported,
        "sentence_ngram": sentence_ngram,
        "sentence_max_ngram": sentence_max_ngram,
        "sentence_position": sid / n_sentences,
        "sentence_length": np.bincount(sid)[sid],
        "word_position": np.arange(n) / n,
        "sentence_cosine": cosine,
        "log_response_words": math.log1p(n),
        "log_context_words": math.log1p(index.size),
    }
    for task_name in TASK_TYPES:
        columns[f"task_{task_name}"] = float(task == task_name)
    columns.update(conflict)
    columns["sentence_conflict"] = sentence_conflict
    columns["number_near"] = [near_number(t, index.numbers) for t in tokens]
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
