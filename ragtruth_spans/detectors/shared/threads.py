"""Native thread pools held to one thread while a detector answers.

One detection multiplies small matrices (a response sentence's word pieces against a context's: tens by hundreds
of rows) and runs LightGBM over a hundred rows. Handing such work to OpenBLAS's or OpenMP's second thread costs
more than it saves, and on a busy machine far more: the second thread waits for a core, and the product of a
30 x 384 and a 384 x 450 matrix took 29 ms with two OpenBLAS threads against 1.3 ms with one on a loaded 2-core
machine (docs/BENCHMARKS.md). ONNX Runtime's own pool (the encoder pass, the one large piece) is not affected.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

logger = logging.getLogger(__name__)

_CONTROLLER: list[Any] = []
_LOCK = threading.Lock()


def _controller() -> Any:
    """One :class:`threadpoolctl.ThreadpoolController` per process (scanning the loaded libraries takes ~50 ms),
    made on first use, when the detector's native libraries are loaded; None without threadpoolctl."""
    with _LOCK:
        if not _CONTROLLER:
            try:
                from threadpoolctl import ThreadpoolController
            except ImportError:  # a dependency of scikit-learn, so normally present
                _CONTROLLER.append(None)
            else:
                _CONTROLLER.append(ThreadpoolController())
        return _CONTROLLER[0]


@contextmanager
def one_native_thread() -> Iterator[None]:
    """Within the block, BLAS and OpenMP run on one thread (as set process-wide by threadpoolctl: the limit is
    lifted when the block ends).

    >>> import numpy as np
    >>> with one_native_thread():
    ...     float((np.ones((2, 3)) @ np.ones((3, 2)))[0, 0])
    3.0
    """
    controller = _controller()
    if controller is None:
        yield
        return
    with controller.limit(limits=1):
        yield
