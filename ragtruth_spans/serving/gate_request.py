"""What the gate reads of a chat request and how it answers on its own: the upstream's settings
(:class:`Upstream`), the check a request asks for (:class:`CheckRequest`: context, question, task, by
``/v1/detect``'s text rules) and the gate's own errors in the OpenAI API's shape (:class:`GateError`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel

from ragtruth_spans.core.fields import is_blank, surrogate_at
from ragtruth_spans.detectors.base import DetectItem, quick_task

BLOCK_MODES = ("replace", "annotate")
GATE_FIELDS = ("context", "question", "task")
"""The request fields the gate reads and takes out before forwarding."""


@dataclass(frozen=True)
class Upstream:
    """Where and how the gate forwards (see the module docstring).

    >>> Upstream("http://127.0.0.1:8001/v1").endpoint
    'http://127.0.0.1:8001/v1/chat/completions'
    """

    url: str
    timeout: float = 120.0
    stream_timeout: float = 600.0
    """Seconds a streamed answer may take in all (a deadline on the whole stream, a silent upstream's included)."""
    require_context: bool = False
    block_above: float | None = None
    block_mode: str = "annotate"
    max_response_bytes: int = 16 * 1024 * 1024
    api_key: str | None = None
    connections: int = 200
    """Connections to the upstream at most (the server's own cap, ``--max-connections``: one per request)."""
    pool_timeout: float = 5.0
    """Seconds a request waits for a free connection to the upstream; beyond, 503."""
    prepare_context: bool = True
    """Encode the request's context into the detector's cache while the upstream answers (the check after the
    answer's last byte then pays only for the answer); the verdicts are the same either way (tested)."""
    stream_upstream: bool = False
    """Stream from the upstream an answer the client wants whole, checking it as it arrives, and answer the chat
    completion its chunks make (:func:`~ragtruth_spans.serving.proxy.complete_from_stream`)."""

    @property
    def endpoint(self) -> str:
        """The upstream's chat completions URL: ``url`` as an OpenAI ``base_url``, or the full URL as given."""
        url = self.url.rstrip("/")
        return url if url.endswith("/chat/completions") else f"{url}/chat/completions"


def openai_error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error of the gate itself, in the OpenAI API's shape."""
    return JSONResponse({"error": {"message": message, "type": kind, "code": None, "param": None}},
                        status_code=status, headers=headers)


class OpenAIErrorDetail(BaseModel):
    message: str
    type: str
    code: str | None = None
    param: str | None = None


class OpenAIError(BaseModel):
    """An error answer of the gate's route, in the OpenAI API's shape."""

    error: OpenAIErrorDetail


class GateError(Exception):
    """An answer of the gate's own (no upstream answer to pass through)."""

    def __init__(self, status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.headers = status, message, kind, headers

    def response(self) -> JSONResponse:
        return openai_error(self.status, self.message, self.kind, self.headers)


def _text(value: Any, field: str) -> str:
    """A text of the check by ``/v1/detect``'s rules: a string, not blank
    (:func:`~ragtruth_spans.core.fields.is_blank`: only whitespace or invisible characters), valid Unicode; else a
    422 before the upstream is called."""
    if not isinstance(value, str):
        raise GateError(422, f"{field} must be a string", "invalid_request_error")
    if is_blank(value):
        raise GateError(422, f"{field} is empty or blank (only whitespace or invisible characters): there is nothing "
                        "to check against", "invalid_request_error")
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
