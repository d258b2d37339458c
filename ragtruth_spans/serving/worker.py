"""One worker process for the service's pure-Python work that holds the interpreter lock for long.

A parse of a large JSON body (:class:`~ragtruth_spans.serving.parse.BodyParser`) or a sentence split of a long
streamed text (:meth:`Gate.sentences <ragtruth_spans.serving.gate.Gate.sentences>`) holds the interpreter lock
while it runs; in a worker thread it would still hold up the event loop (each of the loop's system calls gives the
lock away and waits for it again), ``/health`` included. :class:`WorkerProcess` runs such work in a one-process
pool, spawned (no copy of the service's threads), started on first use or by :meth:`WorkerProcess.start`, with an
``initializer`` that loads what the work needs once, when the process starts, never per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

logger = logging.getLogger(__name__)


def _started(nice: int, initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    """The worker process's start: its priority lowered by ``nice`` (where the system allows), then
    ``initializer(*initargs)``."""
    if nice:
        with contextlib.suppress(AttributeError, OSError):  # no nice here: the work runs at the service's priority
            os.nice(nice)
    if initializer is not None:
        initializer(*initargs)


class WorkerProcess:
    """A one-process pool (see the module docstring); ``max_pending``: calls queued or running at most (None: no
    bound), beyond which :attr:`full` is true (the caller decides: wait, skip or do the work itself); ``nice``:
    how much lower the process's CPU priority is than the service's (work that may wait for the service's own)."""

    def __init__(self, name: str, initializer: Callable[..., Any] | None = None, initargs: tuple[Any, ...] = (),
                 max_pending: int | None = None, nice: int = 0) -> None:
        self.name, self.max_pending, self.nice = name, max_pending, nice
        self._initializer, self._initargs = initializer, initargs
        self._pool: ProcessPoolExecutor | None = None
        self._pending = 0
        self._lock = threading.Lock()  # the count is lowered by the pool's own thread when a call ends

    @property
    def pending(self) -> int:
        """Calls submitted and not ended (queued or running in the process)."""
        return self._pending

    @property
    def started(self) -> bool:
        """Whether the process is started (or starting)."""
        return self._pool is not None

    @property
    def full(self) -> bool:
        """Whether ``max_pending`` calls are queued or running."""
        return self.max_pending is not None and self._pending >= self.max_pending

    def start(self) -> None:
        """Start the process now (its ``initializer`` runs there meanwhile); a no-op when it runs already."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_started, initargs=(self.nice, self._initializer,
                                                                             self._initargs))
            self._pool.submit(int)  # spawns the process now (the pool makes it at its first call otherwise)

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the process (``fn`` a module-level function, its arguments and result picklable); a
        call left (cancelled) before it was sent to the process is taken off the queue, one sent still runs (and
        counts in :attr:`pending` until it ends). A process that died (``BrokenProcessPool``, raised) is replaced
        at the next call."""
        self.start()
        assert self._pool is not None
        try:
            future = self._pool.submit(fn, *args)
        except BrokenProcessPool:
            self._drop()
            raise
        with self._lock:
            self._pending += 1
        future.add_done_callback(self._ended)
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            self._drop()
            raise

    def _ended(self, _: Future[Any]) -> None:
        with self._lock:
            self._pending -= 1

    def _drop(self) -> None:
        logger.warning("the %s worker process died; a new one starts at the next call", self.name)
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the process (the service's shutdown); a later call starts a new one."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
