"""From detection items to prompts, and from generations to :class:`~ragtruth_spans.detectors.base.Detection`
objects: the steps both generation backends (Hugging Face and vLLM) share.

A generative detection's ``diagnostics`` (written into each prediction line) are:
``raw`` (the generated text), ``parse_ok`` / ``parse_error`` (whether it could be parsed: a failure yields no spans
and sets ``Detection.error``), ``unaligned`` (generated span texts not found in the response), ``truncated`` (the
generation hit ``max_new_tokens``; only complete items were kept), ``shortened`` (the context was cut to fit the
model's window), ``repairs`` (parser tolerances used), ``align_methods`` (one per span), ``unknown_types`` and
``too_long`` (the response does not fit the window even without context: nothing was generated).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem
from ragtruth_spans.detectors.generative import prompts
from ragtruth_spans.detectors.generative.scoring import Generation, item_scores
from ragtruth_spans.detectors.shared.align import FUZZY_THRESHOLD, Alignment, align_spans
from ragtruth_spans.detectors.shared.parsing import ParsedItem, parse_generation

DEFAULT_MAX_NEW_TOKENS = 512

Messages = list[dict[str, str]]
AnyItem = DetectItem | Record | Mapping[str, Any]


def prompt_budget(max_length: int | None, max_new_tokens: int) -> int | None:
    """Tokens left for the prompt when ``max_new_tokens`` must fit in ``max_length`` (None: no limit).

    The generation reserve never takes more than a quarter of ``max_length`` (the training length, within which
    prompt + target fit), so a short training length still leaves room for the response being checked.
    """
    if not max_length:
        return None
    return max_length - min(max_new_tokens, max_length // 4)


def item_messages(tokenizer: Any, item: AnyItem, *, prompt_budget: int | None) -> tuple[Messages, bool]:
    """The chat messages for ``item`` and whether its context was shortened to fit ``prompt_budget`` tokens."""
    it = DetectItem.of(item)
    context, shortened = it.context, False
    if prompt_budget is not None:
        context, shortened = prompts.fit_context(tokenizer, it.task, it.context, it.response, it.question, "",
                                                 prompt_budget)
    return prompts.build_messages(it.task, context, it.response, it.question), shortened


def prepare_items(tokenizer: Any, items: Sequence[AnyItem], *, prompt_budget: int | None
                  ) -> tuple[dict[int, tuple[Messages, bool]], dict[int, str]]:
    """``(built, too_long)`` for a batch: ``built[i]`` = the messages of item ``i`` and whether its context was
    shortened; ``too_long[i]`` = why item ``i`` cannot fit ``prompt_budget`` even without context (that item
    fails alone). A malformed item raises :class:`InputError` for the whole batch."""
    checked = [DetectItem.of(item) for item in items]
    built: dict[int, tuple[Messages, bool]] = {}
    too_long: dict[int, str] = {}
    for i, item in enumerate(checked):
        try:
            built[i] = item_messages(tokenizer, item, prompt_budget=prompt_budget)
        except InputError as exc:
            too_long[i] = str(exc)
    return built, too_long


def assemble_results(tokenizer: Any, items: Sequence[AnyItem], built: dict[int, tuple[Messages, bool]],
                     too_long: dict[int, str], generations: dict[int, Generation], scores: dict[int, float], *,
                     fuzzy_threshold: float = FUZZY_THRESHOLD) -> list[Detection]:
    """One :class:`Detection` per item, in input order: a too-long item's failure, or its generation parsed,
    aligned and scored (:func:`detection_from_text`, :func:`~.scoring.item_scores`; ``scores[i]`` is the
    response score when computed)."""
    results = []
    for i, item in enumerate(items):
        if i in too_long:
            error = f"not generated: {too_long[i]}"
            results.append(Detection(spans=[], error=error, diagnostics=_diagnostics(
                raw="", parse_ok=False, parse_error=error, too_long=True)))
            continue
        generation = generations[i]
        results.append(detection_from_text(
            DetectItem.of(item).response, generation.text, shortened=built[i][1], fuzzy_threshold=fuzzy_threshold,
            score=scores.get(i), score_items=lambda parsed, g=generation: item_scores(tokenizer, g, parsed)))
    return results


def detection_from_text(response: str, raw: str, *, shortened: bool = False,
                        fuzzy_threshold: float = FUZZY_THRESHOLD,
                        score_items: Callable[[Sequence[ParsedItem]], list[float]] | None = None,
                        score: float | None = None) -> Detection:
    """Parse a generated text and align its spans to ``response``.

    ``score_items`` (e.g. a partial :func:`~.scoring.item_scores`) gives one confidence per parsed item, set as
    the ``score`` of the item's aligned span; ``score`` is the response score.
    """
    parsed = parse_generation(raw)
    alignment = align_spans(response, parsed.items, fuzzy_threshold=fuzzy_threshold)
    spans = alignment.spans
    if score_items is not None and parsed.items:
        spans = _scored_spans(alignment, score_items(parsed.items))
    return Detection(spans=spans, score=score, error=None if parsed.ok else parsed.error, diagnostics=_diagnostics(
        raw=raw, parse_ok=parsed.ok, parse_error=parsed.error, unaligned=alignment.unaligned,
        truncated=parsed.truncated, shortened=shortened, repairs=parsed.repairs, align_methods=alignment.methods,
        unknown_types=parsed.unknown_types))


def _diagnostics(*, raw: str, parse_ok: bool, parse_error: str | None, unaligned: list[str] | None = None,
                 truncated: bool = False, shortened: bool = False, repairs: list[str] | None = None,
                 align_methods: list[str] | None = None, unknown_types: int = 0,
                 too_long: bool = False) -> dict[str, Any]:
    """The diagnostics dict of a generative detection, keys in the order of the predictions file."""
    return {"raw": raw, "parse_ok": parse_ok, "parse_error": parse_error, "unaligned": unaligned or [],
            "truncated": truncated, "shortened": shortened, "repairs": repairs or [],
            "align_methods": align_methods or [], "unknown_types": unknown_types, "too_long": too_long}


def _scored_spans(alignment: Alignment, scores: Sequence[float]) -> list[Span]:
    """The aligned spans with the score of the item each came from (``scores``: one per parsed item)."""
    return [replace(span, score=scores[k]) for span, k in zip(alignment.spans, alignment.item_indices)]
