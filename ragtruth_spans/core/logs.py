"""How loud a run is: one set-up for the command line, the quickstart and the trainers.

Three levels (:func:`configure`, once per command, from ``--quiet`` / ``--verbose``):

- ``quiet``: results and errors only: no progress bar, no step or metric line.
- ``normal`` (default): ragtruth-spans' own messages, one progress bar per long stage (only on a terminal), the
  trainer's metrics as short lines. The libraries underneath are silenced: their warnings (``FutureWarning``,
  ``UserWarning`` … raised outside ragtruth-spans are captured and counted, not shown), their loggers below
  ``ERROR`` (transformers' load report of a new classification head, PEFT, TRL, accelerate, datasets …) and
  their progress bars (weights loading, shard writing, dataset maps).
- ``verbose``: everything the libraries say, as they say it.

Nothing here imports a heavy library: libraries not imported yet are configured through their environment
variables, those already imported through their own switches. :func:`make_console` gives a rich console that
never wraps or crops a line when its stream is not a terminal (a log file keeps whole paths, one per line).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Literal

from rich.console import Console

Verbosity = Literal["quiet", "normal", "verbose"]
LIBRARY_LOGGERS = ("transformers", "peft", "trl", "accelerate", "datasets", "sentence_transformers",
                   "bitsandbytes", "huggingface_hub", "torch", "urllib3", "httpx", "filelock", "vllm")
"""Loggers of the libraries underneath, set to ``ERROR`` unless verbose."""
QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
             "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
             "TOKENIZERS_PARALLELISM": "false"}
"""Environment switches the libraries read when imported (set unless verbose, and unless the user set them)."""
FILE_WIDTH = 160
"""Width of a console whose stream is not a terminal (tables); text lines are never wrapped there."""
_PACKAGE_DIR = str(Path(__file__).resolve().parents[1])

_state: dict[str, Any] = {"verbosity": "normal", "hidden_warnings": 0, "env_set": set(),
                          "showwarning": None, "configured": False}


def verbosity() -> Verbosity:
    """The level :func:`configure` set (``normal`` before any call)."""
    return _state["verbosity"]


def hidden_warnings() -> int:
    """How many library warnings were captured (not shown) since :func:`configure`."""
    return int(_state["hidden_warnings"])


def progress_enabled(stream: Any = None) -> bool:
    """Whether a progress bar should be drawn on ``stream`` (default stderr): not quiet, and a terminal (or a
    notebook, whose widgets draw the bars)."""
    stream = sys.stderr if stream is None else stream
    interactive = bool(getattr(stream, "isatty", lambda: False)()) or "ipykernel" in sys.modules
    return verbosity() != "quiet" and interactive


def make_console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A rich console for messages (stderr) or results (stdout): highlighting off; on a terminal it wraps as
    usual, elsewhere (a pipe, a file) it never wraps text and draws tables up to :data:`FILE_WIDTH` columns."""
    console = Console(stderr=stderr, highlight=False, **kwargs)
    if not console.is_terminal and "width" not in kwargs:
        console = Console(stderr=stderr, highlight=False, width=FILE_WIDTH, soft_wrap=True, **kwargs)
    return console


def configure(level: Verbosity = "normal", *, capture_warnings: bool = True) -> None:
    """Set the process's verbosity and apply it to the libraries (idempotent; a later call replaces it).
    ``capture_warnings``: also route Python warnings through :func:`_show_warning` (the command line does; the
    Python API, :func:`quiet_libraries`, leaves the program's warnings alone)."""
    if level not in ("quiet", "normal", "verbose"):
        raise ValueError(f"unknown verbosity {level!r}")
    _state["verbosity"] = level
    _state["hidden_warnings"] = 0
    _state["configured"] = True
    loud = level == "verbose"
    _environment(loud)
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if loud else logging.ERROR)
    _imported_libraries(loud)
    _drop_kernels_notice()
    if capture_warnings and _state["showwarning"] is None:
        _state["showwarning"] = warnings.showwarning
        warnings.showwarning = _show_warning


def quiet_libraries() -> None:
    """For the Python API (``load_detector``, ``train``): unless the program already chose a level with
    :func:`configure`, apply the default one to the libraries underneath — their loggers below ``ERROR``, their
    progress bars (weights loading) and advisory notices off — as the command line does, without touching the
    program's own warnings. ``configure("verbose")`` beforehand keeps everything."""
    if not _state["configured"]:
        configure(_state["verbosity"], capture_warnings=False)
    else:
        _imported_libraries(verbosity() == "verbose")  # libraries imported since configure() get the level too


def _drop_kernels_notice() -> None:
    """bitsandbytes says on import, on CPUs with AVX512-BF16, that its optional Hub-downloaded ``kernels``
    package is missing ("pip install kernels"); ragtruth-spans never fetches code from the Hub and the built-in
    CPU kernels are used, so that one message is dropped at every level (every other bitsandbytes message still
    follows the level)."""
    target = logging.getLogger("bitsandbytes.backends.cpu.ops")
    if not any(getattr(f, "_ragtruth_kernels", False) for f in target.filters):
        notice = logging.Filter()
        notice.filter = lambda record: "kernels-community" not in record.getMessage()  # type: ignore[method-assign]
        notice._ragtruth_kernels = True  # type: ignore[attr-defined]
        target.addFilter(notice)


def _environment(loud: bool) -> None:
    for key, value in QUIET_ENV.items():
        if loud:
            if key in _state["env_set"]:
                os.environ.pop(key, None)
                _state["env_set"].discard(key)
        elif key not in os.environ:
            os.environ[key] = value
            _state["env_set"].add(key)


def _imported_libraries(loud: bool) -> None:
    """Apply the level through the switches of libraries that are already imported."""
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_warning() if loud else hf_logging.set_verbosity_error()
        hf_logging.enable_progress_bar() if loud else hf_logging.disable_progress_bar()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars, enable_progress_bars

        enable_progress_bars() if loud else disable_progress_bars()
    if "datasets" in sys.modules:
        import datasets

        datasets.enable_progress_bars() if loud else datasets.disable_progress_bars()


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """``warnings.showwarning``: ragtruth-spans' own warnings, and every warning when verbose, are shown; the
    libraries' are counted (:func:`hidden_warnings`)."""
    original = _state["showwarning"] or warnings._showwarning_orig  # type: ignore[attr-defined]
    if verbosity() == "verbose" or str(Path(filename).resolve()).startswith(_PACKAGE_DIR):
        original(message, category, filename, lineno, file, line)
    else:
        _state["hidden_warnings"] += 1
