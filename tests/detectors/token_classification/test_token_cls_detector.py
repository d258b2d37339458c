"""The detector around the model, with a stand-in model whose output depends on its window only: ``best``
aggregation takes the same window as ``train_windows: best`` (ties: the earliest in plan order, however a call
is batched), and a response that no window fits gets its own ``Detection.error`` without failing the others."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.token_classification.detector import TokenClassificationDetector
from ragtruth_spans.detectors.token_classification.windows import WindowSettings

GREEK = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
         "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon"]
# A first sentence that ends in the second half of the first window, then a long one: the first window in plan
# order is shorter than the second, so batching (longest first) and plan order disagree.
CONTEXT = " ".join(GREEK[:18]) + ". " + " ".join(GREEK * 3) + "."
RESPONSE = "Zebra yak xylophone"  # shares no token with the context: every window ties at overlap 0


class WindowLengthModel(torch.nn.Module):
    """Logit of "hallucinated" = (window length) / 100 on every token: each window's output tells which it was."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # the detector reads the device from the parameters

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        length = attention_mask.sum(dim=1).float()[:, None, None].expand(-1, input_ids.shape[1], 1)
        return SimpleNamespace(logits=torch.cat([torch.zeros_like(length), length / 100.0], dim=-1))


@pytest.fixture(scope="module")
def tokenizer():
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    return train_bert_tokenizer([CONTEXT, RESPONSE, "Which animals? " * 40], vocab_size=300)


def _detector(tokenizer, *, aggregation: str = "best", batch_size: int = 16, **windows) -> TokenClassificationDetector:
    settings = WindowSettings(**{"max_length": 40, "min_context_tokens": 16, "response_overlap": 4, **windows})
    return TokenClassificationDetector(WindowLengthModel(), tokenizer, scheme="binary", windows=settings,
                                       threshold=0.5, aggregation=aggregation, batch_size=batch_size)


def test_best_aggregation_takes_the_training_window_earliest_in_plan_order_on_ties(tokenizer):
    detector = _detector(tokenizer)
    item = DetectItem(context=CONTEXT, response=RESPONSE, task="Summary")
    planned = detector.plan(item)
    lengths = [len(w.input_ids) for w in planned.windows]
    assert len(set(w.overlap for w in planned.windows)) == 1  # a tie between every window
    assert lengths[0] < max(lengths)  # batch order (longest first) is not plan order
    [trained_on] = planned.best_window()
    assert trained_on is planned.windows[0]
    expected = detector._forward([trained_on])[0]
    for batch_size in (1, 2, 16):  # however the windows are batched, and whatever else is in the call
        detector.batch_size = batch_size
        other = DetectItem(context=CONTEXT[:60], response="Yak zebra", task="QA", question="Which animals?")
        for items in ([item], [other, item]):
            result = detector.window_probabilities(items)[-1]
            assert [p for _, p in result.pieces] and result.relevance == [w.overlap for w in planned.windows]
            assert np.allclose(detector.token_probabilities(result, "best"), expected)
            # pieces come back in plan order (mean/max/min see the same stack whatever the batching)
            assert [len(p) for _, p in result.pieces] == [w.count for w in planned.windows]


def test_an_item_no_window_fits_gets_its_own_error(tokenizer):
    detector = _detector(tokenizer, response_overlap=30)
    items = [
        DetectItem(context=CONTEXT, response=RESPONSE, task="Summary"),
        DetectItem(context=CONTEXT, response=RESPONSE, task="QA", question="Which animals? " * 12),  # no room
        DetectItem(context=CONTEXT, response=" ".join(["zebra yak"] * 20), task="Summary"),  # overlap ≥ segment
    ]
    ok, no_room, no_step = detector.detect_batch(items)
    assert ok.ok and ok.score is not None and ok.diagnostics["windows"] == 3
    assert not no_room.ok and no_room.spans == [] and no_room.score is None
    assert no_room.error.startswith("not run: ") and "leaves no room for the response" in no_room.error
    assert not no_step.ok and "windows.response_overlap=30" in no_step.error
    assert no_room.to_dict()["error"] == no_room.error and no_room.diagnostics == {"windows": 0}
    with pytest.raises(InputError, match="is empty or blank"):  # a blank response is refused however it is made
        DetectItem(context=CONTEXT, response="", task="Data2txt")
    alone = detector.detect(context=CONTEXT, response=RESPONSE, task="Summary")
    assert alone.spans == ok.spans and alone.score == ok.score  # the failures did not change the others
    with pytest.raises(InputError, match="task"):  # a malformed item still fails the call
        detector.detect_batch([items[0], {"context": "c", "response": "r", "task": "Poem"}])
