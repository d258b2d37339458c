"""The cores this process may use, and one process-wide pool of that many threads for short native calls
(ONNX Runtime sessions release the GIL while they run, so two texts' passes run on two cores at once).
Only leaf work goes to the pool: a task there never waits on another task of the pool."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity on Linux, else the machine's count).

    Returns:
        At least 1.

    Example:
        >>> usable_cores() >= 1
        True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def omp_threads() -> int | None:
    """``$OMP_NUM_THREADS`` when it is a whole number above 0 (a user's cap on threads), else None."""
    wanted = os.environ.get("OMP_NUM_THREADS", "").strip()
    return int(wanted) if wanted.isdigit() and int(wanted) > 0 else None


def native_workers() -> int:
    """How many native calls run at once: :func:`omp_threads` when set, else :func:`usable_cores`."""
    return omp_threads() or usable_cores()


def native_pool() -> ThreadPoolExecutor:
    """The process-wide pool of :func:`native_workers` threads (made on first use)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=native_workers(), thread_name_prefix="native")
        return _pool
