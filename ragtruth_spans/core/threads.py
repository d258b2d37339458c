"""The cores this process may use, one process-wide pool of that many threads for short native calls (ONNX
Runtime sessions release the GIL while they run, so two texts' passes run on two cores at once), and a block that
holds BLAS and OpenMP to one thread (:func:`one_native_thread`). Only leaf work goes to the pool: a task there never
waits on another task of the pool."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_controller: list[Any] = []  # one threadpoolctl controller, made on first use


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


def _blas_controller() -> Any:
    """One :class:`threadpoolctl.ThreadpoolController` per process (scanning the loaded libraries takes ~50 ms),
    made on first use, when the detector's native libraries are loaded; None without threadpoolctl."""
    with _lock:
        if not _controller:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # a dependency of scikit-learn, so normally present
                _controller.append(None)
            else:
                _controller.append(ThreadpoolController())
        return _controller[0]


@contextmanager
def one_native_thread() -> Iterator[None]:
    """Within the block, BLAS and OpenMP run on one thread (as set process-wide by threadpoolctl: the limit is
    lifted when the block ends).

    One detection multiplies small matrices (a response sentence's word pieces against a context's: tens by hundreds
    of rows) and runs LightGBM over a hundred rows. Handing such work to OpenBLAS's or OpenMP's second thread costs
    more than it saves, and on a busy machine far more: the second thread waits for a core, and the product of a
    30 x 384 and a 384 x 450 matrix took 29 ms with two OpenBLAS threads against 1.3 ms with one on a loaded 2-core
    machine (docs/BENCHMARKS.md). ONNX Runtime's own pool (the encoder pass, the one large piece) is not affected.

    >>> import numpy as np
    >>> with one_native_thread():
    ...     float((np.ones((2, 3)) @ np.ones((3, 2)))[0, 0])
    3.0
    """
    controller = _blas_controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1):
        yield
