"""The Typer application, the consoles and the one way a command fails: a one-line ``error: ...`` and exit 2.

Errors go to stderr through :data:`err` and never wrap (``soft_wrap``), so an error naming a long path stays on
one line when stderr is a pipe or a file and ``grep`` finds it; notes and progress are log records (:func:`note`),
one plain line each off a terminal. Results (tables, YAML, JSON) go
to stdout through :data:`out`, which never wraps text either when stdout is not a terminal.

Global options (before the command): ``--quiet`` (results and errors only) and ``--verbose`` (the libraries'
own warnings, load reports and progress bars). The callback that reads them is the one place logging is set up
(:func:`ragtruth_spans.core.logs.configure`); every module emits through its own ``logging.getLogger(__name__)``.
"""

from __future__ import annotations

import errno
import functools
import inspect
import logging
import os
import typing
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperCommand, TyperGroup

from ragtruth_spans.core import logs
from ragtruth_spans.core.errors import InputError, check_choice

logger = logging.getLogger(__name__)


def _help_width() -> None:
    """``--help`` at the terminal's width; through a pipe or into a file (no terminal to measure, no ``COLUMNS``
    or typer's ``TERMINAL_WIDTH``), at :data:`~ragtruth_spans.core.logs.FILE_WIDTH` columns rather than rich's 80,
    so that no help text is cut ("token-classific…"). Typer has no public switch for the width of its help console
    other than ``TERMINAL_WIDTH``, read when typer is imported, so this wraps its console factory; it is installed
    by the command line's entry (:class:`_Commands`), never on import."""
    from typer import rich_utils

    if getattr(rich_utils._get_rich_console, "_ragtruth_spans", False):
        return
    original = rich_utils._get_rich_console

    def console(stderr: bool = False) -> Console:
        made = original(stderr)
        if not (made.is_terminal or os.environ.get("COLUMNS") or os.environ.get("TERMINAL_WIDTH")):
            made.width = logs.FILE_WIDTH
        return made

    console._ragtruth_spans = True  # type: ignore[attr-defined]
    rich_utils._get_rich_console = console


