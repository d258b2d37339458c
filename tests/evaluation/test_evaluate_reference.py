"""Cross-check the evaluator against a brute-force reference that counts characters with Python sets.

The reference is written independently of `metrics.py` (no interval merging, no pooling helpers): a response's
gold and predicted characters are sets of indices, and every metric is recomputed from its definition in the
README. Random responses with overlapping, duplicated, touching and empty spans must give identical numbers.
"""

from __future__ import annotations

import random

import pytest

from ragtruth_spans.core.types import HALLUCINATION_TYPES, Record, Span
from ragtruth_spans.evaluation.evaluator import evaluate

TASKS = ("QA", "Summary", "Data2txt")
MODELS = ("m1", "m2", "m3")


def _random_spans(rng: random.Random, n_chars: int, k: int, typed: bool) -> list[Span]:
    spans = []
    for _ in range(k):
        start = rng.randrange(0, n_chars)
        end = min(n_chars, start + rng.choice([0, 1, 3, 10, 40]))
        spans.append(Span(start, end, rng.choice(HALLUCINATION_TYPES) if typed else None))
    if spans and rng.random() < 0.3:
        spans.append(spans[0])  # an exact duplicate
    return spans


def _corpus(seed: int) -> tuple[list[Record], dict[str, list[Span]]]:
    rng = random.Random(seed)
    gold, pred = [], {}
    for i in range(60):
        n = rng.randrange(20, 200)
        response = "".join(rng.choice("abc de\n") for _ in range(n))
        spans = _random_spans(rng, n, rng.choice([0, 0, 1, 2, 4]), typed=True)
        gold.append(Record(id=str(i), source_id=str(i // 3), task_type=rng.choice(TASKS),
                           model=rng.choice(MODELS), split="test", quality="good", response=response,
                           context="c", spans=sorted(spans)))
        pred[str(i)] = _random_spans(rng, n, rng.choice([0, 0, 1, 3]), typed=False)
    return gold, pred


def _chars(spans) -> set[int]:
    return {c for s in spans for c in range(s.start, s.end)}


def _prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def _reference(gold: list[Record], pred: dict[str, list[Span]]) -> dict:
    tp = n_pred = n_gold = 0
    rtp = rpred = rgold = 0
    type_gold = {t: 0 for t in HALLUCINATION_TYPES}
    type_cov = {t: 0 for t in HALLUCINATION_TYPES}
    for rec in gold:
        g, p = _chars(rec.spans), _chars(pred[rec.id])
        tp, n_pred, n_gold = tp + len(g & p), n_pred + len(p), n_gold + len(g)
        rtp += bool(g) and bool(p)
        rpred += bool(p)
        rgold += bool(g)
        for t in HALLUCINATION_TYPES:
            gt = _chars(s for s in rec.spans if s.type == t)
            type_gold[t] += len(gt)
            type_cov[t] += len(gt & p)
    return {"span": _prf(tp, n_pred, n_gold), "response": _prf(rtp, rpred, rgold),
            "type_recall": {t: (type_cov[t] / type_gold[t] if type_gold[t] else None) for t in HALLUCINATION_TYPES}}


def _assert_matches(block: dict, ref: dict) -> None:
    for level in ("span", "response"):
        got = tuple(block[level][k] for k in ("precision", "recall", "f1"))
        assert got == pytest.approx(ref[level], abs=1e-12), level
    for t, value in ref["type_recall"].items():
        assert block["type_recall"][t] == (pytest.approx(value, abs=1e-12) if value is not None else None), t


@pytest.mark.parametrize("seed", range(5))
def test_evaluator_matches_a_brute_force_character_set_reference(seed: int) -> None:
    gold, pred = _corpus(seed)
    report = evaluate(gold, pred).to_dict()
    _assert_matches(report["overall"], _reference(gold, pred))
    for task in TASKS:
        subset = [r for r in gold if r.task_type == task]
        if subset:
            _assert_matches(report["by_task"][task], _reference(subset, pred))
    for model in MODELS:
        subset = [r for r in gold if r.model == model]
        if subset:
            _assert_matches(report["by_model"][model], _reference(subset, pred))
