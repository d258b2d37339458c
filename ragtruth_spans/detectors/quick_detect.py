"""``ragtruth_spans.detect(context, response, question=None)``: one call, the shipped detector, no setup.

The shipped detector (:mod:`ragtruth_spans.detectors.shipped`) is loaded on the first call and kept for the rest
of the process (one load, a few seconds: the sentence encoder); later calls cost the detection only.
"""

from __future__ import annotations

from functools import cache

from ragtruth_spans.detectors.base import Detection, DetectItem, Detector, quick_task


@cache
def shipped_detector() -> Detector:
    """The shipped detector, loaded once per process (``load_detector()``)."""
    from ragtruth_spans.detectors.loader import load_detector

    return load_detector()


def detect(context: str, response: str, question: str | None = None, *, task: str | None = None) -> Detection:
    """The hallucinated spans of ``response`` given ``context`` (and the ``question`` it answers, if any), by the
    detector that ships with the package (docs/MODEL_CARD.md).

    ``task`` is RAGTruth's task type, which the detector's thresholds depend on: ``QA``, ``Summary`` or
    ``Data2txt``; by default ``QA`` with a question and ``Summary`` without. Returns a
    :class:`~ragtruth_spans.detectors.base.Detection`: ``spans`` in characters of ``response``, half-open
    ``[start, end)``, each with its ``score`` (and ``type`` when the detector tells one), and ``score``, the
    probability-like response score (higher: more likely hallucinated). Bad input is an
    :class:`~ragtruth_spans.core.errors.InputError`; without the ``[detect]`` extra, one that says how to get it.

    >>> import ragtruth_spans
    >>> context = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms."
    >>> answer = "The Grand Hotel opened in 1998 and has 120 rooms."
    >>> found = ragtruth_spans.detect(context, answer, question="When did the Grand Hotel open?")
    >>> [answer[s.start:s.end] for s in found.spans]
    ['1998']
    """
    item = DetectItem.of({"context": context, "response": response, "question": question,
                          "task": quick_task(task, question)})
    return shipped_detector().detect_batch([item])[0]
