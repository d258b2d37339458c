"""``ragtruth-spans detect``: ad-hoc detection with any detector, from arguments or JSON lines on stdin.

Input: ``--context/--question/--response`` (each text, or ``@FILE`` for a UTF-8 file's content), or, without them,
JSON lines on stdin, one ``{"context", "question"?, "response", "task", "id"?}`` per line. Output: one JSON line
per item on stdout, ``{"id"?, "spans": [{"start", "end", "type"?, "score"?, "text"}], "score", "error"?, ...}``
(offsets are characters of the response, half-open), or on a terminal a highlighted view. With ``--evidence``
each span also has ``verdict``, ``reason`` and ``evidence`` (passages as characters of the context:
docs/EVIDENCE.md). Every line of stdin is checked before any detection runs and before anything is printed —
bytes that are not UTF-8, bad JSON, an unknown key (a typo such as ``qestion``), a field of the wrong type, text
with a lone surrogate, a blank context or response (only whitespace or invisible characters:
:func:`~ragtruth_spans.core.fields.is_blank`) — and a bad line stops with one error naming ``<stdin>:LINE`` and the
field, exit 2. The view escapes control characters (no raw terminal escape sequences from a response or an id
reach the terminal).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any, Optional, TextIO

import typer

from ragtruth_spans.cli.common import (
    LoadFlags,
    argument_text,
    detector_command,
    evidence_finder,
    fail,
    model_option,
    out,
    resolve_model,
    user_errors,
)
from ragtruth_spans.core.errors import InputError, check_choice

STDIN = "<stdin>"
OUTPUTS = ("auto", "json", "view")
INPUT_KEYS = ("context", "question", "response", "task", "task_type", "id")
"""The keys of a stdin line (``task_type``: the prepared files' name for ``task``); any other key is refused."""


def _decode(raw: str | bytes, source: str, lineno: int) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not valid UTF-8 (byte {exc.start + 1} of the line)", path=source, line=lineno) from None


def read_items(lines: Iterable[str | bytes], source: str = STDIN) -> list[tuple[Any, Any]]:
    """``[(id or None, DetectItem)]`` from JSON lines (bytes are decoded as strict UTF-8; blank lines skipped); a
    bad line (see the module docstring) raises :class:`InputError` naming ``source``, the 1-based line and the
    field."""
    from ragtruth_spans.core.fields import check_id
    from ragtruth_spans.core.jsonl import parse_json_object
    from ragtruth_spans.detectors.base import DetectItem

    items = []
    for lineno, raw_line in enumerate(lines, start=1):
        raw = _decode(raw_line, source, lineno)
        if not raw.strip():
            continue
        obj = parse_json_object(raw, source, lineno)
        unknown = [key for key in obj if key not in INPUT_KEYS]
        if unknown:
            raise InputError(f"unknown field (expected {', '.join(INPUT_KEYS)})", path=source, line=lineno,
                             field=unknown[0][:60])
        item_id = check_id(obj.get("id"), path=source, line=lineno, optional=True)
        try:
            items.append((item_id, DetectItem.of(obj)))
        except InputError as exc:
            raise InputError(exc.message, path=source, line=lineno, field=exc.field) from None
    if not items:
        raise InputError("no input: give --context and --response, or JSON lines on stdin", path=source)
    return items


def output_row(item_id: Any, response: str, detection: Any) -> dict[str, Any]:
    """One output line: ``id`` (when the input had one), then the detection with each span's ``text``."""
    row = ({"id": item_id} if item_id is not None else {}) | detection.to_dict()
    row["spans"] = [s | {"text": response[s["start"]:s["end"]]} for s in row["spans"]]
    return row


def _argument_item(context: str | None, question: str | None, response: str | None, task: str | None) -> Any:
    from ragtruth_spans.core.fields import check_text
    from ragtruth_spans.core.types import TASK_TYPES
    from ragtruth_spans.detectors.base import DetectItem, quick_task

    context, question = argument_text(context, "--context"), argument_text(question, "--question")
    response = argument_text(response, "--response")
    for value, option in ((context, "--context"), (response, "--response")):
        if value is None:
            raise InputError("missing: give --context and --response (or JSON lines on stdin)", field=option)
    task = quick_task(task, question)
    check_choice(task, TASK_TYPES, "task", field="--task")
    for value, option in ((context, "--context"), (response, "--response"), (question, "--question")):
        # undecodable argument bytes arrive as lone surrogates; a blank context or response is refused
        check_text(value, field=option, optional=True, nonempty=option != "--question")
    return DetectItem(context=context, response=response, task=task, question=question)


def _write(rows: list[tuple[dict[str, Any], str]], view: bool, stream: TextIO) -> None:
    if view:
        from ragtruth_spans.reporting.console import detection_view

        for row, response in rows:
            out.print(detection_view(response, row, title=None if row.get("id") is None else f"id {row['id']}"),
                      highlight=False)
        return
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row, _ in rows)
    binary = getattr(stream, "buffer", None)
    stream.flush()
    if binary is not None:  # JSON lines are UTF-8 whatever the locale's encoding of stdout
        binary.write(text.encode("utf-8"))
        binary.flush()
    else:
        stream.write(text)
        stream.flush()


