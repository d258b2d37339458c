"""``ragtruth-spans serve``: a detector behind an HTTP endpoint (FastAPI + uvicorn)."""

from __future__ import annotations

import logging
import os
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
from ragtruth_spans.core import logs
from ragtruth_spans.core.errors import InputError, check_choice


def api_key_from_env(variable: str | None) -> str | None:
    """The bearer token in environment variable ``variable`` (None: no auth); unset or empty is an error."""
    if variable is None:
        return None
    key = os.environ.get(variable, "")
    if not key.strip():
        raise InputError(f"environment variable {variable} is not set or empty (it must hold the API key)",
                         field="--api-key-env")
    return key.strip()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.1``, ``::1``, ``localhost``): only this machine can
    connect."""
    import ipaddress

    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def page_wanted(ui: bool | None, host: str) -> bool:
    """Whether ``GET /`` serves the page to try the detector: ``--ui``/``--no-ui`` when given, else on for a
    loopback ``--host`` only (a server on a public interface shows its page only when asked)."""
    return is_loopback(host) if ui is None else ui


def _configure_server_logging(log_level: str) -> None:
    """A server's log: time-stamped records; ``--log-level`` sets ragtruth-spans' own (``--quiet`` keeps them to
    warnings)."""
    with user_errors():
        check_choice(log_level.lower(), ("debug", "info", "warning", "error"), "log level", field="--log-level")
    level = logging.getLevelName(log_level.upper())
    quiet = logs.verbosity() == "quiet"
    logs.configure(logs.verbosity(), fmt="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger(logs.PACKAGE_LOGGER).setLevel(max(logging.WARNING, level) if quiet else level)


@detector_command("serve")
def serve_command(
    model: Optional[str] = model_option(),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (0.0.0.0: every interface)."),
    port: int = typer.Option(8000, "--port", min=1, max=65535, help="Port to listen on."),
    api_key_env: Optional[str] = typer.Option(None, "--api-key-env", help="Require 'Authorization: Bearer KEY' "
                                              "on /v1/*, KEY read from this environment variable."),
    max_batch: int = typer.Option(32, "--max-batch", min=1, help="Items per detect_batch call at most."),
    max_wait_ms: float = typer.Option(10.0, "--max-wait-ms", min=0, help="How long the oldest queued item waits "
                                      "for others to fill a batch."),
    max_queue: int = typer.Option(1024, "--max-queue", min=1, help="Queued items at most; beyond, 503."),
    max_items: int = typer.Option(64, "--max-items", min=1, help="Items (or candidates) per request at most; "
                                  "beyond, 413."),
    max_chars: int = typer.Option(100_000, "--max-chars", min=1, help="Characters per item (context + question + "
                                  "response) at most; beyond, 413."),
    max_request_chars: int = typer.Option(250_000, "--max-request-chars", min=1, help="Characters per request "
                                          "(all items, or all candidates, together) at most; beyond, 413."),
    max_evidence_items: int = typer.Option(8, "--max-evidence-items", min=0, help="Items asking for evidence per "
                                           "request at most; beyond, 413."),
    max_evidence_chars: int = typer.Option(120_000, "--max-evidence-chars", min=0, help="Context characters of the "
                                           "items asking for evidence, per request, at most; beyond, 413."),
    evidence_workers: int = typer.Option(1, "--evidence-workers", min=1, help="Threads of the evidence pool "
                                         "(evidence never runs in the detection or request threads)."),
    evidence_queue: int = typer.Option(8, "--evidence-queue", min=1, help="Evidence requests waiting at most; "
                                       "beyond, 503."),
    light_evidence_chars: int = typer.Option(20_000, "--light-evidence-chars", min=0, help="A request whose "
                                             "evidence contexts total at most this many characters gets evidence "
                                             "from a pool of its own, never behind a heavy one."),
    max_body_mb: float = typer.Option(16.0, "--max-body-mb", min=0.001, help="Request body size at most (MiB); "
                                      "beyond, 413."),
    graceful_timeout: float = typer.Option(30.0, "--graceful-timeout", min=0, help="On shutdown, seconds to wait "
                                           "for requests in flight."),
    load: LoadFlags = LoadFlags(),
    log_level: str = typer.Option("info", "--log-level", help="debug, info, warning or error."),
    docs: bool = typer.Option(False, "--docs", help="Serve the interactive API docs at /docs and /redoc (their "
                              "pages load Swagger UI / ReDoc from a public CDN); /openapi.json is always served."),
    ui: Optional[bool] = typer.Option(None, "--ui/--no-ui", help="Serve a page to try the detector at GET / "
                                      "(self-contained; it calls /v1/detect from the browser). Default: on "
                                      "when --host is a loopback address, off otherwise."),
    evidence_mode: str = typer.Option("lexical", "--evidence-mode", help="How the evidence of items sent with "
                                      "\"evidence\": true is found: lexical (no model, fast) or encoder "
                                      "(all-MiniLM-L6-v2 relevance)."),
) -> None:
    """Serve a detector over HTTP: POST /v1/detect, POST /v1/select, GET /v1/model, GET /health, a page to try it
    at GET / (on loopback, or with --ui), docs with --docs.
    Concurrent requests are micro-batched; Ctrl-C or SIGTERM finishes the requests in flight, then stops."""
    from ragtruth_spans.core.extras import require

    with user_errors():
        require("serve", "ragtruth-spans serve")
    import uvicorn

    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.runs.run_dir import read_run_info
    from ragtruth_spans.serving.app import ServeSettings, create_app

    _configure_server_logging(log_level)
    with user_errors():
        from ragtruth_spans.evidence import MODES

        check_choice(evidence_mode, MODES, "evidence mode", field="--evidence-mode")
        settings = ServeSettings(max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue,
                                 max_items=max_items, max_chars=max_chars, evidence_mode=evidence_mode,
                                 max_request_chars=max_request_chars, max_evidence_items=max_evidence_items,
                                 max_evidence_chars=max_evidence_chars, evidence_workers=evidence_workers,
                                 evidence_queue=evidence_queue, light_evidence_chars=light_evidence_chars,
                                 max_body_bytes=int(max_body_mb * 1024 * 1024), api_key=api_key_from_env(api_key_env),
                                 docs=docs, ui=page_wanted(ui, host))
        label, model = model_label(model), resolve_model(model)
        run_info = read_run_info(model) if Path(model).is_dir() else None
        try:
            detector = load_detector(model, **load.options().load_kwargs())
        except OSError as exc:
            fail(exc)
    page = f"http://{host}:{port}/" if settings.ui else "off (--ui)"
    note(f"serving {detector.kind} detector {label} on http://{host}:{port} (page: {page}; docs: "
         f"{'/docs' if docs else 'off'}; auth: "
         f"{'bearer token from $' + api_key_env if api_key_env else 'none'})")
    config = uvicorn.Config(create_app(detector, settings=settings, run_info=run_info), host=host, port=port,
                            log_level=log_level.lower(), timeout_graceful_shutdown=graceful_timeout)
    uvicorn.Server(config).run()
