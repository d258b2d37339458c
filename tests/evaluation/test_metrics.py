"""The pure metric definitions (ragtruth_spans.evaluation.metrics), with hand-computed cases."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from seqeval.metrics import f1_score, precision_score, recall_score

from ragtruth_spans.core.types import Span
from ragtruth_spans.evaluation import metrics

SENTENCE = "The cat sat on the mat."
# words:    The[0,3) cat[4,7) sat[8,11) on[12,14) the[15,18) mat.[19,23)


def test_char_counts_merges_overlapping_and_touching_spans():
    # gold [0,10) ∪ [5,15) = [0,15) → 15 chars; pred [10,20) → 10 chars; overlap [10,15) → 5
    assert metrics.char_counts([Span(0, 10), Span(5, 15)], [Span(10, 20)]) == (15, 10, 5)
    # touching spans [0,5) and [5,10) are one interval of 10 characters, each character counted once
    assert metrics.char_counts([Span(0, 5), Span(5, 10)], [Span(0, 10), Span(0, 10)]) == (10, 10, 10)
    # empty spans count for nothing
    assert metrics.char_counts([], [Span(3, 3)]) == (0, 0, 0)


def test_type_char_counts_pools_predictions_of_any_type():
    gold = [Span(0, 10, "Evident Conflict"), Span(5, 20, "Subtle Baseless Info"),
            Span(30, 40, "Evident Conflict")]
    pred = [Span(8, 12, "Subtle Conflict"), Span(35, 50)]
    # Evident Conflict: G = [0,10) ∪ [30,40) = 20 chars; covered [8,10) + [35,40) = 2 + 5 = 7
    # Subtle Baseless Info: G = [5,20) = 15 chars; covered [8,12) = 4 (the predicted type does not matter)
    assert metrics.type_char_counts(gold, pred) == {"Evident Conflict": (20, 7), "Subtle Baseless Info": (15, 4)}
    assert metrics.type_char_counts([Span(0, 4)], []) == {metrics.UNTYPED: (4, 0)}


def test_words_are_non_whitespace_runs():
    assert metrics.words(SENTENCE) == [(0, 3), (4, 7), (8, 11), (12, 14), (15, 18), (19, 23)]
    assert metrics.words("  a\n\tbé  ") == [(2, 3), (5, 7)]
    assert metrics.words("") == []


@pytest.mark.parametrize(("spans", "expected"), [
    ([Span(4, 11)], ["O", "B-HAL", "I-HAL", "O", "O", "O"]),          # "cat sat" exactly
    ([Span(5, 6)], ["O", "B-HAL", "O", "O", "O", "O"]),               # one character inside "cat"
    ([Span(3, 4)], ["O"] * 6),                                        # whitespace only: no word overlaps
    ([Span(4, 5), Span(6, 9)], ["O", "B-HAL", "B-HAL", "O", "O", "O"]),  # "cat" belongs to the first interval
    ([Span(4, 7), Span(6, 11)], ["O", "B-HAL", "I-HAL", "O", "O", "O"]),  # overlapping spans merge: one entity
    ([Span(4, 7), Span(8, 11)], ["O", "B-HAL", "B-HAL", "O", "O", "O"]),  # a space between: two entities
    ([Span(0, 23)], ["B-HAL"] + ["I-HAL"] * 5),
])
def test_bio_tags(spans, expected):
    assert metrics.bio_tags(metrics.words(SENTENCE), spans) == expected


def test_entity_counts_exact_match():
    # gold entities: "cat sat" and "mat."; predicted: "cat sat" (exact) and "the mat." (boundary off)
    gold = [Span(4, 11), Span(19, 23)]
    pred = [Span(4, 11), Span(15, 23)]
    assert metrics.word_entity_counts(SENTENCE, gold, pred) == (1, 2, 2)
    assert metrics.word_entity_counts(SENTENCE, [], []) == (0, 0, 0)


def test_pooled_entity_counts_equal_seqeval_micro_scores():
    rng = random.Random(0)
    gold_tags, pred_tags, sums = [], [], np.zeros(3)
    for _ in range(60):
        text = " ".join("w" * rng.randint(1, 6) for _ in range(rng.randint(1, 25)))
        gold = [Span(*sorted(rng.sample(range(len(text) + 1), 2))) for _ in range(rng.randint(0, 3))]
        pred = [Span(*sorted(rng.sample(range(len(text) + 1), 2))) for _ in range(rng.randint(0, 3))]
        words = metrics.words(text)
        gold_tags.append(metrics.bio_tags(words, gold))
        pred_tags.append(metrics.bio_tags(words, pred))
        sums += metrics.word_entity_counts(text, gold, pred)
    p, r, f = metrics.prf(*sums)
    assert sums[0] > 0
    assert p == pytest.approx(precision_score(gold_tags, pred_tags))
    assert r == pytest.approx(recall_score(gold_tags, pred_tags))
    assert f == pytest.approx(f1_score(gold_tags, pred_tags))


def test_prf_hand_values_and_zero_conventions():
    # tp=3, predicted=4, gold=6 → P = 0.75, R = 0.5, F1 = 2*0.75*0.5/1.25 = 0.6
    p, r, f = metrics.prf(3, 4, 6)
    assert (float(p), float(r), float(f)) == pytest.approx((0.75, 0.5, 0.6))
    assert [float(x) for x in metrics.prf(0, 0, 5)] == [0.0, 0.0, 0.0]  # nothing predicted: P = 0
    assert [float(x) for x in metrics.prf(0, 5, 0)] == [0.0, 0.0, 0.0]  # no gold: R = 0
    assert [float(x) for x in metrics.prf(0, 0, 0)] == [0.0, 0.0, 0.0]
    # vectorised over resamples
    p, r, f = metrics.prf(np.array([1, 0]), np.array([2, 0]), np.array([4, 3]))
    assert p.tolist() == [0.5, 0.0] and r.tolist() == [0.25, 0.0]
    assert f.tolist() == pytest.approx([2 * 0.5 * 0.25 / 0.75, 0.0])


def test_safe_ratio_undefined_value():
    assert math.isnan(float(metrics.safe_ratio(0, 0, undefined=math.nan)))
    assert float(metrics.safe_ratio(1, 4)) == 0.25


def test_response_score():
    assert metrics.response_score([]) == 0.0
    assert metrics.response_score([Span(0, 1, score=0.2), Span(2, 3, score=0.7)]) == 0.7
    assert metrics.response_score([Span(0, 1, score=0.2), Span(2, 3)]) is None


def test_auroc_hand_value_ties_and_undefined():
    # positives score 0.9, 0.4; negatives 0.5, 0.1: pairs won 0.9>0.5, 0.9>0.1, 0.4>0.1, lost 0.4<0.5 → 3/4
    assert metrics.auroc([True, True, False, False], [0.9, 0.4, 0.5, 0.1]) == pytest.approx(0.75)
    assert metrics.auroc([True, False], [0.5, 0.5]) == pytest.approx(0.5)  # a tie counts 1/2
    assert metrics.auroc([True, True], [0.1, 0.9]) is None  # one class only
    assert metrics.auroc([], []) is None
