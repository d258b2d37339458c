"""The LLM judge as a :class:`~ragtruth_spans.detectors.base.Detector`.

**span** mode: one request per response (the RAGTruth detection prompt); the listed passages are aligned to
characters of the response (:func:`~ragtruth_spans.detectors.shared.align.align_spans`) as untyped spans.
Response score: 1.0 when the judge listed any passage, 0.0 for an empty list (the prompt asks for no confidence).

**claims** mode: the response is split into sentences
(:func:`~ragtruth_spans.detectors.shared.sentences.split_sentences`)
and judged ``claims_per_request`` at a time; a ``contradicted`` sentence becomes an Evident Conflict span and an
``unsupported`` one an Evident Baseless Info span (the whole sentence, trimmed). Response score: the share of the
factual sentences (all but ``no claim``) that were not supported; 0.0 when none is factual.

Neither score is calibrated: it is what the judge said, not a probability. Spans carry no score.

A blank response never reaches the judge (:class:`~ragtruth_spans.detectors.base.DetectItem` refuses it); one
that has no sentence in claims mode is not sent: no spans, score 0.0. A request that
failed after its retries, or an answer that cannot be read, gives ``Detection.error`` (no spans: "could not
tell") and is counted in the diagnostics (``failed_requests``, ``malformed``).

Diagnostics of every detection (counted by name in ``predict``'s summary): ``requests`` (answered by the endpoint
now), ``cache_hits`` (answered from the cache), ``failed_requests``, ``retries``, ``prompt_tokens`` and
``completion_tokens`` (reported by the endpoint for the requests answered now), ``usage_missing`` (answers without
usage), ``cost`` (of the requests answered now, from the prices per 1k tokens; null without prices),
``truncated`` (answers cut by ``max_tokens``), ``malformed`` (unreadable answers), ``unaligned`` (span mode:
listed passages not found in the response) or ``missing_verdicts`` (claims mode: statements without a verdict), and
``judge``: the raw answers and how they were read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragtruth_spans.core.fields import is_blank
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.detectors.judge import prompts
from ragtruth_spans.detectors.judge.cache import AnswerCache
from ragtruth_spans.detectors.judge.client import ChatClient, ChatOutcome
from ragtruth_spans.detectors.judge.reading import read_span_answer, read_verdicts
from ragtruth_spans.detectors.judge.settings import KIND, JudgeSettings, judge_cache_dir
from ragtruth_spans.detectors.shared.align import align_spans
from ragtruth_spans.detectors.shared.sentences import split_sentences

SPAN_TYPES: dict[str, str] = {"contradicted": "Evident Conflict", "unsupported": "Evident Baseless Info"}
"""Claims mode: the span type of each verdict that flags a sentence."""


@dataclass
class _Plan:
    """The requests of one item: their messages, and in claims mode the sentences and which each request holds."""

    messages: list[list[dict[str, str]]] = field(default_factory=list)
    sentences: list[tuple[int, int]] = field(default_factory=list)
    chunks: list[list[int]] = field(default_factory=list)


class JudgeDetector(Detector):
    """An LLM behind an OpenAI-compatible endpoint judges each response (see the module docstring)."""

    kind = KIND
    preferred_chunk_size = 64

    def __init__(self, settings: JudgeSettings) -> None:
        self.settings = settings
        self.preferred_chunk_size = max(64, 8 * settings.concurrency)  # keeps every connection busy in a chunk
        cache = AnswerCache(settings.cache_dir or judge_cache_dir()) if settings.cache else None
        self.cache_dir = cache.directory if cache is not None else None
        self.client = ChatClient(
            settings.base_url, api_key=settings.api_key(), timeout=settings.timeout,
            concurrency=settings.concurrency, max_retries=settings.max_retries, backoff_base=settings.backoff_base,
            backoff_max=settings.backoff_max, max_consecutive_failures=settings.max_consecutive_failures,
            cache=cache, prompt_version=settings.current_prompt_version)

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def describe(self) -> dict[str, Any]:
        """The settings that change what is sent (endpoint, model, mode, prompt version, sampling)."""
        s = self.settings
        info = {"kind": self.kind, "name": KIND, "base_url": s.base_url, "model": s.model, "mode": s.mode,
                "prompt_version": s.current_prompt_version, "temperature": s.temperature, "top_p": s.top_p,
                "seed": s.seed, "max_tokens": s.max_tokens, "extra_body": s.extra_body}
        if s.mode == "claims":
            info["claims_per_request"] = s.claims_per_request
        return info

    def request_body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The chat-completions body for ``messages`` (``extra_body`` merged last)."""
        s = self.settings
        body: dict[str, Any] = {"model": s.model, "messages": messages, "temperature": s.temperature}
        if s.max_tokens:
            body["max_tokens"] = s.max_tokens
        if s.top_p is not None:
            body["top_p"] = s.top_p
        if s.seed is not None:
            body["seed"] = s.seed
        return body | s.extra_body

    def detect_batch(self, items: Sequence[DetectItem | Record | Mapping[str, Any]]) -> list[Detection]:
        checked = [DetectItem.of(item) for item in items]
        plans = [self._plan(item) for item in checked]
        outcomes = self.client.complete_all([self.request_body(m) for plan in plans for m in plan.messages])
        results, position = [], 0
        for item, plan in zip(checked, plans):
            mine = outcomes[position:position + len(plan.messages)]
            position += len(plan.messages)
            diagnostics = self._usage(mine)
            if not mine:
                results.append(Detection(spans=[], score=0.0, diagnostics=diagnostics | {"judge": {"sent": False}}))
            elif self.settings.mode == "span":
                results.append(_span_detection(item, mine[0], diagnostics))
            else:
                results.append(_claims_detection(item, plan, mine, diagnostics))
        return results

    def _plan(self, item: DetectItem) -> _Plan:
        if is_blank(item.response):  # refused at the boundary; kept so that a blank text is never sent
            return _Plan()
        if self.settings.mode == "span":
            return _Plan(messages=[prompts.span_messages(item.task, item.context, item.response, item.question)])
        sentences = split_sentences(item.response)
        size = self.settings.claims_per_request
        chunks = [list(range(k, min(k + size, len(sentences)))) for k in range(0, len(sentences), size)]
        messages = [prompts.claims_messages(item.task, item.context, item.response,
                                            [item.response[slice(*sentences[i])] for i in chunk], item.question)
                    for chunk in chunks]
        return _Plan(messages=messages, sentences=sentences, chunks=chunks)

    def _usage(self, outcomes: Sequence[ChatOutcome]) -> dict[str, Any]:
        """The usage diagnostics of one item's requests (see the module docstring)."""
        s = self.settings
        answered = [o for o in outcomes if o.content is not None and not o.cached]
        prompt_tokens = sum(o.prompt_tokens for o in answered)
        completion_tokens = sum(o.completion_tokens for o in answered)
        cost = None
        if s.price_prompt_per_1k is not None or s.price_completion_per_1k is not None:
            cost = (prompt_tokens * (s.price_prompt_per_1k or 0.0)
                    + completion_tokens * (s.price_completion_per_1k or 0.0)) / 1000
        return {"requests": len(answered), "cache_hits": sum(o.cached for o in outcomes),
                "failed_requests": sum(o.error is not None for o in outcomes),
                "retries": sum(o.retries for o in outcomes), "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens, "usage_missing": sum(not o.usage_reported for o in answered),
                "cost": cost, "truncated": sum(o.finish_reason == "length" for o in outcomes), "malformed": 0}


