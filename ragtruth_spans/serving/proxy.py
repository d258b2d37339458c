"""The gate: an OpenAI-compatible ``POST /v1/chat/completions`` that forwards each request to an upstream
OpenAI-compatible server (vLLM, TGI, llama.cpp, a hosted API) and checks the answer against the request's
retrieved context.

- **Context**: a top-level ``"context"`` field (what ``extra_body={"context": ...}`` of the OpenAI client sends; a
  string or a list of passages, joined by blank lines), optional ``"question"`` and ``"task"`` (the task rule of
  one typed answer, :func:`~ragtruth_spans.detectors.base.quick_task`: QA with a question, else Summary). These
  three fields are taken out of the body before it is forwarded (hosted APIs refuse unknown fields). A request
  without a context is forwarded unchecked with an ``X-Hallucination-Check: unchecked`` header, or refused (422)
  under ``require_context``.
- **Key**: the client's ``Authorization`` header is passed to the upstream as it came, never logged — unless the
  gate has a key of its own for the upstream (``upstream_api_key``), which then replaces it (needed when the gate
  itself requires a bearer token: the client's header then carries the gate's key).
- **Without streaming**: the upstream's JSON plus a top-level ``"hallucinations"`` object for the choice with
  index 0 (with several choices, each carries its own): ``spans`` (character offsets of the answer, half-open,
  each with its text, label (``type``), score and evidence), ``score`` (the response score), ``status``,
  ``detector``, ``blocked``. With ``stream_upstream`` (``--stream-upstream``) such an answer is streamed from the
  upstream and checked as it arrives (:func:`complete_from_stream`); the client gets the same completion.
- **With** ``"stream": true``: the upstream's server-sent events are passed through unchanged, each as soon as it
  is complete. As sentences of the answer complete (:class:`~ragtruth_spans.detectors.stream.SentenceTracker`),
  their spans go out in a chunk of their own; the last chunk before ``data: [DONE]`` carries the whole answer's
  ``"hallucinations"``, the same object as without streaming (equal to ``/v1/detect`` with evidence on the whole
  answer). Added chunks are ``chat.completion.chunk`` objects with one choice whose ``delta`` is empty (what
  OpenAI clients already read at the end of a stream) and a ``hallucinations`` field, whose ``object`` is
  ``hallucinations.delta`` (a sentence event) or ``hallucinations`` (the final one): the OpenAI Python client
  yields them as ordinary chunks, with the field in ``chunk.model_extra``. At most one sentence check per stream
  runs at a time; sentences completed meanwhile are checked together; a check still pending when the answer ends
  is dropped (the final event covers its sentences and need not wait behind it). A long text's sentences are split
  in a worker process at a lower priority, one split at a time per stream and at most four pending in all (the
  splitter is pure Python: ~0.3 s for an 8 KB event of short sentences; in a thread it would hold the interpreter
  lock against the event loop), a short one on the event loop; an answer past ``--max-chars`` is no longer split
  (no check could judge it: the final event says ``unchecked``).
- **Errors**: an upstream answer other than 200 is passed through with its status and body; no answer within
  ``timeout`` seconds is a 504, an unreachable upstream a 502, an upstream answer over ``max_response_bytes`` a
  502 (errors of the gate itself in OpenAI's shape: ``{"error": {"message", "type"}}``). An error after a stream
  has started is sent as a last ``data: {"error": ...}`` event (the OpenAI client raises it), and so is the end of
  a stream without ``data: [DONE]`` (cut short). A connection whose answer was cut short or mis-framed (a
  ``Content-Length`` shorter than the body, whose rest would be read as the next answer) is closed, never reused;
  so is one whose answer was passed through unchecked and is not JSON that parses whole (its framing unconfirmed).
- **Policy** (off by default, :mod:`~ragtruth_spans.serving.policy`): with ``block_above`` set, an answer whose
  response score is above it — or that could not be checked — is replaced by a notice (``block_mode="replace"``;
  a stream is then held back until the answer is checked, and the original text is kept in
  ``hallucinations.answer``) or has a notice appended (``"annotate"``); every choice on its own.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response

from ragtruth_spans.serving.assemble import assemble
from ragtruth_spans.serving.body import ServiceError, json_body
from ragtruth_spans.serving.gate import Gate
from ragtruth_spans.serving.gate_request import (
    GATE_FIELDS,
    CheckRequest,
    GateError,
    OpenAIError,
    Upstream,
    openai_error,
)
from ragtruth_spans.serving.proxy_stream import CheckedStream, StreamFailed, chunk_of, stream, upstream_events
from ragtruth_spans.serving.sse import event_data

__all__ = ["Upstream", "add_gate_route", "complete", "complete_from_stream"]

logger = logging.getLogger(__name__)


async def complete(gate: Gate, request: Request, body: dict[str, Any], check: CheckRequest | None) -> Response:
    """A request without streaming: forward, read the answer (bounded in time and size), check it; with
    ``--stream-upstream``, a request to check that calls no tools is streamed from the upstream instead
    (:func:`complete_from_stream`)."""
    if gate.upstream.stream_upstream and check is not None and not body.get("tools") and not body.get("functions"):
        return await complete_from_stream(gate, request, body, check)
    started = time.monotonic()
    response = await gate.open(request, body)
    raw = await gate.read(response, gate.upstream.timeout - (time.monotonic() - started))
    return await gate.checked_json(response, raw, check)


def streamed_body(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` asking the upstream to stream, its usage in the stream's last chunk (``stream_options``)."""
    options = body.get("stream_options") if isinstance(body.get("stream_options"), dict) else {}
    return body | {"stream": True, "stream_options": options | {"include_usage": True}}


