"""The stacked detector's input matrix: per response, its words and one row of columns per word.

Columns are :data:`~.features.BASE_FEATURES` (with the sentence similarity from an optional sentence encoder),
then three columns per member (:func:`~.features.member_columns`) from that member's **per-character scores** of
the response: a member that has ``character_scores(items)`` (the token classifier: its aggregated token
probabilities spread over each token's characters) gives them directly; any other detector's spans are painted
with their score (1.0 when unscored) over zeros. A member that could not judge an item (``Detection.error``)
gives zeros there and is counted in the item's diagnostics (``member_errors``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragtruth_spans.core.lru import BoundedCache
from ragtruth_spans.detectors.base import DetectItem, Detector
from ragtruth_spans.detectors.shared.sentences import evidence_units
from ragtruth_spans.detectors.stacked.context_index import ContextIndex, Interval, sentences
from ragtruth_spans.detectors.stacked.features import BASE_FEATURES, member_columns, word_features
from ragtruth_spans.detectors.stacked.text import words

INDEX_CACHE_SIZE = 256
"""Context indexes kept (a RAGTruth source has six responses to one context)."""


def build_encoder(name: str | None, **options: Any) -> Any:
    """The sentence encoder of the similarity column (``options``: ``device``, ``batch_size``, ``runtime``,
    ``layers``), or None."""
    if name is None:
        return None
    from ragtruth_spans.detectors.shared.encoder import shared_encoder

    return shared_encoder(name, **options)


def column_names(members: Sequence[str]) -> list[str]:
    """Every column, in matrix order: the base features, then the members' columns.

    >>> column_names(["numbers"])[-3:]
    ['numbers_word', 'numbers_mean_3', 'numbers_mean_8']
    """
    return [*BASE_FEATURES, *(f"{m}_{c}" for m in members for c in ("word", "mean_3", "mean_8"))]


RULE_COLUMNS = ("swap", "negation_added", "negation_dropped", "number_near", "polarity", "contrast_graded",
                "reversed_by_numbers")
"""The conflict columns whose words the decision's ``conflict_rule`` always flags (:func:`~.features.conflicts`,
:mod:`~.polarity`: ``contrast_graded``, a comparison said the other way; :mod:`~.comparisons`: a comparison the
response's own numbers contradict),
with ``swap_one_side`` on numbers and on closed-class words whose class-mate the context holds there (a changed
number or unit at the end of a copied phrase: ``weighs 12 [pounds]`` against ``weighs 12 kilograms``)."""


@dataclass
class ItemColumns:
    """One response's words (character intervals ``[start, end)``) and its ``(words, columns)`` matrix."""

    words: list[Interval]
    matrix: np.ndarray
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def contradicted(self) -> np.ndarray:
        """Per word, whether a :data:`RULE_COLUMNS` column marks it (the base columns come first in the matrix)."""
        if not len(self.words):
            return np.zeros(0, dtype=bool)
        column = {name: self.matrix[:, BASE_FEATURES.index(name)] > 0
                  for name in (*RULE_COLUMNS, "swap_one_side", "is_number", "contrast_in_context")}
        one_side = column["swap_one_side"] & (column["is_number"] | column["contrast_in_context"])
        return np.logical_or.reduce([column[c] for c in RULE_COLUMNS]) | one_side


def character_scores(detector: Detector | FoldMean, items: Sequence[DetectItem]) -> list[tuple[np.ndarray, bool]]:
    """Per item, a float32 score per response character and whether the member judged it."""
    direct = getattr(detector, "character_scores", None)
    if callable(direct):
        return direct(items)
    out = []
    for item, detection in zip(items, detector.detect_batch(items)):
        scores = np.zeros(len(item.response), dtype=np.float32)
        for span in detection.spans:
            value = 1.0 if span.score is None else float(span.score)
            scores[span.start:span.end] = np.maximum(scores[span.start:span.end], value)
        out.append((scores, detection.error is None))
    return out


class FoldMean:
    """A member trained out of fold and not refitted: its per-character scores are the mean of its fold models'
    (an item counts as judged only when every fold model judged it). Not a detector of its own: it exists only as a
    stacked member's column source."""

    kind = "fold-mean"

    def __init__(self, folds: Sequence[Detector]) -> None:
        self.folds = list(folds)

    def character_scores(self, items: Sequence[DetectItem]) -> list[tuple[np.ndarray, bool]]:
        each = [character_scores(fold, items) for fold in self.folds]
        return [(np.mean([scores[i][0] for scores in each], axis=0).astype(np.float32),
                 all(scores[i][1] for scores in each)) for i in range(len(items))]

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "folds": [fold.describe() for fold in self.folds]}


def _per_word(words_of: Sequence[Interval], starts: list[np.ndarray], ends: list[np.ndarray],
              best: list[np.ndarray]) -> np.ndarray:
    """Each word's mean over the pieces inside it of ``best`` (pieces given by their character intervals); 0 for
    a word no piece covers (past the encoder's length limit)."""
    out = np.zeros(len(words_of), dtype=np.float32)
    if not best:
        return out
    start, end, value = np.concatenate(starts), np.concatenate(ends), np.concatenate(best)
    order = np.argsort(start, kind="stable")
    start, end, value = start[order], end[order], value[order]
    for k, (a, b) in enumerate(words_of):
        lo, hi = np.searchsorted(start, a, side="left"), np.searchsorted(start, b, side="left")
        inside = value[lo:hi][end[lo:hi] <= b]
        if len(inside):
            out[k] = float(inside.sum()) / len(inside)  # = inside.mean(), bit for bit, without its overhead
    return out


