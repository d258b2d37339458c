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
- **Without streaming**: the upstream's JSON plus a top-level ``"hallucinations"`` object for the first choice:
  ``spans`` (character offsets of the answer, half-open, each with its text, label (``type``), score and
  evidence), ``score`` (the response score), ``detector``, ``blocked``.
- **With** ``"stream": true``: the upstream's server-sent events are passed through unchanged, each as soon as it
  is complete. As sentences of the answer complete (:class:`~ragtruth_spans.detectors.stream.SentenceTracker`),
  their spans go out in a chunk of their own; the last chunk before ``data: [DONE]`` carries the whole answer's
  ``"hallucinations"``, the same object as without streaming (equal to ``/v1/detect`` with evidence on the whole
  answer). Added chunks are ``chat.completion.chunk`` objects with one choice whose ``delta`` is empty (what
  OpenAI clients already read at the end of a stream) and a ``hallucinations`` field, whose ``object`` is
  ``hallucinations.delta`` (a sentence event) or ``hallucinations`` (the final one): the OpenAI Python client
  yields them as ordinary chunks, with the field in ``chunk.model_extra``. At most one sentence check per stream
  runs at a time; sentences completed meanwhile are checked together; a check still pending when the answer ends
  is dropped (the final event covers its sentences and need not wait behind it).
