"""A client for any OpenAI-compatible chat-completions endpoint (vLLM, ``transformers serve``, Ollama, hosted APIs).

It POSTs to ``{base_url}/chat/completions`` and nowhere else (redirects are not followed), with at most
``concurrency`` requests in flight (a thread pool over one ``httpx.Client``), each limited to ``timeout`` seconds.

Failures, per request:

- HTTP 429 and 5xx, timeouts and connection errors are **retried** up to ``max_retries`` times, after an
  exponential backoff with jitter (``backoff_base · 2^attempt``, capped at ``backoff_max``, drawn in its upper
  half) or after the server's ``Retry-After`` (seconds or an HTTP date) when that is longer (also capped);
- HTTP 401, 403 and 404 (bad key, no such model or URL) **stop the run** (:class:`EndpointError`);
- other statuses (400 for a prompt longer than the model's window, 422…) and a 200 that is not a chat
  completion fail that request only;
- after ``max_consecutive_failures`` requests in a row failed even after their retries, the endpoint is taken to be
  down and the run **stops** (:class:`EndpointError`): nothing is written for the batch in flight, and what was
  answered before is in the cache, so running the same command again resumes.

Answers come from the :class:`~ragtruth_spans.detectors.judge.cache.AnswerCache` when present (no request sent).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.judge.cache import AnswerCache, request_key

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
FATAL_STATUSES = frozenset({401, 403, 404})


class EndpointError(InputError):
    """The endpoint cannot serve this run (bad key, unknown model or URL, down): the run stops with one line."""


@dataclass
class ChatOutcome:
    """What became of one request: the answer ``content`` or the ``error``, and what it took.

    ``cached``: read from the cache (no request sent, no tokens billed now). ``retries``: attempts beyond the
    first. ``prompt_tokens``/``completion_tokens``: the usage the endpoint reported (0 and ``usage_reported=False``
    when it reported none). ``endpoint_failure``: failed after all retries (counts towards stopping the run).
    """

    content: str | None = None
    error: str | None = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_reported: bool = False
    cached: bool = False
    retries: int = 0
    endpoint_failure: bool = False
    fatal: bool = False


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (a number of seconds or an HTTP date), None if absent/bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def backoff_delay(attempt: int, retry_after: float | None, *, base: float, cap: float,
                  rng: random.Random) -> float:
    """Seconds to wait before retry ``attempt + 1``: exponential backoff with jitter in ``[d/2, d]`` where
    ``d = min(cap, base · 2^attempt)``, or ``retry_after`` when that is longer; never more than ``cap``."""
    delay = min(cap, base * 2 ** attempt)
    delay = delay / 2 + rng.uniform(0, delay / 2)
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(cap, delay)


class ChatClient:
    """Send chat-completion request bodies to one endpoint (see the module docstring)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 120.0, concurrency: int = 4,
                 max_retries: int = 5, backoff_base: float = 1.0, backoff_max: float = 60.0,
                 max_consecutive_failures: int = 5, cache: AnswerCache | None = None,
                 prompt_version: str = "") -> None:
        import httpx

        self.url = f"{base_url.rstrip('/')}/chat/completions"
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff_base, self.backoff_max = backoff_base, backoff_max
        self.max_consecutive_failures = max_consecutive_failures
        self.cache = cache
        self.prompt_version = prompt_version
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client_args = {"timeout": httpx.Timeout(timeout, connect=min(timeout, 10.0)), "headers": headers,
                             "follow_redirects": False}
        self._http: httpx.Client | None = None
        self._timeout = timeout
        self._rng = random.Random()

    def _client(self) -> Any:
        """The HTTP client, (re)opened on first use and after a stopped run closed it."""
        import httpx

        if self._http is None or self._http.is_closed:
            self._http = httpx.Client(**self._client_args)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()

    def complete_all(self, bodies: Sequence[dict[str, Any]]) -> list[ChatOutcome]:
        """One outcome per body, in order; raises :class:`EndpointError` when the run must stop."""
        stop = threading.Event()
        http = self._client()
        outcomes: list[ChatOutcome | None] = [None] * len(bodies)
        consecutive = 0
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="llm-judge")
        try:
            pending: dict[Future, int] = {pool.submit(self.complete, body, stop): i for i, body in enumerate(bodies)}
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    outcome = outcomes[pending.pop(future)] = future.result()
                    consecutive = consecutive + 1 if outcome.endpoint_failure else 0
                    if outcome.fatal or consecutive >= self.max_consecutive_failures:
                        raise EndpointError(self._stop_message(outcome, consecutive))
        except BaseException:  # a stopped run, Ctrl-C: cancel what is queued, cut what is in flight
            stop.set()
            http.close()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        return [outcome for outcome in outcomes if outcome is not None]

    def _stop_message(self, outcome: ChatOutcome, consecutive: int) -> str:
        why = outcome.error if outcome.fatal else f"{consecutive} request(s) in a row failed (last: {outcome.error})"
        return (f"the judge endpoint {self.url} cannot serve this run: {why}. Nothing was written for the batch in "
                "flight; answers received so far are cached, so the same command resumes")

    def complete(self, body: dict[str, Any], stop: threading.Event | None = None) -> ChatOutcome:
        """The outcome of one request body: from the cache, else sent (with retries, given up early once ``stop``
        is set)."""
        key = request_key(self.base_url, body, self.prompt_version)
        if self.cache is not None:
            entry = self.cache.get(key)
            if entry is not None:
                usage = entry.get("usage") or {}
                return ChatOutcome(content=entry["content"], finish_reason=entry.get("finish_reason"), cached=True,
                                   prompt_tokens=int(usage.get("prompt_tokens") or 0),
                                   completion_tokens=int(usage.get("completion_tokens") or 0),
                                   usage_reported=bool(usage))
        stop = stop or threading.Event()
        outcome = self._send(body, stop)
        if outcome.fatal:
            stop.set()  # no new request once the run must stop
        if outcome.content is not None and self.cache is not None:
            usage = ({"prompt_tokens": outcome.prompt_tokens, "completion_tokens": outcome.completion_tokens}
                     if outcome.usage_reported else None)
            self.cache.put(key, {"model": body.get("model"), "prompt_version": self.prompt_version,
                                 "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "content": outcome.content,
                                 "finish_reason": outcome.finish_reason, "usage": usage})
        return outcome

    def _send(self, body: dict[str, Any], stop: threading.Event) -> ChatOutcome:
        import httpx

        problem = "not sent"
        for attempt in range(self.max_retries + 1):
            if stop.is_set():
                why = f"stopped before retry {attempt}: {problem}" if attempt else "not sent: the run is stopping"
                return ChatOutcome(error=why, retries=attempt)
            retry_after = None
            try:
                response = self._client().post(self.url, json=body)
            except httpx.TimeoutException:
                problem = f"timed out after {self._timeout:g} s"
            except httpx.TransportError as exc:
                problem = f"connection error: {type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status == 200:
                    return _read_completion(response, retries=attempt)
                detail = f"HTTP {status}: {_snippet(response.text)}"
                if status in FATAL_STATUSES:
                    hint = ("check the API key (api_key_env)" if status != 404 else
                            "check base_url (usually ending in /v1) and model")
                    return ChatOutcome(error=f"{detail} ({hint})", retries=attempt, fatal=True)
                if status not in RETRY_STATUSES and status < 500:
                    return ChatOutcome(error=detail, retries=attempt)
                problem = detail
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
            if attempt < self.max_retries:
                stop.wait(backoff_delay(attempt, retry_after, base=self.backoff_base, cap=self.backoff_max,
                                              rng=self._rng))
        return ChatOutcome(error=f"{problem} (gave up after {self.max_retries + 1} attempts)",
                           retries=self.max_retries, endpoint_failure=True)


def _snippet(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " …"


def _read_completion(response: Any, *, retries: int) -> ChatOutcome:
    """The outcome of an HTTP 200: the first choice's message content and the reported usage."""
    try:
        data = response.json()
        choice = data["choices"][0]
        content = choice["message"].get("content")
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return ChatOutcome(error=f"the endpoint's answer is not a chat completion: {_snippet(response.text)}",
                           retries=retries)
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    tokens = {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")}
    reported = all(isinstance(v, int) and not isinstance(v, bool) for v in tokens.values())
    return ChatOutcome(content=content if isinstance(content, str) else "", finish_reason=choice.get("finish_reason"),
                       prompt_tokens=tokens["prompt_tokens"] if reported else 0,
                       completion_tokens=tokens["completion_tokens"] if reported else 0,
                       usage_reported=reported, retries=retries)
