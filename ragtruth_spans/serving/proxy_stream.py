"""The gate's streamed answers (``"stream": true``; :mod:`~ragtruth_spans.serving.proxy`): the upstream's
server-sent events passed on as they complete, a chunk of spans as each sentence of the answer completes, and the
whole answer's check in the last chunk before ``data: [DONE]``."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from ragtruth_spans.detectors.stream import SentenceTracker
from ragtruth_spans.serving.gate import (
    CHECK_HEADER,
    CheckRequest,
    Gate,
    block_notice,
    returned_headers,
)
from ragtruth_spans.serving.sse import EventSplitter, event_data


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
    """A streamed request: open the upstream stream; an error status, or an answer that is not an event stream
    (JSON), is read whole and answered as without streaming; else stream (see the module docstring)."""
    upstream = gate.upstream
    response = await gate.open(request, body)
    media = response.headers.get("content-type", "")
    if response.status_code != 200 or not media.lower().startswith("text/event-stream"):
        return await gate.checked_json(response, await gate.read(response, upstream.timeout), check)
    note = "checked" if check is not None else "unchecked; no context in the request"
    events = _events(response, upstream.max_response_bytes, upstream.stream_timeout)
    source = _unchecked(events) if check is None else CheckedStream(gate, check).run(events)
    return StreamingResponse(_closing(source, response), media_type=media, headers=returned_headers(response) | {
        CHECK_HEADER: note, "Cache-Control": "no-cache"})


async def _unchecked(events: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The events as they come; a broken-off stream ends with its ``error`` event."""
    try:
        async for event in events:
            yield event
    except StreamFailed as failed:
        yield failed.event


async def _closing(source: AsyncIterator[bytes], response: Any) -> AsyncIterator[bytes]:
    try:
        async for part in source:
            yield part
    finally:
        await response.aclose()


class StreamFailed(Exception):
    """The upstream's stream broke off (an error, over its size or its time): ``event`` is the ``error`` event
    that ends the gate's stream (in place of ``data: [DONE]``)."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.event = _sse({"error": {"message": message, "type": kind}})


async def _events(response: Any, limit: int, seconds: float) -> AsyncIterator[bytes]:
    """The upstream's server-sent events, each whole (:class:`~ragtruth_spans.serving.sse.EventSplitter`: its line
    ends made LF), as they complete; an error of the
    upstream mid-stream, a stream over ``limit`` bytes or one still running after ``seconds`` (checked as each read
    arrives) raises :class:`StreamFailed`."""
    import httpx

    splitter, size = EventSplitter(), 0
    deadline = time.monotonic() + seconds
    try:
        async for part in response.aiter_bytes():
            size += len(part)
            if size > limit:
                raise StreamFailed(f"the upstream's answer is over {limit} bytes", "upstream_error")
            if time.monotonic() > deadline:
                raise StreamFailed(f"the upstream's stream ran over {seconds:g} s (--upstream-stream-timeout)",
                                   "upstream_timeout")
            for event in splitter.feed(part):
                yield event
            await asyncio.sleep(0)  # a fast upstream's reads never hold the event loop for long
    except httpx.HTTPError as exc:
        kind = "upstream_timeout" if isinstance(exc, httpx.TimeoutException) else "upstream_error"
        raise StreamFailed(f"the upstream stream failed ({type(exc).__name__})", kind) from None
    for event in splitter.finish():
        yield event


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
            try:
                async for event in events:
                    data = event_data(event)
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
            except StreamFailed as failed:
                done = failed.event  # what arrived is checked; the error event ends the stream
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
            yield _chunk(self.last, content=block_notice(upstream, found["score"], True))
        else:
            for event in held:
                yield event
            if found["blocked"]:
                yield _chunk(self.last, content=block_notice(upstream, found["score"], False))
        yield _chunk(self.last, found)
        if done is not None:
            yield done