async def complete_from_stream(gate: Gate, request: Request, body: dict[str, Any], check: CheckRequest) -> Response:
    """A request without streaming answered from the upstream's stream (``--stream-upstream``): each choice's
    text checked ahead as it arrives (at a sentence end and at its ``finish_reason``, as a streamed answer is), so
    the check after the last byte is mostly done; the answer is the chat completion the chunks make
    (:func:`~ragtruth_spans.serving.assemble.assemble`) with its ``hallucinations``, as without this option. An
    error status or an answer that is not an event stream is answered as it came; a stream that breaks off,
    carries an error or a chunk that is not JSON is a 502 (504 past ``--upstream-timeout``)."""
    started = time.monotonic()
    response = await gate.open(request, streamed_body(body))
    left = gate.upstream.timeout - (time.monotonic() - started)
    if response.status_code != 200 or not response.headers.get("content-type", "").lower().startswith(
            "text/event-stream"):
        return await gate.answer(response, left, check)
    watcher, chunks = CheckedStream(gate, check, split=False), []
    try:
        try:
            async for event in upstream_events(response, gate.upstream.max_response_bytes, left):
                data = event_data(event)
                if data is None or data.strip() == "[DONE]":
                    continue
                chunk = chunk_of(data)
                if chunk is None or "error" in chunk:
                    error = chunk.get("error") if chunk is not None else None
                    why = error.get("message") if isinstance(error, dict) else "an event is not a JSON chunk"
                    raise GateError(502, f"the upstream's stream failed: {why}", "upstream_error")
                chunks.append(chunk)
                watcher.watch(data)
        except StreamFailed as failed:
            raise GateError(504 if failed.kind == "upstream_timeout" else 502, failed.message, failed.kind) from None
        if not any(chunk.get("choices") for chunk in chunks):
            raise GateError(502, "the upstream's stream has no choices", "upstream_error")
        return await gate.checked_payload(assemble(chunks), response, check, watcher.ahead())
    finally:
        watcher.cancel()
        await response.aclose()