def _failed(outcomes: Sequence[ChatOutcome], diagnostics: dict[str, Any]) -> Detection | None:
    errors = [o.error for o in outcomes if o.error is not None]
    if not errors:
        return None
    return Detection(spans=[], error=f"judge request failed: {errors[0]}", diagnostics=diagnostics | {
        "judge": {"errors": errors}})


def _span_detection(item: DetectItem, outcome: ChatOutcome, diagnostics: dict[str, Any]) -> Detection:
    failed = _failed([outcome], diagnostics)
    if failed is not None:
        return failed
    parsed = read_span_answer(outcome.content or "")
    details = {"raw": parsed.raw, "repairs": parsed.repairs, "dropped_items": parsed.dropped_items}
    if not parsed.ok:
        return Detection(spans=[], error=f"unreadable judge answer: {parsed.error}", diagnostics=diagnostics | {
            "malformed": 1, "unaligned": [], "judge": details | {"parse_error": parsed.error}})
    alignment = align_spans(item.response, parsed.items)
    return Detection(spans=alignment.spans, score=1.0 if parsed.items else 0.0, diagnostics=diagnostics | {
        "unaligned": alignment.unaligned, "judge": details | {"align_methods": alignment.methods}})


def _claims_detection(item: DetectItem, plan: _Plan, outcomes: Sequence[ChatOutcome],
                      diagnostics: dict[str, Any]) -> Detection:
    failed = _failed(outcomes, diagnostics)
    if failed is not None:
        return failed
    verdicts: dict[int, str] = {}
    readings = [read_verdicts(o.content or "", len(chunk)) for o, chunk in zip(outcomes, plan.chunks)]
    for reading, chunk in zip(readings, plan.chunks):
        verdicts.update({chunk[number - 1]: verdict for number, verdict in reading.by_number.items()})
    details = {"raw": [r.raw for r in readings], "repairs": sorted({x for r in readings for x in r.repairs}),
               "conflicting_verdicts": sum(r.conflicting for r in readings),
               "out_of_range_verdicts": sum(r.out_of_range for r in readings),
               "claims": [{"start": a, "end": b, "verdict": verdicts.get(i)}
                          for i, (a, b) in enumerate(plan.sentences)]}
    missing = sum(len(r.missing) for r in readings)
    malformed = sum(not r.ok for r in readings)
    if malformed:
        return Detection(spans=[], error=f"unreadable judge answer: no verdict in {malformed} of {len(readings)} "
                         "answer(s)", diagnostics=diagnostics | {"malformed": malformed, "missing_verdicts": missing,
                                                                 "judge": details})
    spans = [Span(a, b, type=SPAN_TYPES[verdicts[i]], text=item.response[a:b])
             for i, (a, b) in enumerate(plan.sentences) if verdicts.get(i) in SPAN_TYPES]
    factual = sum(v != "no claim" for v in verdicts.values())
    return Detection(spans=spans, score=len(spans) / factual if factual else 0.0,
                     diagnostics=diagnostics | {"missing_verdicts": missing, "judge": details})
