"""The gate's core (:mod:`~ragtruth_spans.serving.proxy` has the route): :class:`Gate`, which forwards to the
upstream and checks answers and sentences with the served detector (what a request asks for and the gate's own
errors: :mod:`~ragtruth_spans.serving.gate_request`)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from ragtruth_spans.core.fields import is_blank
from ragtruth_spans.detectors.stream import SentenceTracker, load_splitter, spans_within, split_open
from ragtruth_spans.serving.body import ServiceError
from ragtruth_spans.serving.gate_request import CheckRequest, GateError, Upstream
from ragtruth_spans.serving.policy import Answer, applied, check_header, notice, unchecked, why_unchecked
from ragtruth_spans.serving.worker import WorkerProcess

CHECK_HEADER = "X-Hallucination-Check"
"""Response header: ``checked``, or ``unchecked; <why>`` for a request forwarded without a check."""
FORWARDED_HEADERS = ("authorization", "openai-organization", "openai-project", "openai-beta", "accept")
RETURNED_HEADERS = ("retry-after", "retry-after-ms", "x-request-id")
"""The upstream's response headers passed back to the client (with every ``x-ratelimit-*``), on every answer."""

INLINE_SPLIT_CHARS = 160
"""A sentence split of at most this many characters runs on the event loop (at most ~5 ms); a longer one in the
splitter's worker process (:meth:`Gate.sentences`)."""
SPLITS_PENDING = 4
"""Long sentence splits queued or running in the splitter's process at most, all streams together; a stream whose
split finds no room goes on and splits at its next event (its text then split in one go)."""
SPLITTER_NICE = 10
"""The splitter's process runs at a lower CPU priority than the service: sentence events may wait, the event loop
and the streams it passes on may not (on 2 busy cores a full-priority splitter slowed a 1,000-event stream past its
deadline)."""

logger = logging.getLogger(__name__)


PREPARING = 2
"""Contexts encoded ahead at once (one per core of the 2-core machines the gate is sized for)."""