- **Errors**: an upstream answer other than 200 is passed through with its status and body; no answer within
  ``timeout`` seconds is a 504, an unreachable upstream a 502, an upstream answer over ``max_response_bytes`` a
  502 (errors of the gate itself in OpenAI's shape: ``{"error": {"message", "type"}}``). An error after a stream
  has started is sent as a last ``data: {"error": ...}`` event (the OpenAI client raises it).
- **Policy** (off by default): with ``block_above`` set, an answer whose response score is above it is replaced
  by a notice (``block_mode="replace"``; a stream is then held back until the answer is checked, and the original
  answer is kept in ``hallucinations.answer``) or has a warning appended (``"annotate"``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse

from ragtruth_spans.core.fields import surrogate_at
from ragtruth_spans.detectors.base import DetectItem, quick_task
from ragtruth_spans.detectors.stream import SentenceTracker, spans_within
from ragtruth_spans.serving.body import ServiceError, json_body

logger = logging.getLogger(__name__)

CHECK_HEADER = "X-Hallucination-Check"
"""Response header: ``checked``, or ``unchecked; <why>`` for a request forwarded without a check."""
BLOCK_MODES = ("replace", "annotate")
GATE_FIELDS = ("context", "question", "task")
"""The request fields the gate reads and takes out before forwarding."""
FORWARDED_HEADERS = ("authorization", "openai-organization", "openai-project", "openai-beta", "accept")
_EVENT_END = re.compile(rb"\r\n\r\n|\n\n|\r\r")


@dataclass(frozen=True)
class Upstream:
    """Where and how the gate forwards (see the module docstring).

    >>> Upstream("http://127.0.0.1:8001/v1").endpoint
    'http://127.0.0.1:8001/v1/chat/completions'
    """

    url: str
    timeout: float = 120.0
    require_context: bool = False
    block_above: float | None = None
    block_mode: str = "annotate"
    max_response_bytes: int = 16 * 1024 * 1024
    api_key: str | None = None

    @property
    def endpoint(self) -> str:
        """The upstream's chat completions URL: ``url`` as an OpenAI ``base_url``, or the full URL as given."""
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else f"{url}/chat/completions"

    def blocks(self, score: float | None) -> bool:
        """Whether an answer with response score ``score`` is blocked."""
        return self.block_above is not None and score is not None and score > self.block_above


def openai_error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error of the gate itself, in the OpenAI API's shape."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": None, "param": None}},
                        status_code=status, headers=headers)


class GateError(Exception):
    """An answer of the gate's own (no upstream answer to pass through)."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status, self.message, self.kind = status, message, kind

    def response(self) -> JSONResponse:
        return openai_error(self.status, self.message, self.kind)


def _text(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise GateError(422, f"{field} must be a non-empty string", "invalid_request_error")
    if surrogate_at(value) is not None:
        raise GateError(422, f"{field} is not valid Unicode text (a lone surrogate)", "invalid_request_error")
    return value


@dataclass(frozen=True)
class CheckRequest:
    """What the answer is checked against: the context (passages joined by blank lines), question and task."""

    context: str
    question: str | None
    task: str

    @classmethod
    def of(cls, body: dict[str, Any]) -> CheckRequest | None:
        """The check asked for by a request body; None when it has no context; :class:`GateError` (422) for a
        malformed one."""
        context = body.get("context")
        if context is None:
            return None
        if isinstance(context, list):
            if not context:
                raise GateError(422, "context: the list of passages is empty", "invalid_request_error")
            context = "\n\n".join(_text(p, f"context[{i}]") for i, p in enumerate(context))
        context = _text(context, "context")
        question = body.get("question")
        question = None if question is None else _text(question, "question")
        task = body.get("task")
        if task is not None and task not in ("QA", "Summary", "Data2txt"):
            raise GateError(422, "task must be QA, Summary or Data2txt", "invalid_request_error")
        return cls(context=context, question=question, task=quick_task(task, question))

    def item(self, answer: str) -> DetectItem:
        return DetectItem(context=self.context, response=answer, task=self.task, question=self.question)

    def chars(self) -> int:
        return len(self.context) + len(self.question or "")


def _notice(upstream: Upstream, score: float, replace: bool) -> str:
    if replace:
        return (f"[withheld by the hallucination gate: the answer's hallucination score {score:.2f} is above "
                f"{upstream.block_above:.2f}]")
    return (f"\n\n[hallucination gate: this answer may state things its sources do not support (score {score:.2f} "
            f"> {upstream.block_above:.2f})]")


class Gate:
    """The route's state: the upstream settings, the HTTP client to it and the detection service."""

    def __init__(self, service: Any, upstream: Upstream, detection_out: Callable[..., Any]) -> None:
        self.service, self.upstream, self.detection_out = service, upstream, detection_out
        self._client: Any = None

    def client(self) -> Any:
        import httpx

        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self.upstream.timeout,
                                                                   connect=min(10.0, self.upstream.timeout)),
                                             follow_redirects=False)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def headers(self, request: Request) -> dict[str, str]:
        """The client's headers the upstream gets (the key passed through, or the gate's own)."""
        out = {k: v for k, v in request.headers.items() if k.lower() in FORWARDED_HEADERS}
        if self.upstream.api_key is not None or self.service.settings.api_key is not None:
            out.pop("authorization", None)  # the client's header holds the gate's own key: never forwarded
        if self.upstream.api_key is not None:
            out["authorization"] = f"Bearer {self.upstream.api_key}"
        return out | {"content-type": "application/json", "accept-encoding": "identity"}

    async def hallucinations(self, check: CheckRequest, answer: str) -> dict[str, Any]:
        """The ``hallucinations`` object of ``answer`` (detection and evidence through the service, as
        ``/v1/detect`` with ``"evidence": true``); an answer that cannot be checked gets ``error``, never a
        failed request."""
        head = {"object": "hallucinations", "index": 0}
        if not answer.strip():
            return head | {"spans": [], "score": None, "error": "the answer is empty: nothing to check"}
        if check.chars() + len(answer) > self.service.settings.max_chars:
            return head | {"spans": [], "score": None, "error": f"not checked: context, question and answer "
                           f"exceed {self.service.settings.max_chars} characters (--max-chars)"}
        item = check.item(answer)
        try:
            detections = await self.service.detect([item])
            detections = await self.service.evidence([item], detections, [True])
        except ServiceError as exc:
            return head | {"spans": [], "score": None, "error": f"not checked: {exc.message}"}
        out = self.detection_out(None, answer, detections[0]).model_dump(exclude={"id"})
        return head | out | {"detector": self.service.ref.model_dump(exclude_none=True)}

    async def delta(self, check: CheckRequest, text: str, sentences: list[tuple[int, int]]) -> dict[str, Any]:
        """A sentence event: the spans in ``sentences`` of the answer judged up to their end (no evidence)."""
        checked = sentences[-1][1]
        out: dict[str, Any] = {"object": "hallucinations.delta", "index": 0,
                               "sentences": [list(s) for s in sentences], "checked": checked}
        if check.chars() + checked > self.service.settings.max_chars:
            return out | {"spans": [], "score": None, "error": "not checked: over --max-chars"}
        try:
            [found] = await self.service.detect([check.item(text[:checked])])
        except ServiceError as exc:
            return out | {"spans": [], "score": None, "error": f"not checked: {exc.message}"}
        spans = [{"text": text[s.start:s.end], **s.to_dict()} for s in spans_within(found.spans, sentences)]
        return out | {"spans": spans, "score": found.score}


def _answer(payload: Any) -> str | None:
    """The first choice's message content of a chat completion, None when there is none."""
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


async def _read_bounded(response: Any, limit: int) -> bytes:
    parts, size = [], 0
    async for part in response.aiter_bytes():
        size += len(part)
        if size > limit:
            raise GateError(502, f"the upstream's answer is over {limit} bytes", "upstream_error")
        parts.append(part)
    return b"".join(parts)


def _passed_through(status: int, body: bytes, response: Any, check: str) -> Response:
    """An upstream answer as it came (status, body, content type)."""
    media = response.headers.get("content-type", "application/json")
    return Response(body, status_code=status, media_type=media, headers={CHECK_HEADER: check})


