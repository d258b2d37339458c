"""The one tuner: its counter pools exactly what the evaluator reports, one tie rule (the first candidate, the lowest
threshold), and the token-classification family's tuning goes through it."""

from __future__ import annotations

import random

import numpy as np
import pytest

from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection
from ragtruth_spans.detectors.token_classification.tuning import best_threshold
from ragtruth_spans.evaluation import evaluate
from ragtruth_spans.evaluation.counts import pooled_figures
from ragtruth_spans.training.tuning import PAPER_GRID, grid, tune_thresholds


def random_case(seed: int, n: int = 40) -> tuple[list[Record], list[list[Span]]]:
    """Records with 0-3 gold spans and predictions that hit, shift, overlap, duplicate or invent spans."""
    rng = random.Random(seed)
    records, predicted = [], []
    for i in range(n):
        words = ["alpha", "beta", "gamma", "delta", "42", "x"]
        response = " ".join(rng.choice(words) for _ in range(rng.randint(3, 30)))
        spans = []
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            a = rng.randrange(len(response))
            spans.append(Span(a, min(len(response), a + rng.randint(1, 12))))
        records.append(Record(id=f"r{i}", source_id=f"s{i}", task_type=rng.choice(["QA", "Summary", "Data2txt"]),
                              model=rng.choice(["m1", "m2"]), split="test", quality="good", response=response,
                              context="c", spans=spans))
        pred = []
        for _ in range(rng.choice([0, 1, 2, 3])):
            a = rng.randrange(len(response))
            pred.append(Span(a, min(len(response), a + rng.randint(1, 15))))
        if pred and rng.random() < 0.3:
            pred.append(pred[0])  # a duplicate
        predicted.append(pred)
    return records, predicted


@pytest.mark.parametrize("seed", range(6))
def test_the_counter_pools_exactly_what_the_evaluator_reports(seed: int) -> None:
    records, predicted = random_case(seed)
    overall = evaluate(records, {r.id: p for r, p in zip(records, predicted)}).overall
    figures = pooled_figures(records, predicted)
    for level in ("span", "response", "response_macro"):
        for metric in ("precision", "recall", "f1"):
            assert figures[level][metric] == pytest.approx(overall[level][metric], abs=1e-12), (level, metric)


def test_the_counter_refuses_predictions_out_of_step_with_the_records() -> None:
    records, predicted = random_case(0, n=3)
    with pytest.raises(ValueError, match="2 predictions for 3 gold records"):
        pooled_figures(records, predicted[:2])


def test_the_tuner_picks_the_evaluators_best_and_the_first_of_ties() -> None:
    records, _ = random_case(1, n=30)
    scores = [np.random.default_rng(i).random() for i in range(len(records))]

    def detect(candidate: dict[str, float]) -> list[Detection]:  # flag the whole response above the threshold
        return [Detection(spans=[Span(0, len(r.response))] if s >= candidate["threshold"] else [], score=s)
                for r, s in zip(records, scores)]

    candidates = grid(["threshold"], PAPER_GRID)
    result = tune_thresholds(records, candidates, detect, criterion="response_f1")
    by_evaluator = [evaluate(records, {r.id: d.spans for r, d in zip(records, detect(c))}).overall["response"]["f1"]
                    for c in candidates]
    best = max(by_evaluator)
    assert result.value == pytest.approx(best)
    assert result.thresholds == candidates[next(i for i, v in enumerate(by_evaluator) if v == pytest.approx(best))]
    assert [row["response_f1"] for row in result.table] == pytest.approx(by_evaluator)

    flat = tune_thresholds(records, candidates, lambda c: [[] for _ in records], criterion="span_f1")
    assert flat.thresholds == {"threshold": 0.1}  # every candidate ties: the first (lowest) wins


def test_the_token_classification_tuner_takes_the_lowest_threshold_of_a_plateau() -> None:
    record = Record(id="a", source_id="s", task_type="QA", model="m", split="dev", quality="good",
                    response="one two three", context="c", spans=[Span(4, 7)])
    offsets = [[(0, 3), (4, 7), (8, 13)]]
    probs = [np.array([[0.9, 0.1], [0.1, 0.9], [0.9, 0.1]])]  # (tokens, labels): every threshold in (0.1, 0.9]
    # gives the gold span exactly
    best = best_threshold([record], probs, offsets, scheme="binary", span_edges="tokens", grid=[0.3, 0.5, 0.2, 0.8])
    assert best["threshold"] == 0.2 and best["f1"] == pytest.approx(1.0)