class Gate:
    """The route's state: the upstream settings, the HTTP client to it and the detection service."""

    def __init__(self, service: Any, upstream: Upstream, detection_out: Callable[..., Any]) -> None:
        self.service, self.upstream, self.detection_out = service, upstream, detection_out
        self._client: Any = None
        self.splitter = WorkerProcess("sentence splitter", initializer=load_splitter, max_pending=SPLITS_PENDING,
                                      nice=SPLITTER_NICE)
        self._preparing: set[asyncio.Task[None]] = set()  # contexts being encoded ahead (held until done)
        self.client()  # made now: its TLS context takes ~0.1 s to build, never on a request's event loop

    def client(self) -> Any:
        """The HTTP client to the upstream (made again after :meth:`aclose`)."""
        import httpx

        if self._client is None:
            up = self.upstream
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(up.timeout, connect=min(10.0, up.timeout), pool=up.pool_timeout),
                limits=httpx.Limits(max_connections=up.connections,
                                    max_keepalive_connections=min(up.connections, 32)),
                follow_redirects=False)
        return self._client

    async def open(self, request: Request, body: dict[str, Any]) -> Any:
        """The upstream's answer to ``body``, its body not read yet (the caller closes it); a :class:`GateError`
        when there is none: 504 (no answer within the timeout), 502 (unreachable), 503 (every connection of the
        gate's pool to the upstream in use)."""
        import httpx

        client, upstream = self.client(), self.upstream
        sent = client.build_request("POST", upstream.endpoint, json=body, headers=self.headers(request))
        try:
            return await asyncio.wait_for(client.send(sent, stream=True), upstream.timeout)
        except httpx.PoolTimeout:
            raise GateError(503, f"the gate's {upstream.connections} connections to the upstream are all in use "
                            f"(its cap: --max-connections); the request was not sent: retry later", "server_busy",
                            {"Retry-After": "1"}) from None
        except (asyncio.TimeoutError, httpx.TimeoutException):
            raise GateError(504, f"the upstream did not answer within {upstream.timeout:g} s",
                            "upstream_timeout") from None
        except httpx.HTTPError as exc:
            raise GateError(502, f"the upstream cannot be reached ({type(exc).__name__})", "upstream_error") \
                from None

    async def sentences(self, tracker: SentenceTracker) -> list[tuple[int, int]] | None:
        """``tracker.completed()``, the same sentences: on the event loop when the text to split is at most
        :data:`INLINE_SPLIT_CHARS` (a few ms: a token stream's usual split, never queued behind a long one), else in
        the splitter's worker process (:attr:`splitter`, its splitter loaded when it starts); None, nothing split,
        when :data:`SPLITS_PENDING` splits are already there (the caller splits at its next event). The splitter is
        pure Python (~20-40 µs a character: 0.3-0.4 s for an 8 KB event of short sentences): on the event loop, or
        in a thread holding the interpreter lock, it would hold up every other request, ``/health`` included.
        The caller awaits one split at a time per stream."""
        if tracker.open_chars <= INLINE_SPLIT_CHARS:
            return tracker.completed()
        if self.splitter.full:
            return None
        start, text = tracker.pending()
        try:
            split = await self.splitter.run(split_open, text)
        except BrokenProcessPool:  # logged by the worker; these sentences come with the final event
            return []
        return tracker.completed_in(start, split)

    def prepare(self, check: CheckRequest | None) -> None:
        """Start the work on ``check``'s context (its encoding and evidence index: ``Service.prepare_context``) in a
        worker thread, beside the forwarded request (at most :data:`PREPARING` at a time: beyond, the check does
        that work itself, as without a head start)."""
        if check is None or not self.upstream.prepare_context or len(self._preparing) >= PREPARING:
            return
        import anyio

        async def run() -> None:
            try:
                await anyio.to_thread.run_sync(lambda: self.service.prepare_context(
                    check.context, check.question, check.task))
            except Exception as exc:  # the check meets the same error where it belongs
                logger.debug("preparing the context failed (%s: %s)", type(exc).__name__, exc)

        task = asyncio.get_running_loop().create_task(run())
        self._preparing.add(task)
        task.add_done_callback(self._preparing.discard)

    async def aclose(self) -> None:
        """Close the client to the upstream and stop the splitter's process (the app's shutdown)."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        await asyncio.to_thread(self.splitter.close)

    def headers(self, request: Request) -> dict[str, str]:
        """The client's headers the upstream gets (the key passed through, or the gate's own)."""
        out = {k: v for k, v in request.headers.items() if k.lower() in FORWARDED_HEADERS}
        if self.upstream.api_key is not None or self.service.settings.api_key is not None:
            out.pop("authorization", None)  # the client's header holds the gate's own key: never forwarded
        if self.upstream.api_key is not None:
            out["authorization"] = f"Bearer {self.upstream.api_key}"
        return out | {"content-type": "application/json", "accept-encoding": "identity"}

    def detect_ahead(self, check: CheckRequest, text: str) -> asyncio.Task[Any]:
        """A detection of ``text`` as an answer to ``check``, started now (never waiting for a busy service): a
        streamed answer's text checked ahead, at a sentence end or its ``finish_reason``, while the upstream
        writes on; the sentence check and the final check of that same text reuse it (:meth:`detected`)."""
        async def run() -> Any:
            [found] = await self.service.detect([check.item(text)])
            return found

        task = asyncio.get_running_loop().create_task(run())
        task.add_done_callback(lambda done: done.cancelled() or done.exception())  # a failure is the reader's
        return task

    async def detected(self, items: list[Any], ahead: list[asyncio.Task[Any] | None], wait: float) -> list[Any]:
        """The detections of ``items``: an item checked ahead (its task, the same detection: the detector's result
        depends on the item alone) reuses it, the others and any whose check ahead failed go through the service
        in one request (waiting up to ``wait`` seconds for room)."""
        found: list[Any] = [None] * len(items)
        for k, task in enumerate(ahead):
            if task is None or task.cancelled():
                continue
            try:
                found[k] = await asyncio.shield(task)  # shared with a sentence check that may be cancelled
            except ServiceError:
                pass
            except asyncio.CancelledError:
                if not task.cancelled():
                    raise  # this check itself was cancelled
                # else the check ahead was dropped meanwhile (a later text replaced it): detect anew
        missing = [k for k, one in enumerate(found) if one is None]
        if missing:
            for k, one in zip(missing, await self.service.detect([items[k] for k in missing], wait=wait)):
                found[k] = one
        return found

    async def check_all(self, check: CheckRequest, answers: list[Answer],
                        ahead: dict[int, asyncio.Task[Any]] | None = None) -> list[dict[str, Any]]:
        """The ``hallucinations`` object of each answer (detection and evidence through the service, as
        ``/v1/detect`` with ``"evidence": true``, all in one request; ``ahead``: per choice index, the detection
        of that very answer started while it streamed, :meth:`detect_ahead`); an answer that cannot be checked
        gets ``"status": "unchecked"`` and why, never a failed request. A busy service is waited for (up to
        ``--upstream-timeout``), so load never decides a verdict; evidence that cannot be had keeps the
        detection (``evidence_error``)."""
        limit, wait = self.service.settings.max_chars, self.upstream.timeout
        out: list[dict[str, Any]] = []
        todo: list[int] = []
        for answer in answers:
            why = answer.why or why_unchecked({"content": answer.text})
            if why is None and check.chars() + len(answer.text) > limit:
                why = f"context, question and answer exceed {limit} characters (--max-chars)"
            out.append(unchecked(answer.index, why) if why is not None else {})
            if why is None:
                todo.append(len(out) - 1)
        if not todo:
            return out
        items = [check.item(answers[i].text) for i in todo]
        try:
            detections = await self.detected(items, [(ahead or {}).get(answers[i].index) for i in todo], wait)
        except ServiceError as exc:
            return [unchecked(answers[i].index, exc.message) if i in todo else one for i, one in enumerate(out)]
        evidence_error = None
        try:
            detections = await self.service.evidence(items, detections, [True] * len(items), wait=wait)
        except ServiceError as exc:
            evidence_error = exc.message
        for i, detection in zip(todo, detections):
            shaped = self.detection_out(None, answers[i].text, detection).model_dump(exclude={"id"})
            out[i] = ({"object": "hallucinations", "index": answers[i].index, "status": "checked"} | shaped
                      | {"detector": self.service.ref.model_dump(exclude_none=True)})
            if evidence_error is not None:
                out[i]["evidence_error"] = evidence_error
        return out

    def apply_policy(self, found: dict[str, Any], answer: Answer) -> str | None:
        """The block policy on one checked choice (:func:`~ragtruth_spans.serving.policy.notice`): its notice,
        None when it passes as it is; a withheld answer's text is kept in ``found["answer"]``."""
        replace = self.upstream.block_mode == "replace"
        text = notice(found, self.upstream.block_above, replace)
        if text is not None and replace:
            found["answer"] = answer.text
        return text

    async def answer(self, response: Any, seconds: float, check: CheckRequest | None) -> Response:
        """The upstream's ``response`` read whole (:meth:`read`, within ``seconds``) and answered
        (:meth:`checked_json`), then closed."""
        try:
            return await self.checked_json(response, await self.read(response, seconds), check)
        finally:
            await response.aclose()

    async def read(self, response: Any, seconds: float) -> bytes:
        """The whole body of the upstream's ``response`` (bounded in size: 502; and in time, ``seconds``: 504);
        the caller closes it (on an error it is closed here: its connection, not read to its end, is dropped)."""
        import httpx

        limit = self.upstream.max_response_bytes
        try:
            return await asyncio.wait_for(read_bounded(response, limit), max(0.0, seconds))
        except (asyncio.TimeoutError, httpx.TimeoutException):
            await response.aclose()
            raise GateError(504, f"the upstream did not answer within {self.upstream.timeout:g} s",
                            "upstream_timeout") from None
        except httpx.HTTPError as exc:
            await response.aclose()
            raise GateError(502, f"the upstream cannot be reached ({type(exc).__name__})", "upstream_error") \
                from None
        except BaseException:
            await response.aclose()
            raise

    async def framed(self, response: Any, raw: bytes) -> bool:
        """Whether an answer passed through unchecked (``raw``, read whole) is known to end where its framing
        said: a JSON body that parses whole (off the event loop). Any other (not JSON, cut short by a lying
        ``Content-Length``) cannot be told from one whose rest waits on the connection: the caller closes it."""
        media = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            return False
        return await self.service.parser.is_whole_json(raw)

    async def checked_json(self, response: Any, raw: bytes, check: CheckRequest | None) -> Response:
        """An upstream answer read whole (``raw``): passed through unless it is a chat completion to check (a 200
        to a request with a context), else every choice checked, with its ``hallucinations`` (the top-level one
        is the choice with index 0's; with several choices each carries its own) and the block policy applied.
        Under a policy in ``replace`` mode, a 200 that is no chat completion is withheld (502)."""
        if response.status_code != 200 or check is None:
            why = "no context in the request" if check is None else "upstream error"
            if not await self.framed(response, raw):
                await discard(response)
            return passed_through(response.status_code, raw, response, f"unchecked; {why}")
        try:
            payload = json.loads(raw)
        except ValueError:  # mis-framed (a Content-Length shorter than the body: the rest waits on the connection)
            payload = None
            await discard(response)
        choices = payload.get("choices") if isinstance(payload, dict) else None
        if not isinstance(choices, list) or not choices:
            why = "the upstream's answer is not a chat completion with choices"
            if self.upstream.block_above is not None and self.upstream.block_mode == "replace":
                raise GateError(502, f"withheld by the hallucination gate: {why}, so it could not be checked",
                                "upstream_error")
            return passed_through(200, raw, response, f"unchecked; {why}")
        return await self.checked_payload(payload, response, check)

    async def checked_payload(self, payload: dict[str, Any], response: Any, check: CheckRequest,
                              ahead: dict[int, asyncio.Task[Any]] | None = None) -> Response:
        """A chat completion (``payload``, with choices) answered with every choice checked (``ahead``: per choice
        index, the detection of its text started earlier, :meth:`check_all`) and the block policy applied; the
        headers are the upstream ``response``'s (:meth:`checked_json`)."""
        choices = payload["choices"]
        answers = [_answer_of(choice, position) for position, choice in enumerate(choices)]
        found = await self.check_all(check, answers, ahead)
        for choice, answer, one in zip(choices, answers, found):
            text = self.apply_policy(one, answer)
            if text is not None and isinstance(choice, dict):
                message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
                choice["message"] = applied(message, text, self.upstream.block_mode == "replace")
            if len(choices) > 1 and isinstance(choice, dict):
                choice["hallucinations"] = one
        first = next((one for one in found if one["index"] == 0), found[0])
        return JSONResponse(payload | {"hallucinations": first},
                            headers=returned_headers(response) | {CHECK_HEADER: check_header(found)})

    async def delta(self, check: CheckRequest, text: str, sentences: list[tuple[int, int]],
                    index: int = 0, ahead: asyncio.Task[Any] | None = None) -> dict[str, Any]:
        """A sentence event of choice ``index``: the spans in ``sentences`` of its answer judged up to their end
        (no evidence; never waits for a busy service: the final check does); ``ahead``: the detection of that
        text started earlier (:meth:`detect_ahead`)."""
        checked = sentences[-1][1]
        out: dict[str, Any] = {"object": "hallucinations.delta", "index": index,
                               "sentences": [list(s) for s in sentences], "checked": checked}
        if is_blank(text[:checked]):  # sentences of invisible characters only: nothing the detector may read
            return out | {"spans": [], "score": None, "error": "not checked: the answer is empty so far"}
        if check.chars() + checked > self.service.settings.max_chars:
            return out | {"spans": [], "score": None, "error": "not checked: over --max-chars"}
        try:
            [found] = await self.detected([check.item(text[:checked])], [ahead], wait=0.0)
        except ServiceError as exc:
            return out | {"spans": [], "score": None, "error": f"not checked: {exc.message}"}
        spans = [{"text": text[s.start:s.end], **s.to_dict()} for s in spans_within(found.spans, sentences)]
        return out | {"spans": spans, "score": found.score}


