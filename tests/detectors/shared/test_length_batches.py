"""Batches of similar token counts for the sentence encoder: every text once, none too wide."""

from __future__ import annotations

import random

from ragtruth_spans.detectors.shared.encoder import length_batches


def test_every_text_is_in_one_batch_longest_first_and_batches_are_bounded() -> None:
    lengths = [random.Random(seed).randint(3, 256) for seed in range(500)]
    batches = length_batches(lengths, batch_size=64)
    assert sorted(i for batch in batches for i in batch) == list(range(500))
    assert all(1 <= len(batch) <= 64 for batch in batches)
    order = [lengths[i] for batch in batches for i in batch]
    assert order == sorted(lengths, reverse=True)
    for batch in batches:
        longest = lengths[batch[0]]
        assert all(lengths[i] >= 0.85 * longest or longest - lengths[i] < 4 for i in batch)
    padded = sum(len(batch) * lengths[batch[0]] for batch in batches)
    assert padded < 1.1 * sum(lengths)


def test_texts_of_one_length_fill_whole_batches() -> None:
    assert [len(batch) for batch in length_batches([20] * 130, batch_size=64)] == [64, 64, 2]
    assert length_batches([], batch_size=8) == []
