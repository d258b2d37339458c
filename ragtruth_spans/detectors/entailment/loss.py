"""The training loss and the accuracies of the entailment model.

**Loss.** Three-way cross-entropy over (entailment, neutral, contradiction), except for a binary negative row
(label id :data:`~.pairs.NOT_ENTAILMENT`), whose loss is ``-log(P(neutral) + P(contradiction))``: it says the
hypothesis is not entailed and nothing about which of the two other labels holds, so it teaches nothing about
that split. Summed over the rows and divided by the rows of the whole accumulated batch.

**Accuracy** (per source, :func:`accuracies`): three-way accuracy (argmax) on the three-way rows; binary accuracy
(P(entailment) > 0.5 against "entailment") on every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtruth_spans.detectors.entailment.pairs import ENTAILMENT, NOT_ENTAILMENT, Pair


def masked_nli_loss(logits: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
    """The summed loss of ``logits`` (``n x 3``) against ``labels`` (ids 0–3, see the module docstring) divided
    by ``num_items_in_batch`` (the rows of the accumulated batch; this batch's rows when None)."""
    import torch

    log_p = torch.log_softmax(logits.float(), dim=-1)
    labels = labels.to(log_p.device)
    binary_negative = labels == NOT_ENTAILMENT
    three_way = -log_p.gather(1, labels.clamp(max=NOT_ENTAILMENT - 1).unsqueeze(1)).squeeze(1)
    not_entailed = -torch.logsumexp(log_p[:, 1:], dim=-1)
    total = torch.where(binary_negative, not_entailed, three_way).sum()
    count = num_items_in_batch if num_items_in_batch is not None else labels.numel()
    return total / torch.clamp(torch.as_tensor(count, device=total.device, dtype=total.dtype), min=1.0)


def trainer_loss(outputs: Any, labels: Any, num_items_in_batch: Any = None) -> Any:
    """``compute_loss_func`` of the ``Trainer``: :func:`masked_nli_loss` of the model's logits."""
    return masked_nli_loss(outputs["logits"], labels, num_items_in_batch)


def accuracies(pairs: Sequence[Pair], probabilities: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per source (and ``all``): ``pairs``, ``three_way_pairs``, ``three_way_accuracy`` (None without three-way
    rows) and ``binary_accuracy``, from ``probabilities`` (``n x 3``, rows in the order of ``pairs``)."""
    probabilities = np.asarray(probabilities, dtype=np.float64).reshape(len(pairs), 3)
    labels = np.array([p.label for p in pairs], dtype=np.int64)
    sources = np.array([p.source for p in pairs], dtype=object)
    three = np.array([p.three_way for p in pairs], dtype=bool)
    predicted = probabilities.argmax(axis=1) if len(pairs) else np.zeros(0, dtype=np.int64)
    entailed = probabilities[:, ENTAILMENT] > 0.5
    out: dict[str, dict[str, Any]] = {}
    for name in [*sorted(set(sources.tolist())), "all"]:
        rows = np.ones(len(pairs), dtype=bool) if name == "all" else sources == name
        if not rows.any():
            continue
        three_rows = rows & three
        out[name] = {
            "pairs": int(rows.sum()),
            "three_way_pairs": int(three_rows.sum()),
            "three_way_accuracy": round(float((predicted[three_rows] == labels[three_rows]).mean()), 4)
            if three_rows.any() else None,
            "binary_accuracy": round(float((entailed[rows] == (labels[rows] == ENTAILMENT)).mean()), 4),
        }
    return out