def _answer_of(choice: Any, position: int) -> Answer:
    """The :class:`~ragtruth_spans.serving.policy.Answer` of one choice of a chat completion (its ``index``, or
    its position when it has none)."""
    if not isinstance(choice, dict):
        return Answer(position, "", "the choice is not an object")
    index = choice.get("index", position)
    index = index if isinstance(index, int) and not isinstance(index, bool) else position
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return Answer(index, content if isinstance(content, str) else "", why_unchecked(message))


async def discard(response: Any) -> None:
    """Close the upstream's ``response`` and the connection it came on, never returned to the pool: after an
    answer whose framing lied (a ``Content-Length`` shorter than its body: httpx keeps the bytes left over and
    would read them as the next request's answer) or a stream cut short. The connection is httpcore's
    ``network_stream`` response extension; closed, the pool drops it instead of reusing it."""
    stream = response.extensions.get("network_stream")
    if stream is not None:
        await stream.aclose()
    await response.aclose()


def returned_headers(response: Any) -> dict[str, str]:
    """The upstream's headers the client gets back (:data:`RETURNED_HEADERS` and ``x-ratelimit-*``)."""
    return {k: v for k, v in response.headers.items()
            if k.lower() in RETURNED_HEADERS or k.lower().startswith("x-ratelimit-")}


async def read_bounded(response: Any, limit: int) -> bytes:
    parts, size = [], 0
    async for part in response.aiter_bytes():
        size += len(part)
        if size > limit:
            raise GateError(502, f"the upstream's answer is over {limit} bytes", "upstream_error")
        parts.append(part)
    return b"".join(parts)


def passed_through(status: int, body: bytes, response: Any, check: str) -> Response:
    """An upstream answer as it came (status, body, content type)."""
    media = response.headers.get("content-type", "application/json")
    return Response(body, status_code=status, media_type=media,
                    headers=returned_headers(response) | {CHECK_HEADER: check})
