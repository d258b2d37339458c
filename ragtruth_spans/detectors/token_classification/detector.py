"""The token-classification detector: windows → one forward pass each → aggregated token probabilities → spans.

``load_detector(run_dir)`` (:func:`.run_dir.load_run`) loads what ``ragtruth-spans train`` wrote. For each
response, every window (:mod:`.windows`) is run; windows of all responses of a call are batched together,
longest first, and their outputs put back in plan order (so that aggregation, ``best``'s tie rule included, does
not depend on how a call was batched). Per token, the label probabilities of the windows that hold it are
aggregated; tokens with P(hallucinated) = 1 - P(O) at or above ``threshold`` merge into spans (:mod:`.labels`).
A response that no window fits (the question leaves no room for it within ``max_length``, or
``response_overlap`` leaves no step to slide over it) gets a :class:`Detection` with ``error`` set; the other
responses of the call are detected as usual.

Scores: ``Span.score`` is the mean P(hallucinated) of the span's tokens; ``Detection.score`` (the response score)
is the highest P(hallucinated) of any response token (0.0 for an empty response). Diagnostics per response:
``windows`` (model inputs run) and ``long_response`` (true when the response itself was slid over in segments).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.token_classification.labels import (
    SPAN_EDGES,
    hallucination_probability,
    label_names,
    spans_from_probabilities,
)
from ragtruth_spans.detectors.token_classification.windows import (
    AGGREGATIONS,
    Layout,
    ResponseWindows,
    Window,
    WindowSettings,
    aggregate,
    plan_windows,
)

DEFAULT_THRESHOLD = 0.5
"""The threshold of a run that was not tuned (no eval split) and names none."""


@dataclass
class WindowProbabilities:
    """What the model said about one response: its token offsets and, per window in plan order, ``(first token,
    (count, labels) probabilities)`` and the window's relevance (:attr:`~.windows.Window.overlap`). ``error``:
    why no window could be built (then nothing was run)."""

    offsets: list[tuple[int, int]]
    pieces: list[tuple[int, np.ndarray]]
    segments: int
    relevance: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def windows(self) -> int:
        return len(self.pieces)


class TokenClassificationDetector(Detector):
    """A trained token classifier (see the module docstring). ``batch_size``: windows run together."""

    kind = "token-classification"

    def __init__(self, model: Any, tokenizer: Any, *, scheme: str, windows: WindowSettings, threshold: float,
                 aggregation: str = "mean", span_edges: str = "trim-space", batch_size: int = 16,
                 run_info: Mapping[str, Any] | None = None) -> None:
        check_choice(aggregation, AGGREGATIONS, "aggregation", field="aggregation")
        check_choice(span_edges, SPAN_EDGES, "span edge rule", field="span_edges")
        if not 0.0 < threshold < 1.0:
            raise InputError(f"must be in (0, 1), got {threshold}", field="threshold")
        if batch_size < 1:
            raise InputError(f"must be >= 1, got {batch_size}", field="batch_size")
        self.labels = label_names(scheme)
        if aggregation == "by-type" and scheme != "typed":
            raise InputError("aggregation by-type needs a run trained with typed labels", field="aggregation")
        self.model, self.tokenizer, self.scheme = model, tokenizer, scheme
        self.layout = Layout.of(tokenizer)
        self.settings = windows
        self.threshold, self.aggregation, self.span_edges = threshold, aggregation, span_edges
        self.batch_size = batch_size
        self.run_info = dict(run_info or {})

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "run_dir": self.run_info.get("run_dir"),
                "fingerprint": self.run_info.get("fingerprint"), "threshold": self.threshold,
                "aggregation": self.aggregation, "span_edges": self.span_edges,
                "max_length": self.settings.max_length}

    # --- windows → probabilities ---------------------------------------------------------------------------

    def plan(self, item: DetectItem) -> ResponseWindows:
        return plan_windows(self.tokenizer, self.layout, self.settings, context=item.context,
                            response=item.response, question=item.question)

    def window_probabilities(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]
                             ) -> list[WindowProbabilities]:
        """Run every window of every item (batched, longest first); per item, its windows' probabilities in plan
        order. An item no window fits gets a result with ``error`` set (a malformed item raises)."""
        checked = [DetectItem.of(item) for item in items]
        plans: list[ResponseWindows | None] = []
        errors: dict[int, str] = {}
        for i, item in enumerate(checked):
            try:
                plans.append(self.plan(item))
            except InputError as exc:
                plans.append(None)
                errors[i] = str(exc)
        flat = [(i, j, w) for i, plan in enumerate(plans) if plan is not None and plan.offsets
                for j, w in enumerate(plan.windows)]
        flat.sort(key=lambda run: -len(run[2].input_ids))
        outputs: list[dict[int, np.ndarray]] = [{} for _ in plans]
        for start in range(0, len(flat), self.batch_size):
            chunk = flat[start:start + self.batch_size]
            for (i, j, _), probs in zip(chunk, self._forward([w for _, _, w in chunk])):
                outputs[i][j] = probs
        results = []
        for i, plan in enumerate(plans):
            if plan is None:
                results.append(WindowProbabilities([], [], 0, error=errors[i]))
                continue
            ran = sorted(outputs[i])  # plan order
            results.append(WindowProbabilities(plan.offsets, [(plan.windows[j].first, outputs[i][j]) for j in ran],
                                               plan.segments, [plan.windows[j].overlap for j in ran]))
        return results

    def _forward(self, windows: Sequence[Window]) -> list[np.ndarray]:
        """``(count, labels)`` probabilities of each window's response tokens (one right-padded batch)."""
        import torch

        device = next(self.model.parameters()).device
        width = max(len(w.input_ids) for w in windows)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(windows), width), pad, dtype=torch.long)
        mask = torch.zeros((len(windows), width), dtype=torch.long)
        types = torch.zeros((len(windows), width), dtype=torch.long) if windows[0].token_type_ids else None
        for row, window in enumerate(windows):
            n = len(window.input_ids)
            ids[row, :n] = torch.tensor(window.input_ids)
            mask[row, :n] = 1
            if types is not None:
                types[row, :n] = torch.tensor(window.token_type_ids)
        inputs = {"input_ids": ids.to(device), "attention_mask": mask.to(device)}
        if types is not None:
            inputs["token_type_ids"] = types.to(device)
        with torch.inference_mode():
            probs = torch.softmax(self.model(**inputs).logits.float(), dim=-1).cpu().numpy()
        return [probs[row, w.response_start:w.response_start + w.count] for row, w in enumerate(windows)]

    # --- probabilities → detections ------------------------------------------------------------------------

    def token_probabilities(self, result: WindowProbabilities, aggregation: str | None = None) -> np.ndarray:
        """``(tokens, labels)`` probabilities of one response, its windows aggregated."""
        return aggregate(len(result.offsets), result.pieces, aggregation or self.aggregation, self.labels,
                         relevance=result.relevance)

    def to_detection(self, response: str, result: WindowProbabilities) -> Detection:
        diagnostics: dict[str, Any] = {"windows": result.windows}
        if result.error is not None:
            return Detection(spans=[], score=None, diagnostics=diagnostics, error=f"not run: {result.error}")
        if result.segments > 1:
            diagnostics["long_response"] = True
        if not result.offsets:
            return Detection(spans=[], score=0.0, diagnostics=diagnostics)
        probs = self.token_probabilities(result)
        spans = spans_from_probabilities(response, result.offsets, probs, self.threshold, scheme=self.scheme,
                                         span_edges=self.span_edges)
        score = round(float(hallucination_probability(probs).max()), 6)
        return Detection(spans=spans, score=score, diagnostics=diagnostics)

    def character_scores(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]
                         ) -> list[tuple[np.ndarray, bool]]:
        """Per item, P(hallucinated) of every response character (its token's, 0 between tokens) and whether
        the item could be run (a stacked detector's member columns)."""
        checked = [DetectItem.of(item) for item in items]
        out = []
        for item, result in zip(checked, self.window_probabilities(checked)):
            scores = np.zeros(len(item.response), dtype=np.float32)
            if result.error is None and result.offsets:
                probs = hallucination_probability(self.token_probabilities(result))
                for (start, end), value in zip(result.offsets, probs):
                    scores[start:end] = np.maximum(scores[start:end], value)
            out.append((scores, result.error is None))
        return out

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        items = [DetectItem.of(item) for item in items]
        return [self.to_detection(item.response, result)
                for item, result in zip(items, self.window_probabilities(items))]