CHAT_REQUEST_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["model", "messages"], "additionalProperties": True,
    "description": "An OpenAI chat completion request (every field is forwarded as sent) with the gate's own "
                   "fields, taken out before forwarding: context, question, task.",
    "properties": {
        "model": {"type": "string"}, "messages": {"type": "array", "items": {"type": "object"}},
        "stream": {"type": "boolean", "default": False}, "n": {"type": "integer", "minimum": 1, "default": 1},
        "context": {"description": "What the answer is checked against: a text, or a list of passages (joined by "
                                   "blank lines). Without it the request is forwarded unchecked.",
                    "anyOf": [{"type": "string", "minLength": 1},
                              {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}}]},
        "question": {"type": "string", "minLength": 1},
        "task": {"type": "string", "enum": ["QA", "Summary", "Data2txt"]}}}
"""The request body of ``POST /v1/chat/completions`` in the OpenAPI schema."""


def gate_responses(auth: bool) -> dict[int | str, Any]:
    """The route's answers in the OpenAPI schema: the upstream's answer (JSON, or server-sent events when
    streamed) and every error, in OpenAI's shape (an upstream error status is passed through as it came)."""
    errors = {400: "a malformed request head", 403: "another site's page", 408: "the body arrived too slowly",
              413: "a body, context or question over the limits", 415: "a body that is not JSON",
              421: "a host this server does not answer for", 422: "an invalid body or check fields",
              429: "the upstream's rate limit (passed through)", 431: "request headers too large",
              500: "an internal error", 502: "the upstream cannot be reached or answered too much",
              503: "busy: the connections to the upstream or the server's queue are full",
              504: "the upstream did not answer in time"} | ({401: "a missing or wrong bearer token"} if auth else {})
    ok = {"description": "The upstream's chat completion with a top-level \"hallucinations\" object, or (with "
                         "\"stream\": true) its server-sent events with the gate's chunks added",
          "content": {"application/json": {"schema": {"type": "object", "additionalProperties": True}},
                      "text/event-stream": {"schema": {"type": "string"}}}}
    return {200: ok} | {code: {"model": OpenAIError, "description": why} for code, why in sorted(errors.items())}


def add_gate_route(app: FastAPI, service: Any, upstream: Upstream, detection_out: Callable[..., Any]) -> Gate:
    """``POST /v1/chat/completions`` on ``app`` (see the module docstring), answering with spans shaped by
    ``detection_out`` (the app's, as ``/v1/detect`` shapes them); the returned :class:`Gate` must be closed
    (:meth:`Gate.aclose`) when the app stops."""
    from ragtruth_spans.detectors.shared.sentences import split_sentences

    split_sentences("Loaded. Now.")  # the splitter's first use loads it: at start-up, never on a stream's event loop
    gate = Gate(service, upstream, detection_out)

    @app.post("/v1/chat/completions", tags=["gate"], responses=gate_responses(service.settings.api_key is not None),
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": CHAT_REQUEST_SCHEMA}}}})
    async def chat_completions(request: Request) -> Response:
        """OpenAI-compatible chat completions through the upstream, with the answer's hallucinated spans."""
        try:
            raw = await json_body(request, service.parser)
        except ServiceError as exc:
            return openai_error(exc.status, exc.message, "invalid_request_error")
        try:
            if not isinstance(raw, dict):
                raise GateError(422, "the body must be a JSON object", "invalid_request_error")
            check = CheckRequest.of(raw)
            if check is None and upstream.require_context:
                raise GateError(422, "the request has no \"context\" and this gate requires one "
                                "(--require-context): send the retrieved passages as a top-level \"context\"",
                                "invalid_request_error")
            if check is not None and check.chars() > service.settings.max_chars:
                raise GateError(413, f"context and question have {check.chars()} characters; the limit is "
                                f"{service.settings.max_chars} (--max-chars)", "invalid_request_error")
            body = {k: v for k, v in raw.items() if k not in GATE_FIELDS}
            if check is None:
                logger.warning("a chat completion without context was forwarded unchecked")
            gate.prepare(check)  # the context encoded while the upstream answers
            if body.get("stream") is True:
                return await stream(gate, request, body, check)
            return await complete(gate, request, body, check)
        except GateError as exc:
            return exc.response()

    return gate
