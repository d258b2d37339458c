"""The HTTP server around the app (uvicorn), configured from :class:`~ragtruth_spans.serving.settings.ServeSettings`:
``run(app, settings)``, or ``server_config`` for a server run elsewhere (a test's thread)."""

from __future__ import annotations

import logging
from typing import Any

from ragtruth_spans.serving.settings import ServeSettings

logger = logging.getLogger(__name__)


def server_config(app: Any, settings: ServeSettings, log_level: str = "info") -> Any:
    """The ``uvicorn.Config`` serving ``app`` under ``settings`` (host, port, shutdown).

    Args:
        app: the ASGI app (:func:`~ragtruth_spans.serving.app.create_app`).
        settings: the service's settings.
        log_level: uvicorn's log level.

    Returns:
        A ``uvicorn.Config``.

    >>> server_config(None, ServeSettings(port=8123)).port
    8123
    """
    import uvicorn

    return uvicorn.Config(app, host=settings.host, port=settings.port, log_level=log_level,
                          timeout_graceful_shutdown=settings.graceful_timeout)


def run(app: Any, settings: ServeSettings, log_level: str = "info") -> None:
    """Serve ``app`` until Ctrl-C or SIGTERM (the requests in flight are finished first)."""
    import uvicorn

    uvicorn.Server(server_config(app, settings, log_level)).run()