class _Commands(TyperGroup):
    """The command line's group: its ``main`` (the entry, from the console script and from a test runner alike)
    sets up the width of ``--help`` before the arguments are read."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        _help_width()
        return super().main(*args, **kwargs)


app = typer.Typer(cls=_Commands, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find the exact hallucinated spans in RAG answers (RAGTruth).")
err: Console = Console(stderr=True, soft_wrap=True, highlight=False)
out: Console = logs.make_console()


@app.callback()
def _global_options(
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Print results and errors only (for scripts)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also show the libraries' warnings, load reports "
                                 "and progress bars."),
) -> None:
    """Find the exact hallucinated spans in RAG answers (RAGTruth)."""
    if quiet and verbose:
        fail(InputError("--quiet and --verbose exclude each other", field="--quiet"))
    logs.configure("quiet" if quiet else "verbose" if verbose else "normal")  # the one set-up of logging


BATCH_SIZE_HELP = ("What the detector runs together in one forward pass, by family: token-classification: "
                   "context windows [16]; generative (hf backend): responses [8]; two-tier: sentence pairs of the "
                   "cross-encoder [32]; similarity: sentences of the encoder [64] (default: the detector's).")
"""The help of ``--batch-size``, whose unit depends on the detector family."""


def fail(exc: Exception) -> NoReturn:
    """Print a one-line error (no traceback) and exit with status 2; control characters (of a file name, say)
    are shown escaped, never sent to the terminal."""
    from ragtruth_spans.reporting.console import printable

    message = printable(" ".join(str(exc).split("\n")))
    err.print(f"[bold red]error:[/] {escape(message)}")
    raise typer.Exit(code=2)


FILE_SYSTEM_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT})
"""Failures of the file system (a full disk, a file-size limit, a read-only file system, a permission, a quota):
the user's to fix, so one line naming the file rather than a traceback, wherever they arise."""


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn :class:`InputError` (bad input, named by file, line and field) into :func:`fail`, and so an ``OSError``
    of the file system (:data:`FILE_SYSTEM_ERRNOS`) that a writer did not already name (a library's own write)."""
    try:
        yield
    except InputError as exc:
        fail(exc)
    except OSError as exc:
        if exc.errno not in FILE_SYSTEM_ERRNOS:
            raise
        fail(InputError(exc.strerror or str(exc), path=exc.filename))


def argument_text(value: str | None, option: str) -> str | None:
    """An option's text, the one convention of every command that takes a context, question or response:
    ``@FILE`` reads the file (UTF-8), anything else is the text itself."""
    if value is None or not value.startswith("@"):
        return value
    from ragtruth_spans.core.jsonl import read_text

    try:
        return read_text(value[1:])
    except InputError as exc:
        raise InputError(exc.message, path=exc.path, line=exc.line, field=option) from None


def note(message: str) -> None:
    """A one-line note to stderr (an ``INFO`` record: not with ``--quiet``), control characters escaped."""
    logger.info(message)


def evidence_finder(evidence: bool, mode: str, device: str | None = None) -> Any:
    """The :class:`~ragtruth_spans.evidence.EvidenceFinder` of ``--evidence``/``--evidence-mode``, or
    None without ``--evidence``."""
    from ragtruth_spans.evidence import MODES, EvidenceFinder

    check_choice(mode, MODES, "evidence mode", field="--evidence-mode")
    return EvidenceFinder(mode, device=device) if evidence else None


def data_inputs(flag: str, path: Any) -> list[tuple[str, Any]]:
    """The input files behind ``flag`` for the output policy (``check_output_path``'s ``inputs``): a RAGTruth
    folder stands for its ``response.jsonl`` and ``source_info.jsonl``, anything else for itself."""
    from pathlib import Path

    if path is not None and Path(path).is_dir():
        from ragtruth_spans.data.ragtruth import resolve_files

        try:
            return [(flag, file) for file in resolve_files(path)]
        except InputError:
            return []  # not a RAGTruth folder: reading it fails with its own message
    return [(flag, path)]


DEFAULT_BOOTSTRAP = 1000
"""The bootstrap resamples of every command that scores (evaluate, report, benchmark, select): 95% intervals by
default; ``--bootstrap 0`` for none (= ``ragtruth_spans.pipeline.benchmark.DEFAULT_BOOTSTRAP``, kept equal by a
test: the CLI starts without the pipeline)."""


def bootstrap_option() -> Any:
    """``--bootstrap``: one default and one help for every command that scores."""
    return typer.Option(DEFAULT_BOOTSTRAP, "--bootstrap", min=0, help="Bootstrap resamples for the 95% confidence "
                        "intervals (0: none).")


def data_alias_option() -> Any:
    """``--data``: the old name of ``--gold`` in ``benchmark`` and ``select``, hidden, kept for one release."""
    return typer.Option(None, "--data", hidden=True, help="Deprecated: the old name of --gold.")


def gold_path(gold: Any, data: Any) -> Any:
    """The gold file of ``--gold``, or of its deprecated alias ``--data`` (with a note); both, or neither, is an
    :class:`InputError`."""
    if gold is not None and data is not None:
        raise InputError("--data is the old name of --gold: give one", field="--data")
    if gold is None and data is None:
        raise InputError("missing: give the labelled file with --gold", field="--gold")
    if data is not None:
        note("--data is deprecated here: use --gold (the same file); --data goes in the next release")
    return gold if gold is not None else data


# --- the one set of load options (predict, detect, serve, select-best, benchmark) -------------------------------

DETECTOR_NAMES = "{detector names}"
"""Stands in a help text for the names of the detectors built by name; :class:`DetectorCommand` fills it in from
the loader's registry when the help is shown (the registry imports every family: too slow for every start)."""


def detector_names() -> str:
    """``default, absent-words, flag-all, ...``: the shipped detector's name, then every name the loader's
    registry builds (:func:`~ragtruth_spans.detectors.family.named_detectors`)."""
    from ragtruth_spans.detectors.family import named_detectors
    from ragtruth_spans.detectors.shipped import DEFAULT_NAME

    return ", ".join([DEFAULT_NAME, *sorted(named_detectors())])


class DetectorCommand(TyperCommand):
    """A command that loads a detector: its help lists the registry's detector names (:data:`DETECTOR_NAMES`)."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        for param in self.params:
            if DETECTOR_NAMES in (getattr(param, "help", None) or ""):
                param.help = param.help.replace(DETECTOR_NAMES, detector_names())
        super().format_help(ctx, formatter)


def model_option() -> Any:
    """``--model``: optional; left out (or ``default``), the detector shipped with the package."""
    return typer.Option(None, "--model", help=f"A run directory written by `train` (or a judge directory: "
                        f"docs/JUDGE.md), or a detector name ({DETECTOR_NAMES}). Default: the detector shipped "
                        "with the package (`default`; docs/MODEL_CARD.md).")


def resolve_model(model: str | None) -> str:
    """The ``--model`` value commands load: the shipped detector's run directory for None or ``default`` (unless
    a directory of that name exists), anything else as given."""
    from ragtruth_spans.detectors.shipped import resolve_detector

    return str(resolve_detector(model))


def model_label(model: str | None) -> str:
    """How messages name ``--model``: ``the shipped detector (default)``, or the value given."""
    from ragtruth_spans.detectors.shipped import is_default

    return "the shipped detector (default)" if is_default(model) else str(model)


@dataclass(frozen=True)
class LoadFlags:
    """The load flags as given on the command line (unset ones None): what a :func:`detector_command` receives as
    its ``load`` parameter. :meth:`options` turns them into the one options model."""

    device: str | None = None
    batch_size: int | None = None
    threshold: float | None = None
    backend: str | None = None
    max_new_tokens: int | None = None
    load_in_4bit: bool | None = None
    aggregation: str | None = None
    runtime: str | None = None
    option: list[str] | None = None

    def options(self) -> Any:
        """The :class:`~ragtruth_spans.detectors.options.DetectorOptions` of these flags and the ``--option``
        items; a bad value, a key given twice, or given both as a flag and as ``--option``, is an
        :class:`InputError` (an option the detector's family does not take is refused when it loads)."""
        from ragtruth_spans.cli.device import check_device
        from ragtruth_spans.detectors.options import DetectorOptions

        check_device(self.device)
        flags = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "option"}
        return DetectorOptions.from_command_line(flags, self.option)


