"""The HTTP server around the app (uvicorn), configured from :class:`~ragtruth_spans.serving.settings.ServeSettings`:
``run(app, settings)``, or ``server_config`` for a server run elsewhere (a test's thread).

Connection limits (each a ``serve`` option): the connection cap (uvicorn's ``limit_concurrency``: beyond, 503 and
the connection closes), the keep-alive time between requests, the size of a request's headers (h11's incomplete
event size: beyond, 400) and the time a request's headers may take (:class:`HeaderDeadline`: uvicorn bounds only
the idle time *between* requests, and a byte resets it, so headers sent one byte at a time, or a connection that
sends nothing, would be held for ever). The body's own size and time limits are the app's
(:class:`~ragtruth_spans.serving.limits.BodyReader`).
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from ragtruth_spans.serving.limits import ConnectionStats
from ragtruth_spans.serving.settings import ServeSettings

logger = logging.getLogger(__name__)

_TIMEOUT_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n%s")


class _CountingLog:
    """uvicorn's per-connection logger, with the two warnings any client can cause at will (a request refused over
    the connection cap, a malformed or oversized request head) turned into a count in ``stats`` and a debug line,
    so that no client can fill the log; everything else as uvicorn logs it."""

    COUNTED: ClassVar[dict[str, str]] = {"Exceeded concurrency limit.": "refused_connections",
                                         "Invalid HTTP request received.": "bad_requests"}

    def __init__(self, logger: logging.Logger, stats: ConnectionStats) -> None:
        self._logger, self._stats = logger, stats

    def __getattr__(self, name: str) -> Any:
        return getattr(self._logger, name)

    def warning(self, msg: Any, *args: Any, **kwargs: Any) -> None:
        counter = self.COUNTED.get(msg) if isinstance(msg, str) else None
        if counter is None:
            self._logger.warning(msg, *args, **kwargs)
            return
        setattr(self._stats, counter, getattr(self._stats, counter) + 1)
        self._logger.debug(msg, *args, **kwargs)


class HeaderDeadline(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's head: ``header_timeout`` seconds from the
    connection's opening, or from the previous answer on a keep-alive connection; past it, a connection that sent
    part of a request gets a 408 and is closed, one that sent nothing is closed (counted in ``stats``). Made for
    given settings by :func:`header_deadline_protocol`."""

    header_timeout: float = 10.0
    stats: ConnectionStats = ConnectionStats()

    def connection_made(self, transport: Any) -> None:  # type: ignore[override]
        self._header_timer: Any = None
        self.logger = _CountingLog(self.logger, self.stats)  # type: ignore[assignment]
        super().connection_made(transport)
        self._arm()

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self._header_timer = self.loop.call_later(self.header_timeout, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def handle_events(self) -> None:
        super().handle_events()
        if self.conn.their_state is not h11.IDLE:
            self._disarm()  # the request's head is in

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state is h11.IDLE:
            self._arm()  # the next request's head

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _too_slow(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self.stats.header_timeouts += 1
        partial = bool(self.conn.trailing_data[0])
        logger.debug("closing a connection whose request head took over %g s (%s)", self.header_timeout,
                     "part sent" if partial else "nothing sent")
        if partial:
            body = b'{"error": "the request headers were not complete after %g s (--header-timeout)"}' % (
                self.header_timeout)
            self.transport.write(_TIMEOUT_408 % (len(body), body))
        self.transport.close()


def header_deadline_protocol(header_timeout: float, stats: ConnectionStats | None = None) -> type:
    """:class:`HeaderDeadline` with ``header_timeout`` seconds, counting into ``stats``.

    Args:
        header_timeout: seconds.
        stats: where ``header_timeouts`` is counted (the app's ``/health``).

    Returns:
        A protocol class for ``uvicorn.Config(http=...)``.

    >>> header_deadline_protocol(5.0).header_timeout
    5.0
    """
    return type("HeaderDeadline", (HeaderDeadline,), {"header_timeout": header_timeout,
                                                       "stats": stats if stats is not None else ConnectionStats()})


def server_config(app: Any, settings: ServeSettings, log_level: str = "info") -> Any:
    """The ``uvicorn.Config`` serving ``app`` under ``settings`` (host, port, connection limits, shutdown); the
    header timeouts are counted in the app's ``/health`` when ``app`` is
    :func:`~ragtruth_spans.serving.app.create_app`'s.

    Args:
        app: the ASGI app.
        settings: the service's settings.
        log_level: uvicorn's log level.

    Returns:
        A ``uvicorn.Config``.

    >>> server_config(None, ServeSettings(port=8123)).limit_concurrency
    200
    """
    import uvicorn

    service = getattr(getattr(app, "state", None), "service", None)
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level=log_level,
                          http=header_deadline_protocol(settings.header_timeout, getattr(service, "connections", None)),
                          timeout_keep_alive=settings.keep_alive_timeout,  # type: ignore[arg-type]
                          limit_concurrency=settings.max_connections,
                          h11_max_incomplete_event_size=settings.max_header_bytes,
                          timeout_graceful_shutdown=settings.graceful_timeout)  # type: ignore[arg-type]


def run(app: Any, settings: ServeSettings, log_level: str = "info") -> None:
    """Serve ``app`` until Ctrl-C or SIGTERM (the requests in flight are finished first); a ``--host`` other
    machines can reach is said in the log first (:meth:`ServeSettings.exposure_warnings`)."""
    import uvicorn

    for warning in settings.exposure_warnings():
        logger.warning(warning)

    uvicorn.Server(server_config(app, settings, log_level)).run()
