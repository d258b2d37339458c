"""How ragtruth-spans talks: the standard library's :mod:`logging`, one logger per module, set up once by the
program that runs it.

Library modules hold ``logger = logging.getLogger(__name__)`` and emit through it: ``info`` for progress and step
lines, ``warning`` for problems. They never configure logging, never write ``os.environ`` and never set another
library's logger; they read the level they are given (:func:`progress_enabled`, :func:`verbose`). Results (tables,
summaries, predictions) are returned to the caller, who renders them.

The entry point (the command line's callback, a script's ``main``) calls :func:`configure` once:

- ``quiet``: warnings and errors only (the ``ragtruth_spans`` loggers at ``WARNING``): no progress bar, no step or
  metric line. Results still go to stdout.
- ``normal`` (default): ragtruth-spans' own messages (``INFO``), one progress bar per long stage (only on a
  terminal). With ``mute_libraries`` (the command line) the libraries underneath are silenced: their loggers below
  ``ERROR`` (transformers' load report of a new classification head, PEFT, TRL, accelerate, datasets …), their
  progress bars (weights loading, shard writing, dataset maps), and the Python warnings raised outside
  ragtruth-spans (dropped from the ``py.warnings`` records of :func:`logging.captureWarnings`).
- ``verbose``: everything, the libraries' own chatter included (ragtruth-spans at ``DEBUG``, the root at ``INFO``).

Records go to stderr: through rich on a terminal, as plain one-line records (never wrapped, control characters
escaped) elsewhere. :func:`make_console` gives a rich console for results that never wraps or crops a line when
its stream is not a terminal (a log file keeps whole paths, one per line).
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from rich.console import Console

Verbosity = Literal["quiet", "normal", "verbose"]
PACKAGE_LOGGER = "ragtruth_spans"
"""The parent of every module's logger: its level is the run's verbosity."""
LEVELS: dict[str, int] = {"quiet": logging.WARNING, "normal": logging.INFO, "verbose": logging.DEBUG}
"""The level of :data:`PACKAGE_LOGGER` for each verbosity."""
LIBRARY_LOGGERS = ("transformers", "peft", "trl", "accelerate", "datasets", "sentence_transformers",
                   "bitsandbytes", "huggingface_hub", "torch", "urllib3", "httpx", "filelock", "vllm", "onnxscript",
                   "onnx_ir", "onnxruntime")
"""Loggers of the libraries underneath, set to ``ERROR`` by an entry point that mutes them (unless verbose)."""
QUIET_ENV = {"TRANSFORMERS_VERBOSITY": "error", "HF_HUB_DISABLE_PROGRESS_BARS": "1",
             "HF_DATASETS_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
             "TOKENIZERS_PARALLELISM": "false",
             "TORCH_LOGS": "-onnx"}  # torch's ONNX exporter logs through its own handler, at WARNING unless told
"""Environment switches the libraries read when imported (set by an entry point that mutes them, unless verbose,
and unless the user set them)."""
FILE_WIDTH = 160
"""Width of a console whose stream is not a terminal (tables); text lines are never wrapped there."""
_PACKAGE_DIRS = tuple({str(Path(__file__).parents[1]), str(Path(__file__).resolve().parents[1])})
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters a terminal would act on rather than show: C0/C1 controls (ESC starts CSI/OSC sequences; newline and
tab are kept) and the bidirectional overrides."""

logger = logging.getLogger(__name__)


def printable(text: object) -> str:
    """``text`` with every terminal control character shown as an escape (``\\x1b``, ``\\u202e``), so nothing a
    user wrote can clear the screen, forge a link or reorder what is shown. Offsets of the visible text shift only
    where such a character was."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", str(text))


# --- for library code: read the level, never set it ------------------------------------------------------------

def verbosity() -> Verbosity:
    """The verbosity the ``ragtruth_spans`` loggers' level stands for (``normal`` when nothing was set up)."""
    level = logging.getLogger(PACKAGE_LOGGER).getEffectiveLevel()
    return "verbose" if level <= logging.DEBUG else "normal" if level <= logging.INFO else "quiet"