LOAD_FLAG_OPTIONS: dict[str, tuple[Any, Any]] = {
    "device": (Optional[str], typer.Option(None, "--device", help="torch device: cpu, cuda, cuda:1 ... (default: "
                                           "cuda if available).")),
    "batch_size": (Optional[int], typer.Option(None, "--batch-size", min=1, help=BATCH_SIZE_HELP)),
    "threshold": (Optional[float], typer.Option(
        None, "--threshold", help="The operating point, in (0, 1): the probability at or above which a token (token "
        "classification), a sentence (two-tier), a word (stacked: one threshold for every task) or a sentence score "
        "(similarity with one threshold) is flagged (default: the run's tuned one).")),
    "backend": (Optional[str], typer.Option(None, "--backend", help="Generative runs: hf (transformers, CPU/GPU; "
                                            "default) or vllm (optional, GPU).")),
    "max_new_tokens": (Optional[int], typer.Option(None, "--max-new-tokens", min=1, help="Generative runs: "
                                                   "generation budget per response.")),
    "load_in_4bit": (Optional[bool], typer.Option(None, "--load-in-4bit/--no-load-in-4bit", help="Override the "
                                                  "recipe's 4-bit quantization of the base model.")),
    "aggregation": (Optional[str], typer.Option(
        None, "--aggregation", help="Token-classification runs: how a token's probabilities from several context "
        "windows combine (mean, max, min, best, by-type; default: the run's).")),
    "runtime": (Optional[str], typer.Option(
        None, "--runtime", help="Where the detector's transformer runs. Stacked detectors, their sentence encoder: "
        "auto (the features the detector was built on: ONNX Runtime when installed), onnx-fp32, onnx-int8 "
        "(quantized) or torch; features other than the build's are logged as such (docs/INFERENCE.md). Entailment "
        "runs, their NLI model: torch (default), onnx-fp32 or onnx-int8 (docs/ENTAILMENT.md).")),
    "option": (Optional[list[str]], typer.Option(
        None, "--option", help="Detector option KEY=VALUE (repeatable; the value is YAML; a dotted key sets a nested "
        "one; a key given twice is refused), e.g. for llm-judge: --option base_url=http://127.0.0.1:8000/v1 "
        "--option model=NAME --option mode=claims. See docs/JUDGE.md.")),
}
"""The one declaration of the load flags: ``{parameter: (type, typer option)}``, in the order of the help."""


def with_load_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` with its ``load: LoadFlags`` parameter replaced, in the command line, by the load flags of
    :data:`LOAD_FLAG_OPTIONS` (at the same place in the help), which reach it gathered as one :class:`LoadFlags`."""
    hints = typing.get_type_hints(command)
    signature = inspect.signature(command)
    parameters = []
    for parameter in signature.parameters.values():
        if parameter.name == "load":
            parameters += [inspect.Parameter(name, parameter.kind, default=option, annotation=kind)
                           for name, (kind, option) in LOAD_FLAG_OPTIONS.items()]
        else:
            parameters.append(parameter.replace(annotation=hints.get(parameter.name, parameter.annotation)))

    @functools.wraps(command)
    def run(**kwargs: Any) -> Any:
        load = LoadFlags(**{name: kwargs.pop(name) for name in LOAD_FLAG_OPTIONS})
        return command(**kwargs, load=load)

    run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": hints.get("return")}
    return run


def detector_command(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@app.command(name)`` for a command that loads a detector: the load flags from :func:`with_load_flags`,
    the detector names in its help from the registry (:class:`DetectorCommand`)."""
    def register(command: Callable[..., Any]) -> Callable[..., Any]:
        app.command(name, cls=DetectorCommand)(with_load_flags(command))
        return command

    return register