@detector_command("detect")
def detect_command(
    model: Optional[str] = model_option(),
    context: Optional[str] = typer.Option(None, "--context", help="The context (passages, article or data), or "
                                          "@FILE."),
    question: Optional[str] = typer.Option(None, "--question", help="The question (QA), or @FILE."),
    response: Optional[str] = typer.Option(None, "--response", help="The response to check, or @FILE."),
    task: Optional[str] = typer.Option(None, "--task", help="QA, Summary or Data2txt (default: QA with a "
                                       "--question, else Summary)."),
    output: str = typer.Option("auto", "--output", help="auto (a highlighted view on a terminal, JSON lines "
                               "otherwise) | json | view."),
    chunk_size: int = typer.Option(32, "--chunk-size", min=1, help="Stdin items per detect_batch call."),
    load: LoadFlags = LoadFlags(),
    evidence: bool = typer.Option(False, "--evidence", help="Add each span's evidence: the context passages "
                                  "about its claim and a verdict (contradicted, unsupported, uncertain)."),
    evidence_mode: str = typer.Option("lexical", "--evidence-mode", help="lexical (no model, fast) or encoder "
                                      "(all-MiniLM-L6-v2 relevance) for --evidence."),
) -> None:
    """Detect hallucinated spans in responses given as arguments or as JSON lines on stdin; print JSON lines (or
    a highlighted view on a terminal). Exit status 0, or 2 for bad input."""
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.stacked.combiner import import_lightgbm_alone

    import_lightgbm_alone()  # this process only predicts: a second off a cold start
    with user_errors():
        check_choice(output, OUTPUTS, "output", field="--output")
        finder = evidence_finder(evidence, evidence_mode, load.device)
        if any(v is not None for v in (context, question, response)):
            items = [(None, _argument_item(context, question, response, task))]
        elif sys.stdin is None or sys.stdin.isatty():
            raise InputError("no input: give --context and --response, or pipe JSON lines into stdin")
        else:
            items = read_items(getattr(sys.stdin, "buffer", sys.stdin))  # bytes: decoded strictly, line by line
        try:
            detector = load_detector(resolve_model(model), **load.options().load_kwargs())
        except OSError as exc:
            fail(exc)
        view = output == "view" or (output == "auto" and out.is_terminal)
        for start in range(0, len(items), chunk_size):
            chunk = items[start:start + chunk_size]
            detections = detector.detect_batch([item for _, item in chunk])
            if finder is not None:
                detections = finder.attach_batch([item for _, item in chunk], detections)
            _write([(output_row(item_id, item.response, d), item.response) for (item_id, item), d
                    in zip(chunk, detections)], view, sys.stdout)