def verbose() -> bool:
    """Whether the program asked for everything (``DEBUG`` on the ``ragtruth_spans`` loggers)."""
    return logging.getLogger(PACKAGE_LOGGER).isEnabledFor(logging.DEBUG)


def progress_enabled(stream: Any = None) -> bool:
    """Whether a progress bar should be drawn on ``stream`` (default stderr): the ``ragtruth_spans`` loggers show
    ``INFO`` (not quiet), and ``stream`` is a terminal (or a notebook, whose widgets draw the bars)."""
    stream = sys.stderr if stream is None else stream
    interactive = bool(getattr(stream, "isatty", lambda: False)()) or "ipykernel" in sys.modules
    return logging.getLogger(PACKAGE_LOGGER).isEnabledFor(logging.INFO) and interactive


def in_chunks(items: Sequence[Any], work: Callable[[int, Sequence[Any]], list[Any]], *, desc: str,
              log: logging.Logger, chunk: int = 64) -> list[Any]:
    """``work(at, items[at:at + chunk])`` over ``items`` in chunks, the results joined in order, with one progress
    bar on a terminal (:func:`progress_enabled`); elsewhere a record of ``log`` at each tenth (``"DESC k / n
    responses"``), so a log file shows how far a long stage is."""
    from tqdm.auto import tqdm

    out: list[Any] = []
    bar_shown = progress_enabled()
    tenth = 0
    with tqdm(total=len(items), unit="response", desc=desc, disable=not bar_shown, leave=False) as bar:
        for at in range(0, len(items), chunk):
            part = items[at:at + chunk]
            out.extend(work(at, part))
            bar.update(len(part))
            if not bar_shown and len(out) * 10 // len(items) > tenth:
                tenth = len(out) * 10 // len(items)
                log.info("%s %d / %d responses", desc, len(out), len(items))
    return out


def log_lines(log: logging.Logger, text: object, level: int = logging.INFO) -> None:
    """Each non-blank line of ``text`` (a string, a rich ``Text``) as one record of ``log``: a multi-line summary
    stays one record per line when records are plain lines."""
    for line in str(text).splitlines():
        if line.strip():
            log.log(level, line)


def make_console(*, stderr: bool = False, **kwargs: Any) -> Console:
    """A rich console for messages (stderr) or results (stdout): highlighting off; on a terminal it wraps as
    usual, elsewhere (a pipe, a file) it never wraps text and draws tables up to :data:`FILE_WIDTH` columns."""
    console = Console(stderr=stderr, highlight=False, **kwargs)
    if not console.is_terminal and "width" not in kwargs:
        console = Console(stderr=stderr, highlight=False, width=FILE_WIDTH, soft_wrap=True, **kwargs)
    return console


# --- for entry points only ----------------------------------------------------------------------------------------

class _Stderr(logging.StreamHandler):
    """A handler on whatever ``sys.stderr`` is when a record is written (a test runner swaps it)."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class OneLineFormatter(logging.Formatter):
    """A record as one line: ``warning: ...`` / ``error: ...`` prefixed, ``INFO`` and below bare (or laid out by
    ``fmt``, e.g. with a time stamp); a warning captured from :mod:`warnings` keeps its first line
    (``file:line: Category: message``); control characters are escaped and line breaks become `` | ``."""

    def __init__(self, fmt: str | None = None) -> None:
        super().__init__(fmt)
        self.laid_out = fmt is not None

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        if record.name == "py.warnings":
            message = message.strip().split("\n", 1)[0]
        if record.exc_info:
            message += f" ({record.exc_info[1]!r})"
        text = printable(" | ".join(line for line in message.splitlines() if line.strip()) or message)
        if self.laid_out:
            return super().format(logging.makeLogRecord({**record.__dict__, "msg": text, "args": None,
                                                         "exc_info": None, "exc_text": None}))
        return text if record.levelno < logging.WARNING else f"{record.levelname.lower()}: {text}"


class LibraryWarnings(logging.Filter):
    """Drops ``py.warnings`` records of warnings raised outside ragtruth-spans (counted in :attr:`hidden`)."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "py.warnings" or record.getMessage().startswith(_PACKAGE_DIRS):
            return True
        self.hidden += 1
        return False


