"""The gate's core (:mod:`~ragtruth_spans.serving.proxy` has the route): the upstream's settings, a chat request's
context to check an answer against, and :class:`Gate`, which forwards to the upstream and checks answers and
sentences with the served detector. Errors are OpenAI-shaped (``{"error": {"message", "type"}}``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from ragtruth_spans.core.fields import surrogate_at
from ragtruth_spans.detectors.base import DetectItem, quick_task
from ragtruth_spans.detectors.stream import spans_within
from ragtruth_spans.serving.body import ServiceError

CHECK_HEADER = "X-Hallucination-Check"
"""Response header: ``checked``, or ``unchecked; <why>`` for a request forwarded without a check."""
BLOCK_MODES = ("replace", "annotate")
GATE_FIELDS = ("context", "question", "task")
"""The request fields the gate reads and takes out before forwarding."""
FORWARDED_HEADERS = ("authorization", "openai-organization", "openai-project", "openai-beta", "accept")


@dataclass(frozen=True)
class Upstream:
    """Where and how the gate forwards (see the module docstring).

    >>> Upstream("http://127.0.0.1:8001/v1").endpoint
    'http://127.0.0.1:8001/v1/chat/completions'
    """

    url: str
    timeout: float = 120.0
    stream_timeout: float = 600.0
    """Seconds a streamed answer may take in all (checked as each read arrives)."""
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


def block_notice(upstream: Upstream, score: float, replace: bool) -> str:
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
        self.client()  # made now: its TLS context takes ~0.1 s to build, never on a request's event loop

    def client(self) -> Any:
        """The HTTP client to the upstream (made again after :meth:`aclose`)."""
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


def first_answer(payload: Any) -> str | None:
    """The first choice's message content of a chat completion, None when there is none."""
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


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
    return Response(body, status_code=status, media_type=media, headers={CHECK_HEADER: check})
