"""The masked NLI loss (a binary negative row teaches only "not entailed") and the per-source accuracies."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragtruth_spans.detectors.entailment.loss import accuracies, masked_nli_loss
from ragtruth_spans.detectors.entailment.pairs import Pair

torch = pytest.importorskip("torch")


def test_a_binary_negative_row_costs_minus_log_of_neutral_plus_contradiction():
    logits = torch.tensor([[2.0, 0.5, -1.0]])
    p = torch.softmax(logits, dim=-1)[0].tolist()
    loss = masked_nli_loss(logits, torch.tensor([3]))
    assert loss.item() == pytest.approx(-math.log(p[1] + p[2]), rel=1e-6)
    # the same row labelled neutral or contradiction costs more: the binary row does not pick one of them
    assert masked_nli_loss(logits, torch.tensor([1])).item() == pytest.approx(-math.log(p[1]), rel=1e-6)
    assert masked_nli_loss(logits, torch.tensor([2])).item() == pytest.approx(-math.log(p[2]), rel=1e-6)


def test_a_binary_negative_row_gives_no_gradient_between_neutral_and_contradiction():
    logits = torch.tensor([[0.3, 1.0, -0.4]], requires_grad=True)
    masked_nli_loss(logits, torch.tensor([3])).backward()
    g = logits.grad[0]
    p = torch.softmax(logits.detach(), dim=-1)[0]
    # d/dz of -log(p_n + p_c): p_e for entailment, -p_e * p_k / (p_n + p_c) for k in (n, c)
    assert g[0].item() == pytest.approx(p[0].item(), rel=1e-5)
    assert (g[1] / g[2]).item() == pytest.approx((p[1] / p[2]).item(), rel=1e-5)  # the split is left as it is


def test_three_way_rows_are_cross_entropy_and_the_sum_is_divided_by_the_accumulated_rows():
    logits = torch.tensor([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.5, 0.5, 3.0], [1.0, 1.0, 1.0]])
    labels = torch.tensor([0, 1, 2, 3])
    expected = torch.nn.functional.cross_entropy(logits[:3], labels[:3], reduction="sum").item() - math.log(2 / 3)
    assert masked_nli_loss(logits, labels).item() == pytest.approx(expected / 4, rel=1e-6)
    assert masked_nli_loss(logits, labels, num_items_in_batch=8).item() == pytest.approx(expected / 8, rel=1e-6)


def test_accuracies_per_source_three_way_on_three_way_rows_binary_on_all():
    pairs = [Pair("p", "h", 0, "snli"), Pair("p", "h", 2, "snli"), Pair("p", "h", 1, "snli"),
             Pair("p", "h", 3, "fever_rte", binary=True), Pair("p", "h", 0, "fever_rte", binary=True)]
    probabilities = np.array([[0.8, 0.1, 0.1], [0.1, 0.6, 0.3], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4], [0.4, 0.5, 0.1]])
    found = accuracies(pairs, probabilities)
    assert found["snli"] == {"pairs": 3, "three_way_pairs": 3, "three_way_accuracy": round(2 / 3, 4),
                             "binary_accuracy": 1.0}
    assert found["fever_rte"] == {"pairs": 2, "three_way_pairs": 0, "three_way_accuracy": None,
                                  "binary_accuracy": 0.5}
    assert found["all"]["pairs"] == 5 and found["all"]["binary_accuracy"] == 0.8