def _soft_support(words_of: Sequence[Interval], cut: Sequence[Interval],
                  pieces: Sequence[tuple[np.ndarray, np.ndarray]], context: np.ndarray) -> np.ndarray:
    """Each word's soft support (see :meth:`ColumnBuilder._encoder_columns`) from the token ``pieces`` of the
    response sentences ``cut`` (offsets within each sentence) and the context's token embeddings."""
    starts, ends, best = [], [], []
    for (a, _), (offsets, embeddings) in zip(cut, pieces):
        if len(offsets) and len(context):
            starts.append(offsets[:, 0] + a)
            ends.append(offsets[:, 1] + a)
            best.append((embeddings @ context.T).max(axis=1))
    return _per_word(words_of, starts, ends, best)


class ColumnBuilder:
    """Builds :class:`ItemColumns` for items; ``encoder`` (a
    :class:`~ragtruth_spans.detectors.shared.encoder.SentenceEncoder` or None), ``members``
    (``{name: detector}``) fix the columns."""

    def __init__(self, encoder: Any | None = None, members: dict[str, Detector | FoldMean] | None = None,
                 drop: Sequence[str] = (), token_support: bool = False) -> None:
        self.encoder = encoder
        self.token_support = token_support
        self.dropped = [BASE_FEATURES.index(name) for name in drop]
        self.members = dict(members or {})
        self._indexes = BoundedCache(INDEX_CACHE_SIZE)  # (context, question) -> ContextIndex

    @property
    def names(self) -> list[str]:
        return column_names(list(self.members))

    def index(self, context: str, question: str | None) -> ContextIndex:
        """The (cached) word-feature index of ``context`` and ``question``."""
        return self._indexes.get_or_make((context, question), lambda: ContextIndex.build(context, question))

    def prepare(self, context: str, task: str, question: str | None) -> None:
        """What the columns of any response to ``context`` share, done ahead: its word-feature index and the
        encoder's work (its units' sentence and, with ``token_support``, token embeddings, into the encoder's
        context cache)."""
        self.index(context, question)
        if self.encoder is not None:
            units = evidence_units(context, task, question, split=sentences)
            self.encoder.prepare_context(units, with_tokens=self.token_support)

    def _encoder_columns(self, items: Sequence[DetectItem], cuts: Sequence[list[Interval]],
                         spans: Sequence[list[Interval]]) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
        """Per item, ``(cosines, soft)`` (None without an encoder; ``soft`` None unless ``token_support``):

        - ``cosines``: each response sentence's cosine with its best context unit (None for no sentence);
        - ``soft``: each word's soft support: the mean over the word's pieces of the piece's highest cosine with any
          token of the context, from the encoder's contextual token embeddings — high for a copied or paraphrased
          word (``inhabitants`` for ``residents``), low for a word nothing in the context is like (``King Edward``).

        Every response sentence of the call is encoded in one batched pass (sentence and token embeddings together
        with ``token_support``; a sentence encoded lately, as the gate checks a streamed answer sentence by sentence,
        comes from the encoder's sentence cache), each distinct context once (cached)."""
        if self.encoder is None:
            return [None] * len(items), [None] * len(items)
        from ragtruth_spans.detectors.shared.encoder import max_cosine

        texts = [item.response[a:b] for item, cut in zip(items, cuts) for a, b in cut]
        if self.token_support:
            encoded, pieces = self.encoder.encode_with_tokens(texts, cached=True)  # see the docstring
        else:
            encoded, pieces = self.encoder.encode(texts), None
        cosines: list[np.ndarray | None] = []
        soft: list[np.ndarray | None] = []
        at = 0
        for item, cut, words_of in zip(items, cuts, spans):
            units = evidence_units(item.context, item.task, item.question, split=sentences)
            context = self.encoder.context_tokens(units) if pieces is not None else None
            cosines.append(max_cosine(encoded[at:at + len(cut)], self.encoder.encode_units(units)) if cut else None)
            if pieces is not None:
                soft.append(_soft_support(words_of, cut, pieces[at:at + len(cut)], context))
            at += len(cut)
        return cosines, soft if pieces is not None else [None] * len(items)

    def build(self, items: Sequence[DetectItem],
              member_scores: dict[str, list[tuple[np.ndarray, bool]]] | None = None) -> list[ItemColumns]:
        """Columns of every item; ``member_scores`` (``{member: per-item character scores}``) replaces running
        the members, as training does with out-of-fold scores."""
        scores = dict(member_scores or {})
        for name, detector in self.members.items():
            if name not in scores:
                scores[name] = character_scores(detector, items)
        cuts = [sentences(item.response) for item in items]
        spans_of = [words(item.response) for item in items]
        cosines, soft = self._encoder_columns(items, cuts, spans_of)
        out = []
        for i, item in enumerate(items):
            spans = spans_of[i]
            base = word_features(item.response, spans, self.index(item.context, item.question), task=item.task,
                                 sentences=cuts[i], sentence_cosine=cosines[i], soft_support=soft[i])
            base[:, self.dropped] = 0.0
            blocks, failed = [base], []
            for name in self.members:
                values, ok = scores[name][i]
                blocks.append(member_columns(spans, values))
                if not ok:
                    failed.append(name)
            diagnostics = {"member_errors": failed} if failed else {}
            out.append(ItemColumns(spans, np.concatenate(blocks, axis=1), diagnostics))
        return out
