"""``--device``, checked before anything loads: a device this machine's torch cannot run a detector on (``cuda``
on a CPU-only build or without a visible GPU, ``cuda:N`` past the GPUs there are, ``meta``, a name torch does not
know) is the usual one-line error naming the option, never a traceback from deep inside a model's load."""

from __future__ import annotations

import logging
from typing import Any

from ragtruth_spans.core.errors import InputError

logger = logging.getLogger(__name__)

RUNNABLE = "cpu, cuda, cuda:N or mps"


def check_device(device: str | None) -> None:
    """Raise :class:`InputError` (field ``--device``) unless ``device`` is None or a device torch can run a
    detector on here; without torch installed, nothing is checked (no family that needs it is loaded).

    >>> check_device(None), check_device("cpu")
    (None, None)
    >>> check_device("meta")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ragtruth_spans.core.errors.InputError: field '--device': 'meta' holds no data: a detector runs on cpu, ...
    """
    if device is None:
        return
    try:
        import torch
    except ImportError:
        return
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise InputError(f"{device!r} is not a torch device ({RUNNABLE})", field="--device") from None
    if parsed.type == "cpu":
        return
    if parsed.type == "cuda":
        _check_cuda(torch, device, parsed.index)
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise InputError(f"{device!r}: no MPS device here; use --device cpu", field="--device")
    elif parsed.type == "meta":
        raise InputError(f"{device!r} holds no data: a detector runs on {RUNNABLE}", field="--device")
    else:
        raise InputError(f"{device!r} is not a device a detector runs on ({RUNNABLE})", field="--device")


def _check_cuda(torch: Any, device: str, index: int | None) -> None:
    """``cuda`` or ``cuda:N`` (``index``) with a GPU there to run on."""
    if not torch.cuda.is_available():
        why = "this torch is built without CUDA" if torch.version.cuda is None else "no GPU is visible"
        raise InputError(f"{device!r}: {why} (torch {torch.__version__}); use --device cpu", field="--device")
    count = torch.cuda.device_count()
    if index is not None and index >= count:
        raise InputError(f"{device!r}: there {'is' if count == 1 else 'are'} {count} GPU(s) here (cuda:0 to "
                         f"cuda:{count - 1})", field="--device")
