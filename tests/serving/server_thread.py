"""A real uvicorn server on 127.0.0.1 in a background thread, stopped by the test (``with ServerThread(app)``),
and small detectors for the serving tests."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from typing import Any

import uvicorn

from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.serving.server import server_config
from ragtruth_spans.serving.settings import ServeSettings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServerThread:
    """``with ServerThread(app) as server: server.url``; leaving the block shuts the server down gracefully."""

    def __init__(self, app: Any, graceful_timeout: float = 10.0, settings: ServeSettings | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        service = getattr(getattr(app, "state", None), "service", None)  # create_app's: its own settings
        base = settings or (service.settings if service is not None else ServeSettings())
        settings = dataclasses.replace(base, host="127.0.0.1", port=self.port, graceful_timeout=graceful_timeout)
        self.server = uvicorn.Server(server_config(app, settings, "warning"))  # the limits `serve` applies
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the test server did not stop"

    def __exit__(self, *exc: Any) -> None:
        if self.thread.is_alive():
            self.stop()


class EchoDetector(Detector):
    """Flags each response's first word; records every batch it was given; ``gate`` (an Event) holds each call
    until set, ``fail_on`` makes a batch holding that response raise."""

    kind = "echo"

    def __init__(self, gate: threading.Event | None = None, fail_on: str | None = None, delay: float = 0.0) -> None:
        self.batches: list[list[str]] = []
        self.gate, self.fail_on, self.delay = gate, fail_on, delay
        self.started = threading.Event()

    def detect_batch(self, items: Any) -> list[Detection]:
        from ragtruth_spans.core.types import Span

        items = [DetectItem.of(i) for i in items]
        self.batches.append([i.response for i in items])
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(30), "the test never opened the gate"
        if self.delay:
            time.sleep(self.delay)
        if self.fail_on is not None and any(i.response == self.fail_on for i in items):
            raise RuntimeError("secret internal detail")
        out = []
        for item in items:
            word = item.response.split(" ")[0]
            out.append(Detection(spans=[Span(0, len(word), type="Evident Conflict", score=0.5)], score=0.5,
                                 diagnostics={"seen": item.response}))
        return out
