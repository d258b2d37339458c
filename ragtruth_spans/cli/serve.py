"""``ragtruth-spans serve``: a detector behind an HTTP endpoint (FastAPI + uvicorn). Its options are the fields
of :class:`~ragtruth_spans.serving.settings.ServeSettings` (:mod:`~ragtruth_spans.cli.settings_options`), the
load flags and ``--log-level``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Optional

import typer

from ragtruth_spans.cli.common import (
    LoadFlags,
    detector_command,
    fail,
    model_label,
    model_option,
    note,
    resolve_model,
    user_errors,
)
from ragtruth_spans.cli.settings_options import with_settings
from ragtruth_spans.core import logs
from ragtruth_spans.core.errors import check_choice
from ragtruth_spans.serving.settings import ServeSettings, api_key_from_env, is_loopback, page_wanted

logger = logging.getLogger(__name__)

__all__ = ["api_key_from_env", "is_loopback", "page_wanted", "serve_command"]


def _configure_server_logging(log_level: str) -> None:
    """A server's log: time-stamped records; ``--log-level`` sets ragtruth-spans' own (``--quiet`` keeps them to
    warnings)."""
    with user_errors():
        check_choice(log_level.lower(), ("debug", "info", "warning", "error"), "log level", field="--log-level")
    level = logging.getLevelName(log_level.upper())
    quiet = logs.verbosity() == "quiet"
    logs.configure(logs.verbosity(), fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger(logs.PACKAGE_LOGGER).setLevel(max(logging.WARNING, level) if quiet else level)


def _load(model: str | None, load: LoadFlags) -> tuple[str, object, dict | None]:
    """``(label, detector, run_info)`` of ``--model``."""
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.runs.run_info import read_run_info

    with user_errors():
        label, path = model_label(model), resolve_model(model)
        run_info = read_run_info(path) if Path(path).is_dir() else None
        try:
            detector = load_detector(path, **load.options().load_kwargs())
        except OSError as exc:
            fail(exc)
    return label, detector, run_info


@detector_command("serve")
@with_settings
def serve_command(
    *,
    model: Optional[str] = model_option(),
    settings: ServeSettings,
    load: LoadFlags = LoadFlags(),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
) -> None:
    """Serve a detector over HTTP: POST /v1/detect, POST /v1/select, GET /v1/model, GET /health, a page to try it
    at GET / (on loopback, or with --ui), docs with --docs; with --upstream URL, an OpenAI-compatible
    POST /v1/chat/completions that forwards to URL and adds each answer's hallucinated spans.
    Concurrent requests are micro-batched; Ctrl-C or SIGTERM finishes the requests in flight, then stops."""
    from ragtruth_spans.core.extras import require

    with user_errors():
        require("serve", "ragtruth-spans serve")
    from ragtruth_spans.serving import server
    from ragtruth_spans.serving.app import create_app

    _configure_server_logging(log_level)
    label, detector, run_info = _load(model, load)
    where = f"http://{settings.host}:{settings.port}"
    note(f"serving {detector.kind} detector {label} on {where} (page: {where + '/' if settings.ui else 'off (--ui)'}; "
         f"docs: {'/docs' if settings.docs else 'off'}; auth: "
         f"{'bearer token from --api-key-env' if settings.api_key else 'none'})")
    if settings.upstream is not None:
        note(f"gate: POST {where}/v1/chat/completions forwards to {_without_userinfo(settings.upstream)} "
             f"(context {'required' if settings.require_context else 'optional'}; block above: "
             f"{'off' if settings.block_above is None else f'{settings.block_above:g} ({settings.block_mode})'})")
    server.run(create_app(detector, settings=settings, run_info=run_info), settings, log_level.lower())


def _without_userinfo(url: str) -> str:
    """``url`` without a ``user:password@`` part (never printed).

    >>> _without_userinfo("https://me:secret@llm.example/v1")
    'https://llm.example/v1'
    """
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))