async def complete(gate: Gate, request: Request, body: dict[str, Any], check: CheckRequest | None) -> Response:
    """A request without streaming: forward, read the answer (bounded in time and size), check it."""
    import httpx

    upstream = gate.upstream

    async def fetch() -> tuple[Any, bytes]:
        async with gate.client().stream("POST", upstream.endpoint, json=body,
                                        headers=gate.headers(request)) as response:
            return response, await _read_bounded(response, upstream.max_response_bytes)

    try:
        response, raw = await asyncio.wait_for(fetch(), upstream.timeout)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        raise GateError(504, f"the upstream did not answer within {upstream.timeout:g} s", "upstream_timeout") \
            from None
    except httpx.HTTPError as exc:
        raise GateError(502, f"the upstream cannot be reached ({type(exc).__name__})", "upstream_error") from None
    if response.status_code != 200 or check is None:
        return _passed_through(response.status_code, raw, response,
                               "unchecked; no context in the request" if check is None else "unchecked; upstream error")
    try:
        payload = json.loads(raw)
    except ValueError:
        return _passed_through(200, raw, response, "unchecked; the upstream's answer is not JSON")
    answer = _answer(payload)
    if answer is None:
        return _passed_through(200, raw, response, "unchecked; no message content in the first choice")
    found = await gate.hallucinations(check, answer)
    found["blocked"] = upstream.blocks(found.get("score"))
    if found["blocked"]:
        replace = upstream.block_mode == "replace"
        if replace:
            found["answer"] = answer
        notice = _notice(upstream, found["score"], replace)
        payload["choices"][0]["message"]["content"] = notice if replace else answer + notice
    return JSONResponse(payload | {"hallucinations": found}, headers={CHECK_HEADER: "checked"})


def add_gate_route(app: FastAPI, service: Any, upstream: Upstream, detection_out: Callable[..., Any]) -> Gate:
    """``POST /v1/chat/completions`` on ``app`` (see the module docstring), answering with spans shaped by
    ``detection_out`` (the app's, as ``/v1/detect`` shapes them); the returned :class:`Gate` must be closed
    (:meth:`Gate.aclose`) when the app stops."""
    gate = Gate(service, upstream, detection_out)

    @app.post("/v1/chat/completions", tags=["gate"])
    async def chat_completions(request: Request) -> Response:
        """OpenAI-compatible chat completions through the upstream, with the answer's hallucinated spans."""
        try:
            raw = await json_body(request)
        except ServiceError as exc:
            return openai_error(exc.status, exc.message, "invalid_request_error")
        except RequestValidationError:  # the strict JSON parser's refusal
            return openai_error(422, "invalid request: the body is not valid JSON", "invalid_request_error")
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
            if body.get("stream") is True:
                return await stream(gate, request, body, check)
            return await complete(gate, request, body, check)
        except GateError as exc:
            return exc.response()

    return gate


# --- streaming ------------------------------------------------------------------------------------------------


def _event_data(event: bytes) -> str | None:
    """The data of one server-sent event (its ``data:`` lines joined), None when it has none."""
    lines = [line for line in event.decode("utf-8", "replace").splitlines() if line.startswith("data:")]
    if not lines:
        return None
    return "\n".join(line[5:].removeprefix(" ") for line in lines)