class KernelsNotice(logging.Filter):
    """bitsandbytes says on import, on CPUs with AVX512-BF16, that its optional Hub-downloaded ``kernels``
    package is missing ("pip install kernels"); ragtruth-spans never fetches code from the Hub and the built-in
    CPU kernels are used, so an entry point drops that one message (every other bitsandbytes message still
    follows the level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "kernels-community" not in record.getMessage()


def configure(level: Verbosity = "normal", *, mute_libraries: bool = True, capture_warnings: bool = True,
              rich: bool | None = None, console: Console | None = None, fmt: str | None = None) -> logging.Handler:
    """For entry points: set the run's verbosity and its one handler on the root logger (a later call replaces
    both). ``rich``: draw records with rich (default: when stderr is a terminal), else plain one-line records;
    ``console``: draw them with rich on that console (at its width: the quickstart's, which fits ``COLUMNS``);
    ``fmt``: plain records laid out by this :class:`logging.Formatter` format (a server's time-stamped log).
    ``mute_libraries``: quieten the libraries underneath unless verbose (see the module docstring).
    ``capture_warnings``: route Python warnings through logging (:func:`logging.captureWarnings`). Returns the
    handler (its :class:`LibraryWarnings` filter counts the library warnings dropped)."""
    if level not in LEVELS:
        raise ValueError(f"unknown verbosity {level!r}")
    loud = level == "verbose"
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_ragtruth_spans", False)]:
        root.removeHandler(old)
    handler = _handler(sys.stderr.isatty() if rich is None and fmt is None else bool(rich), console)
    if fmt is not None:
        handler.setFormatter(OneLineFormatter(fmt))
    handler._ragtruth_spans = True  # type: ignore[attr-defined]
    if mute_libraries and not loud:
        handler.addFilter(LibraryWarnings())
    root.addHandler(handler)
    root.setLevel(logging.INFO if loud else logging.WARNING)
    logging.getLogger(PACKAGE_LOGGER).setLevel(LEVELS[level])
    if mute_libraries:
        _mute(loud)
    if capture_warnings:
        logging.captureWarnings(True)
    return handler


def _handler(rich: bool, console: Console | None = None) -> logging.Handler:
    handler: logging.Handler = _ConsoleHandler(console or Console(stderr=True, highlight=False)) \
        if rich or console is not None else _Stderr()
    handler.setFormatter(OneLineFormatter())
    return handler


class _ConsoleHandler(logging.Handler):
    """Records drawn by rich on ``console`` (a terminal): wrapped at its width, never read as markup, warnings
    in yellow and errors in red."""

    STYLES: ClassVar[dict[int, str]] = {logging.WARNING: "yellow", logging.ERROR: "bold red",
                                        logging.CRITICAL: "bold red"}

    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.console.print(self.format(record), markup=False, highlight=False,
                               style=self.STYLES.get(record.levelno))
        except Exception:  # logging's contract: a failing handler reports, never raises
            self.handleError(record)


def _mute(loud: bool) -> None:
    """The libraries underneath at the entry point's level: environment switches for those not imported yet,
    their own switches for those already imported, their loggers."""
    for key, value in QUIET_ENV.items():
        if not loud:
            os.environ.setdefault(key, value)
    ops = logging.getLogger("bitsandbytes.backends.cpu.ops")
    if not any(isinstance(f, KernelsNotice) for f in ops.filters):
        ops.addFilter(KernelsNotice())  # whatever the level
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
    for name in LIBRARY_LOGGERS:  # last: transformers' own switch above sets its logger's level too
        logging.getLogger(name).setLevel(logging.NOTSET if loud else logging.ERROR)
