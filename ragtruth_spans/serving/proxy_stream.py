"""The gate's streamed answers (``"stream": true``; :mod:`~ragtruth_spans.serving.proxy`): the upstream's
server-sent events passed on as they complete, a chunk of spans as each sentence of the answer completes, and the
whole answer's check in the last chunk before ``data: [DONE]``.

A choice whose text so far ends a sentence (or whose ``finish_reason`` came) is checked at once, while the
upstream writes its next token: that text may be the whole answer, whose final check then reuses this detection,
or the end of a sentence, whose sentence check does. The detection is the same either way (it depends on the
text alone), only sooner."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from ragtruth_spans.detectors.stream import SentenceTracker
from ragtruth_spans.serving.gate import CHECK_HEADER, Gate, discard, returned_headers
from ragtruth_spans.serving.gate_request import CheckRequest
from ragtruth_spans.serving.policy import DROPPED_WHEN_WITHHELD, Answer, why_unchecked
from ragtruth_spans.serving.sse import EventSplitter, event_data


def chunk_of(data: str) -> dict[str, Any] | None:
    """The chunk's JSON object, None when it is not one."""
    try:
        chunk = json.loads(data)
    except ValueError:
        return None
    return chunk if isinstance(chunk, dict) else None


def _choices(chunk: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """``(index, delta)`` of each choice of a chunk (index 0 when it has none)."""
    out = []
    for choice in chunk.get("choices") if isinstance(chunk.get("choices"), list) else []:
        if isinstance(choice, dict):
            index = choice.get("index", 0)
            delta = choice.get("delta")
            out.append((index if isinstance(index, int) and not isinstance(index, bool) else 0,
                        delta if isinstance(delta, dict) else {}))
    return out


_ENDS_SENTENCE = re.compile(r"[.!?…。！？][\"'”’)\]]*$")
"""Text that ends like a sentence, nothing after its mark (a token stream's next sentence opens with a space)."""


def _finished_choices(chunk: dict[str, Any]) -> set[int]:
    """The indices (as :func:`_choices` reads them) of the choices a chunk gives a ``finish_reason``: their text
    is complete."""
    choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
    dicts = [choice for choice in choices if isinstance(choice, dict)]
    return {index for (index, _), choice in zip(_choices(chunk), dicts) if choice.get("finish_reason") is not None}


def _sse(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, ensure_ascii=False).encode() + b"\n\n"


def _chunk(last: dict[str, Any] | None, hallucinations: dict[str, Any] | None = None,
           content: str | None = None, index: int = 0) -> bytes:
    """An added chunk for choice ``index``, shaped as the upstream's (its id, created, model), with an empty
    delta (or ``content``)."""
    last = last or {}
    delta = {} if content is None else {"content": content}
    chunk: dict[str, Any] = {"id": last.get("id", "hallucinations"), "object": "chat.completion.chunk",
                             "created": last.get("created", int(time.time())), "model": last.get("model", ""),
                             "choices": [{"index": index, "delta": delta, "finish_reason": None}]}
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
        return await gate.answer(response, upstream.timeout, check)
    note = "checked" if check is not None else "unchecked; no context in the request"
    events = upstream_events(response, upstream.max_response_bytes, upstream.stream_timeout)
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
        self.message, self.kind = message, kind
        self.event = _sse({"error": {"message": message, "type": kind}})


async def upstream_events(response: Any, limit: int, seconds: float) -> AsyncIterator[bytes]:
    """The upstream's server-sent events, each whole (:class:`~ragtruth_spans.serving.sse.EventSplitter`: its line
    ends made LF), as they complete; :class:`StreamFailed` for an error of the upstream mid-stream, a stream over
    ``limit`` bytes, one still running ``seconds`` after it started (a deadline on the whole stream, a silent
    upstream's included, not a limit per read) or one that ends without ``data: [DONE]`` (cut short, by a
    ``Content-Length`` shorter than the stream for one: its connection is then dropped, never reused)."""
    import anyio
    import httpx

    splitter, size, last = EventSplitter(), 0, b""
    deadline = time.monotonic() + seconds
    reads = response.aiter_bytes()
    try:
        while True:
            try:
                with anyio.fail_after(max(0.0, deadline - time.monotonic())):
                    part = await reads.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise StreamFailed(f"the upstream's stream ran over {seconds:g} s (--upstream-stream-timeout)",
                                   "upstream_timeout") from None
            size += len(part)
            if size > limit:
                raise StreamFailed(f"the upstream's answer is over {limit} bytes", "upstream_error")
            for event in splitter.feed(part):
                last = event
                yield event
            await asyncio.sleep(0)  # a fast upstream's reads never hold the event loop for long
    except httpx.HTTPError as exc:
        kind = "upstream_timeout" if isinstance(exc, httpx.TimeoutException) else "upstream_error"
        raise StreamFailed(f"the upstream stream failed ({type(exc).__name__})", kind) from None
    for event in splitter.finish():
        last = event
        yield event
    if (event_data(last) or "").strip() != "[DONE]":
        await discard(response)
        raise StreamFailed("the upstream's stream ended without data: [DONE] (cut short)", "upstream_error")


def _without(event: bytes, withheld: set[int]) -> bytes | None:
    """A held event with the ``withheld`` choices' content, tool calls and refusal taken out (None: an event
    that is not a JSON chunk, dropped when anything is withheld)."""
    if not withheld:
        return event
    data = event_data(event)
    if data is None or data.strip() == "[DONE]":
        return event
    chunk = chunk_of(data)
    if chunk is None:
        return None
    if not any(index in withheld for index, _ in _choices(chunk)):
        return event
    for choice in chunk["choices"]:
        if isinstance(choice, dict) and choice.get("index", 0) in withheld and isinstance(choice.get("delta"), dict):
            choice["delta"] = {k: v for k, v in choice["delta"].items() if k not in DROPPED_WHEN_WITHHELD}
    return _sse(chunk)


class _Choice:
    """One choice of a checked stream: its text, why it cannot be checked, its sentence checks."""

    def __init__(self, index: int, room: int | None = None) -> None:
        self.index = index
        self.tracker = SentenceTracker()
        self.room = room  # characters of answer a check can take (--max-chars less context and question)
        self.chars = 0
        self.due = False  # text came that may complete sentences: split it (CheckedStream._split)
        self.why: str | None = None
        self.waiting: list[tuple[int, int]] = []  # completed sentences not yet given to a check
        self.running: asyncio.Task[dict[str, Any]] | None = None
        self.finished = False  # its finish_reason came: the text is whole
        self.ahead: asyncio.Task[Any] | None = None  # the detection of the text's first ``ahead_at`` characters
        self.ahead_at = -1  # (the text only grows: its first n characters never change)

    def may_be_whole(self) -> bool:
        """Whether the text so far may be the answer or end a sentence (worth checking ahead): constant time in the
        answer's length but for a finished choice's one blank check."""
        if self.chars == self.ahead_at or not self.chars:
            return False
        if self.finished:
            return bool(self.tracker.text.strip())
        return bool(_ENDS_SENTENCE.search(self.tracker.text[-16:]))

    def ahead_of(self, length: int) -> asyncio.Task[Any] | None:
        """The detection checked ahead of the text's first ``length`` characters, if that is what was checked."""
        return self.ahead if length == self.ahead_at else None

    def read(self, delta: dict[str, Any]) -> None:
        """One delta of this choice: its text to the tracker (unsplit; past ``room`` its sentences are not tracked:
        no check could judge them); tool calls, a refusal or parts noted."""
        content = delta.get("content")
        if isinstance(content, str):
            self.chars += len(content)
            self.due = self.tracker.add(content) or self.due
            self.due = self.due and (self.room is None or self.chars <= self.room)
        elif content is not None:
            self.why = self.why or "its content is a list of parts, not a text"
        self.why = self.why or why_unchecked(delta | {"content": "x"})


class CheckedStream:
    """One checked stream: pass-through, sentence events, the final events (see the module docstring), for
    every choice; or, for an answer the client gets whole (``split=False``), only its checks ahead
    (:meth:`watch`)."""

    def __init__(self, gate: Gate, check: CheckRequest, split: bool = True) -> None:
        self.gate, self.check = gate, check
        self.choices: dict[int, _Choice] = {}
        self.why: str | None = None  # the stream as a whole cannot be checked
        self.last: dict[str, Any] | None = None
        self.replace = gate.upstream.block_above is not None and gate.upstream.block_mode == "replace"
        if split and not self.replace:
            gate.splitter.start()  # its process loads the splitter while the first events arrive

    def watch(self, data: str | None) -> None:
        """Read one event's ``data`` and check ahead each choice whose text may be whole (no sentence events)."""
        self._read(data)
        self._check_ahead()

    def ahead(self) -> dict[int, asyncio.Task[Any]]:
        """Per choice index, the detection checked ahead of its whole text so far, where there is one."""
        return {c.index: task for c in self.choices.values() if (task := c.ahead_of(c.chars)) is not None}

    def cancel(self) -> None:
        """Cancel every check still running (the stream is over)."""
        for choice in self.choices.values():
            for task in (choice.running, choice.ahead):
                if task is not None:
                    task.cancel()

    def _read(self, data: str | None) -> None:
        chunk = chunk_of(data) if data is not None else None
        if chunk is None:
            if data is not None:
                self.why = self.why or "an event of the stream is not a JSON chunk"
            return
        if "choices" in chunk:
            self.last = chunk
        room = self.gate.service.settings.max_chars - self.check.chars()
        for index, delta in _choices(chunk):
            self.choices.setdefault(index, _Choice(index, room)).read(delta)
        for index in _finished_choices(chunk):
            self.choices[index].finished = True

    def _check_ahead(self) -> None:
        """Check each choice whose text may be whole (:meth:`_Choice.may_be_whole`) when it can be checked and fits
        ``--max-chars`` (see the module docstring), beside a sentence check that may be running; only the latest is
        kept (an older one not started yet is dropped)."""
        if self.why is not None:
            return
        for choice in self.choices.values():
            if choice.why is None and choice.room is not None and choice.chars <= choice.room and \
                    choice.may_be_whole():
                if choice.ahead is not None:
                    choice.ahead.cancel()  # a no-op once done; a sentence check waiting on it detects anew
                choice.ahead, choice.ahead_at = self.gate.detect_ahead(self.check, choice.tracker.text), choice.chars

    async def _split(self) -> None:
        """The sentences completed in each choice that has new text to split (:meth:`Gate.sentences`: a long
        text in the splitter's process; one with no room there stays due, split at the next event); none in
        replace mode, which sends no sentence events."""
        for choice in self.choices.values() if not self.replace else ():
            if choice.due:
                new = await self.gate.sentences(choice.tracker)
                choice.due = new is None
                choice.waiting += new or []

    async def _finished(self, wait: bool) -> AsyncIterator[bytes]:
        """Each choice's sentence event when its check is done (``wait``: wait for it), then its next check."""
        for choice in self.choices.values():
            if choice.running is not None and (wait or choice.running.done()):
                yield _chunk(self.last, await choice.running, index=choice.index)
                choice.running = None
            if choice.running is None and choice.waiting and not self.replace:
                sentences, choice.waiting = choice.waiting, []
                text = choice.tracker.text
                choice.running = asyncio.create_task(self.gate.delta(
                    self.check, text, sentences, choice.index, ahead=choice.ahead_of(sentences[-1][1])))

    async def _last_sentences(self) -> AsyncIterator[bytes]:
        """At the answer's end: the sentence events of checks already done; those still queued or running are
        dropped (their sentences are in the final events, which then need not wait behind them)."""
        for choice in self.choices.values():
            choice.waiting = []
            if choice.running is not None and choice.running.done():
                yield _chunk(self.last, choice.running.result(), index=choice.index)
            elif choice.running is not None:
                choice.running.cancel()
            choice.running = None

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
                    self._read(data)
                    await self._split()
                    async for out in self._finished(wait=False):
                        yield out
                    self._check_ahead()
            except StreamFailed as failed:
                done = failed.event  # what arrived is checked; the error event ends the stream
            async for out in self._last_sentences():
                yield out
            async for out in self._final(held, done):
                yield out
        finally:
            self.cancel()

    async def _final(self, held: list[bytes], done: bytes | None) -> AsyncIterator[bytes]:
        """Every choice checked whole; the held events (less what is withheld), the notices, one final
        ``hallucinations`` chunk per choice, then ``done``."""
        chosen = [self.choices[i] for i in sorted(self.choices)] or [_Choice(0)]
        answers = [Answer(c.index, c.tracker.text, self.why or c.why) for c in chosen]
        found = await self.gate.check_all(self.check, answers, self.ahead())
        notices = [self.gate.apply_policy(one, answer) for one, answer in zip(found, answers)]
        withheld = {a.index for a, text in zip(answers, notices) if text is not None and self.replace}
        for event in held:
            kept = _without(event, withheld)
            if kept is not None:
                yield kept
        for answer, text in zip(answers, notices):
            if text is not None:
                yield _chunk(self.last, content=text, index=answer.index)
        for one in found:
            yield _chunk(self.last, one, index=one["index"])
        if done is not None:
            yield done