def _content(data: str) -> tuple[dict[str, Any] | None, str]:
    """The chunk's JSON (None when it is not a JSON object) and the first choice's delta content."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return None, ""
    if not isinstance(chunk, dict):
        return None, ""
    for choice in chunk.get("choices") or []:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            content = (choice.get("delta") or {}).get("content")
            return chunk, content if isinstance(content, str) else ""
    return chunk, ""


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def _chunk(last: dict[str, Any] | None, hallucinations: dict[str, Any] | None = None,
           content: str | None = None) -> bytes:
    """An added chunk, shaped as the upstream's (its id, created, model), with an empty delta (or ``content``)."""
    last = last or {}
    delta = {} if content is None else {"content": content}
    chunk: dict[str, Any] = {"id": last.get("id", "hallucinations"), "object": "chat.completion.chunk",
                             "created": last.get("created", int(time.time())), "model": last.get("model", ""),
                             "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    if hallucinations is not None:
        chunk["hallucinations"] = hallucinations
    return _sse(chunk)


async def stream(gate: Gate, request: Request, body: dict[str, Any], check: CheckRequest | None) -> Response:
    """A streamed request: open the upstream stream; pass an error status through; else stream (see the module
    docstring)."""
    import httpx

    client, upstream = gate.client(), gate.upstream
    try:
        sent = client.build_request("POST", upstream.endpoint, json=body, headers=gate.headers(request))
        response = await asyncio.wait_for(client.send(sent, stream=True), upstream.timeout)
    except (asyncio.TimeoutError, httpx.TimeoutException):
        raise GateError(504, f"the upstream did not answer within {upstream.timeout:g} s", "upstream_timeout") \
            from None
    except httpx.HTTPError as exc:
        raise GateError(502, f"the upstream cannot be reached ({type(exc).__name__})", "upstream_error") from None
    if response.status_code != 200:
        try:
            raw = await _read_bounded(response, upstream.max_response_bytes)
        finally:
            await response.aclose()
        return _passed_through(response.status_code, raw, response, "unchecked; upstream error")
    media = response.headers.get("content-type", "text/event-stream")
    note = "checked" if check is not None else "unchecked; no context in the request"
    events = _events(response, upstream.max_response_bytes)
    source = events if check is None else CheckedStream(gate, check).run(events)
    return StreamingResponse(_closing(source, response), media_type=media,
                             headers={CHECK_HEADER: note, "Cache-Control": "no-cache"})


async def _closing(source: AsyncIterator[bytes], response: Any) -> AsyncIterator[bytes]:
    try:
        async for part in source:
            yield part
    finally:
        await response.aclose()


async def _events(response: Any, limit: int) -> AsyncIterator[bytes]:
    """The upstream's server-sent events, each whole (with its blank line), as they complete; an error of the
    upstream mid-stream ends it with an ``error`` event."""
    import httpx

    buffer, size = b"", 0
    try:
        async for part in response.aiter_bytes():
            size += len(part)
            if size > limit:
                yield _sse({"error": {"message": f"the upstream's answer is over {limit} bytes",
                                      "type": "upstream_error"}})
                return
            buffer += part
            while (end := _EVENT_END.search(buffer)) is not None:
                yield buffer[:end.end()]
                buffer = buffer[end.end():]
    except httpx.HTTPError as exc:
        kind = "upstream_timeout" if isinstance(exc, httpx.TimeoutException) else "upstream_error"
        yield _sse({"error": {"message": f"the upstream stream failed ({type(exc).__name__})", "type": kind}})
        return
    if buffer.strip():
        yield buffer


class CheckedStream:
    """One checked stream: pass-through, sentence events, the final event (see the module docstring)."""

    def __init__(self, gate: Gate, check: CheckRequest) -> None:
        self.gate, self.check = gate, check
        self.tracker = SentenceTracker()
        self.waiting: list[tuple[int, int]] = []  # completed sentences not yet given to a check
        self.running: asyncio.Task[dict[str, Any]] | None = None
        self.last: dict[str, Any] | None = None
        self.replace = gate.upstream.block_above is not None and gate.upstream.block_mode == "replace"

    def _start(self) -> None:
        if self.running is None and self.waiting and not self.replace:
            sentences, self.waiting = self.waiting, []
            self.running = asyncio.create_task(self.gate.delta(self.check, self.tracker.text, sentences))

    async def _finished(self, wait: bool) -> AsyncIterator[bytes]:
        """The sentence event of the running check when it is done (``wait``: wait for it), then start the next."""
        if self.running is not None and (wait or self.running.done()):
            yield _chunk(self.last, await self.running)
            self.running = None
        self._start()

    async def _last_sentences(self) -> AsyncIterator[bytes]:
        """At the answer's end: the sentence event of a check already done; one still queued or running is
        dropped (its sentences are in the final event, which then need not wait behind it)."""
        self.waiting = []
        if self.running is not None and self.running.done():
            yield _chunk(self.last, self.running.result())
        elif self.running is not None:
            self.running.cancel()
        self.running = None

    async def run(self, events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        held: list[bytes] = []  # replace mode: nothing is shown before the answer is checked
        done = None
        try:
            async for event in events:
                data = _event_data(event)
                if data is not None and data.strip() == "[DONE]":
                    done = event
                    break
                if self.replace:
                    held.append(event)
                else:
                    yield event
                chunk, content = _content(data) if data is not None else (None, "")
                if chunk is not None and "choices" in chunk:
                    self.last = chunk
                self.waiting += self.tracker.feed(content)
                async for out in self._finished(wait=False):
                    yield out
            async for out in self._last_sentences():
                yield out
            async for out in self._final(held, done):
                yield out
        finally:
            if self.running is not None:
                self.running.cancel()

    async def _final(self, held: list[bytes], done: bytes | None) -> AsyncIterator[bytes]:
        found = await self.gate.hallucinations(self.check, self.tracker.text)
        upstream = self.gate.upstream
        found["blocked"] = upstream.blocks(found.get("score"))
        if found["blocked"] and self.replace:
            found["answer"] = self.tracker.text
            yield _chunk(self.last, content=_notice(upstream, found["score"], True))
        else:
            for event in held:
                yield event
            if found["blocked"]:
                yield _chunk(self.last, content=_notice(upstream, found["score"], False))
        yield _chunk(self.last, found)
        if done is not None:
            yield done
