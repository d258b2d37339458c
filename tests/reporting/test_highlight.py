"""Character-exact highlighting: the marked runs of a response agree with the evaluator's counts, character for
character, on hand-made cases and on random spans (overlapping, touching, duplicated, empty)."""

from __future__ import annotations

import random

import pytest

from ragtruth_spans.core.types import HALLUCINATION_TYPES, Record, Span
from ragtruth_spans.evaluation import evaluate
from ragtruth_spans.reporting.highlight import KINDS, Run, highlight_runs, run_totals


def test_runs_of_one_response() -> None:
    gold = [Span(2, 8, "Evident Conflict"), Span(6, 10, "Subtle Baseless Info")]
    pred = [Span(0, 4, score=0.9, type="Evident Conflict"), Span(9, 12, score=0.4)]
    assert highlight_runs(gold, pred) == [
        Run(0, 2, "false", (), 0.9, ("Evident Conflict",)),
        Run(2, 4, "correct", ("Evident Conflict",), 0.9, ("Evident Conflict",)),
        Run(4, 6, "missed", ("Evident Conflict",)),
        Run(6, 8, "missed", ("Evident Conflict", "Subtle Baseless Info")),
        Run(8, 9, "missed", ("Subtle Baseless Info",)),
        Run(9, 10, "correct", ("Subtle Baseless Info",), 0.4),
        Run(10, 12, "false", (), 0.4),
    ]


def test_touching_and_duplicate_spans_make_one_run_and_empty_spans_none() -> None:
    gold = [Span(0, 3, "Evident Conflict"), Span(3, 5, "Evident Conflict"), Span(0, 3, "Evident Conflict")]
    assert highlight_runs(gold, [Span(7, 7, score=1.0)]) == [Run(0, 5, "missed", ("Evident Conflict",))]
    assert highlight_runs([], []) == []


def test_overlapping_predictions_keep_the_highest_score() -> None:
    runs = highlight_runs([], [Span(0, 6, score=0.2), Span(3, 9, score=0.7), Span(4, 5)])
    assert [(r.start, r.end, r.score) for r in runs] == [(0, 3, 0.2), (3, 9, 0.7)]
    assert run_totals(runs) == {"correct": 0, "missed": 0, "false": 9}


def _random_corpus(seed: int) -> tuple[list[Record], dict[str, list[Span]]]:
    rng = random.Random(seed)
    gold, pred = [], {}
    for i in range(80):
        n = rng.randrange(5, 150)
        response = "".join(rng.choice("ab c🍣é\n") for _ in range(n))

        def spans(k: int, typed: bool, scored: bool, n: int = n) -> list[Span]:
            out = []
            for _ in range(k):
                start = rng.randrange(0, n)
                end = min(n, start + rng.choice([0, 1, 2, 7, 30]))
                out.append(Span(start, end, rng.choice(HALLUCINATION_TYPES) if typed else None,
                                score=rng.random() if scored else None))
            return out + out[:1] * (rng.random() < 0.3)

        gold.append(Record(id=str(i), source_id=str(i), task_type="QA", model="m", split="test", quality="good",
                           response=response, context="c", spans=sorted(spans(rng.choice([0, 1, 3]), True, False))))
        pred[str(i)] = spans(rng.choice([0, 1, 2, 5]), rng.random() < 0.5, True)
    return gold, pred


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_run_characters_equal_the_evaluator_counts(seed: int) -> None:
    gold, pred = _random_corpus(seed)
    counts = evaluate(gold, pred).counts
    totals = dict.fromkeys(KINDS, 0)
    typed = {t: {"correct": 0, "missed": 0} for t in HALLUCINATION_TYPES}
    for record in gold:
        for run in highlight_runs(record.spans, pred[record.id]):
            assert run.end > run.start
            totals[run.kind] += len(run)
            for t in run.gold_types:
                typed[t][run.kind] += len(run)
    assert totals["correct"] == counts["overlap_chars"]
    assert totals["correct"] + totals["missed"] == counts["gold_chars"]
    assert totals["correct"] + totals["false"] == counts["predicted_chars"]
    for t in HALLUCINATION_TYPES:
        assert typed[t]["correct"] == counts["type_covered_chars"][t]
        assert typed[t]["correct"] + typed[t]["missed"] == counts["type_gold_chars"][t]
