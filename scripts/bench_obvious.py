"""Obvious hallucinations a detector must catch: a crafted suite of unambiguous single edits, and their clean twins.

Usage::

    python scripts/bench_obvious.py --model RUN_DIR_OR_NAME [--option KEY=VALUE ...] [--data CASES.jsonl]
                                    [--out RESULT.json] [--cases] [--require-catch-rate 0.9]
                                    [--max-false-alarm-rate 0.2]

The cases (default: ``scripts/obvious_cases.jsonl``, next to this script) are one JSON object a line: ``id``,
``kind`` (year, percent, count, name-new, name-swap, negation-added, negation-removed, antonym), ``task``,
``context``, ``question`` (QA; else null), ``response``, ``spans`` (``[{start, end, type}]``, half-open character
offsets of the response; ``[]`` for a clean twin), and optionally ``original`` (the faithful text the span replaced)
and ``twin`` (the id of the other case of the pair). Each edited response copies or paraphrases its context except
for one injected error; its clean twin is the same response without it.

Per kind (then per task and overall) it prints: **caught** (an edited case whose gold span overlaps a predicted
span), **missed**, **false alarms** (a clean twin with any predicted span), **response accuracy** (edited cases
with any span plus clean cases with none, over all cases), the mean response score (``Detection.score``) of edited
and of clean cases, and, where the detector exposes word probabilities (the stacked family), the mean of the
highest probability among the words of the changed text; **pair order**: over the edited cases whose ``twin`` is
in the file, the share whose response score is above their clean twin's (ties count half: the AUROC within pairs,
what best-of-2 selection by score would get right). Cases the detector could not judge (``Detection.error``) are
counted as ``errors`` and have no spans; ``--cases`` prints every case's outcome too. ``--out`` writes all of it,
every case's outcome included, as JSON with the detector's description and the cases file's SHA-256.

Exit status: 0, unless ``--require-catch-rate`` or ``--max-false-alarm-rate`` is given and not met (1, with one
line saying which), or the input is bad (2, one line naming file, line and field).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

DEFAULT_DATA = Path(__file__).resolve().with_name("obvious_cases.jsonl")
KINDS = ("year", "percent", "count", "name-new", "name-swap", "negation-added", "negation-removed", "antonym")


class GoldSpan(BaseModel):
    """The characters ``[start, end)`` of the response that the injected error changed."""

    model_config = ConfigDict(extra="forbid", strict=True)
    start: int
    end: int
    type: str = "Evident Conflict"


class Case(BaseModel):
    """One case of the suite (see the module docstring); offsets are checked against the response."""

    model_config = ConfigDict(extra="forbid", strict=True)
    id: str
    kind: str
    task: Literal["QA", "Summary", "Data2txt"]
    context: str
    question: str | None
    response: str
    spans: list[GoldSpan]
    original: str | None = None
    twin: str | None = None

    @property
    def edited(self) -> bool:
        return bool(self.spans)

    def problem(self) -> tuple[str, str] | None:
        """``(field, message)`` of the first inconsistency (a span outside the response, a question that does not
        fit the task), or None."""
        for i, span in enumerate(self.spans):
            if not 0 <= span.start < span.end <= len(self.response):
                return (f"spans[{i}]", f"[{span.start}, {span.end}) is not inside the response "
                        f"({len(self.response)} characters)")
        if (self.task == "QA") != (self.question is not None):
            return "question", "must be a string for QA and null otherwise"
        return None


def read_cases(path: Path) -> list[Case]:
    """The cases of ``path``; a bad line raises :class:`InputError` naming the file, the line and the field."""
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.core.jsonl import iter_jsonl

    cases, seen = [], set()
    for line, row in iter_jsonl(path):
        try:
            case = Case.model_validate(row)
        except ValidationError as exc:
            error = exc.errors()[0]
            field = ".".join(str(part) for part in error["loc"]) or None
            raise InputError(error["msg"], path=path, line=line, field=field) from None
        problem = case.problem()
        if problem is not None:
            raise InputError(problem[1], path=path, line=line, field=problem[0])
        if case.id in seen:
            raise InputError(f"duplicate id {case.id!r}", path=path, line=line, field="id")
        seen.add(case.id)
        cases.append(case)
    if not cases:
        raise InputError("no cases", path=path)
    return cases


def _overlaps(gold: Sequence[GoldSpan], predicted: Sequence[Any]) -> bool:
    return any(g.start < p.end and p.start < g.end for g in gold for p in predicted)


def word_scores(detector: Any, items: Sequence[Any], cases: Sequence[Case]) -> list[float | None] | None:
    """Per case, the highest word probability among the words overlapping its gold spans (None for a clean case);
    None when the detector does not expose word probabilities (only the stacked family's ``builder`` and
    ``probabilities`` are read, nothing is changed)."""
    builder, probabilities = getattr(detector, "builder", None), getattr(detector, "probabilities", None)
    if builder is None or not callable(probabilities):
        return None
    out: list[float | None] = []
    step = max(1, int(getattr(detector, "preferred_chunk_size", 64)))
    for at in range(0, len(items), step):
        columns = builder.build(items[at:at + step])
        for case, cols, probs in zip(cases[at:at + step], columns, probabilities(columns)):
            hits = [float(p) for (start, end), p in zip(cols.words, probs)
                    if any(g.start < end and start < g.end for g in case.spans)]
            out.append(round(max(hits), 6) if hits else None)
    return out


def detect_all(detector: Any, cases: Sequence[Case]) -> list[dict[str, Any]]:
    """Every case's outcome: predicted spans, response score, error, caught / flagged, word score."""
    from ragtruth_spans.detectors.base import DetectItem

    items = [DetectItem.of({"context": c.context, "response": c.response, "task": c.task, "question": c.question})
             for c in cases]  # the shared text checks (no lone surrogates): InputError naming the field
    step = max(1, int(getattr(detector, "preferred_chunk_size", 64)))
    detections = [d for at in range(0, len(items), step) for d in detector.detect_batch(items[at:at + step])]
    words = word_scores(detector, items, cases)
    outcomes = []
    for i, (case, det) in enumerate(zip(cases, detections)):
        outcomes.append({
            "id": case.id, "kind": case.kind, "task": case.task, "edited": case.edited,
            "gold": [[g.start, g.end] for g in case.spans],
            "gold_text": [case.response[g.start:g.end] for g in case.spans],
            "predicted": [[s.start, s.end] for s in det.spans],
            "predicted_text": [case.response[s.start:s.end] for s in det.spans],
            "flagged": bool(det.spans), "caught": case.edited and _overlaps(case.spans, det.spans),
            "score": det.score, "error": det.error,
            "word_score": words[i] if words is not None else None})
    scores = {o["id"]: o["score"] for o in outcomes}
    for case, outcome in zip(cases, outcomes):
        if case.edited:
            outcome["twin_score"] = scores.get(case.twin) if case.twin is not None else None
    return outcomes


def _pair_order(edited: Sequence[dict[str, Any]]) -> float | None:
    pairs = [(o["score"], o["twin_score"]) for o in edited
             if o["score"] is not None and o.get("twin_score") is not None]
    if not pairs:
        return None
    return round(sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs) / len(pairs), 4)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(fmean(present), 4) if present else None


def summarise(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a group of outcomes (see the module docstring)."""
    edited = [o for o in outcomes if o["edited"]]
    clean = [o for o in outcomes if not o["edited"]]
    caught = sum(o["caught"] for o in edited)
    alarms = sum(o["flagged"] for o in clean)
    right = sum(o["flagged"] for o in edited) + len(clean) - alarms
    return {"edited": len(edited), "caught": caught, "missed": len(edited) - caught,
            "catch_rate": round(caught / len(edited), 4) if edited else None,
            "clean": len(clean), "false_alarms": alarms,
            "false_alarm_rate": round(alarms / len(clean), 4) if clean else None,
            "response_accuracy": round(right / len(outcomes), 4) if outcomes else None,
            "mean_score_edited": _mean([o["score"] for o in edited]),
            "mean_score_clean": _mean([o["score"] for o in clean]),
            "mean_word_score": _mean([o["word_score"] for o in edited]), "pair_order": _pair_order(edited),
            "errors": sum(o["error"] is not None for o in outcomes)}


def grouped(outcomes: Sequence[dict[str, Any]], key: str, order: Sequence[str]) -> dict[str, dict[str, Any]]:
    """:func:`summarise` per value of ``key``, known values in ``order`` first, others after, sorted."""
    values = [v for v in order if any(o[key] == v for o in outcomes)]
    values += sorted({o[key] for o in outcomes} - set(values))
    return {v: summarise([o for o in outcomes if o[key] == v]) for v in values}


def bench(model: str, data: Path = DEFAULT_DATA, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Load ``model`` with ``load_detector``, detect every case of ``data``; the JSON-ready result."""
    from ragtruth_spans.core.jsonl import file_sha256
    from ragtruth_spans.core.types import TASK_TYPES
    from ragtruth_spans.detectors.loader import load_detector

    cases = read_cases(data)
    detector = load_detector(model, **(options or {}))
    outcomes = detect_all(detector, cases)
    return {"model": str(model), "detector": detector.describe(), "data": str(data),
            "data_sha256": file_sha256(data), "overall": summarise(outcomes),
            "by_kind": grouped(outcomes, "kind", KINDS), "by_task": grouped(outcomes, "task", TASK_TYPES),
            "cases": outcomes}


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def render(result: dict[str, Any], print_: Callable[[Any], None]) -> None:
    """The result as one rich table: a row per kind, per task, and overall."""
    from rich.table import Table

    table = Table(title=f"Obvious cases: {result['model']} ({result['overall']['edited']} edited, "
                        f"{result['overall']['clean']} clean)")
    columns = ("caught", "missed", "false_alarms", "response_accuracy", "mean_score_edited", "mean_score_clean",
               "mean_word_score", "pair_order", "errors")
    table.add_column("kind / task")
    for name in columns:
        table.add_column(name.replace("_", " "), justify="right")
    for section in ("by_kind", "by_task"):
        for name, row in result[section].items():
            cells = [f"{row['caught']}/{row['edited']}", *(_fmt(row[c]) for c in columns[1:])]
            cells[2] = f"{row['false_alarms']}/{row['clean']}"
            table.add_row(name, *cells, end_section=name == list(result[section])[-1])
    row = result["overall"]
    cells = [f"{row['caught']}/{row['edited']}", *(_fmt(row[c]) for c in columns[1:])]
    cells[2] = f"{row['false_alarms']}/{row['clean']}"
    table.add_row("all", *cells, style="bold")
    print_(table)


def render_cases(result: dict[str, Any], print_: Callable[[Any], None]) -> None:
    """Every case as a row: its gold text, what the detector flagged, the response and word scores."""
    from rich.table import Table

    table = Table(title="Cases (✓ caught, ✗ missed or false alarm)")
    for name in ("id", "gold", "flagged", "score", "word score"):
        table.add_column(name, justify="right" if "score" in name else "left", overflow="fold")
    for case in result["cases"]:
        bad = (case["edited"] and not case["caught"]) or (not case["edited"] and case["flagged"])
        flagged = " | ".join(case["predicted_text"]) or ("(error)" if case["error"] else "")
        table.add_row(f"{'✗' if bad else '✓'} {case['id']}", " | ".join(case["gold_text"]), flagged,
                      _fmt(case["score"]), _fmt(case["word_score"]))
    print_(table)


def check_gates(overall: dict[str, Any], catch: float | None, alarms: float | None) -> str | None:
    """The one-line failure of the ``--require-catch-rate`` / ``--max-false-alarm-rate`` gates, or None."""
    if catch is not None and (overall["catch_rate"] or 0.0) < catch:
        return (f"catch rate {overall['catch_rate']} is below the required {catch} "
                f"({overall['caught']} of {overall['edited']} edited cases caught)")
    if alarms is not None and (overall["false_alarm_rate"] or 0.0) > alarms:
        return (f"false-alarm rate {overall['false_alarm_rate']} is above the allowed {alarms} "
                f"({overall['false_alarms']} of {overall['clean']} clean cases flagged)")
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, run, print, write ``--out``; the exit status (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a run directory or a detector name (numbers, flag-all, ...)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a detector option")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the cases (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="write the result here as JSON")
    parser.add_argument("--cases", action="store_true", help="also print every case's outcome")
    parser.add_argument("--require-catch-rate", type=float, metavar="X", help="exit 1 if fewer edited cases caught")
    parser.add_argument("--max-false-alarm-rate", type=float, metavar="Y", help="exit 1 if more clean cases flagged")
    args = parser.parse_args(argv)

    from ragtruth_spans.cli.common import parse_options
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.core.files import check_output_path, exclusive_output
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.logs import configure, make_console

    configure("normal")  # the libraries' warnings and progress bars off, as on the command line
    console = make_console()
    try:
        if args.out is not None:
            check_output_path(args.out, field="--out")
        result = bench(args.model, args.data, parse_options(args.option))
        if args.out is not None:
            with exclusive_output(args.out):
                write_json(args.out, result)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.cases:
        render_cases(result, console.print)
    render(result, console.print)
    if args.out is not None:
        console.print(f"wrote {args.out}", markup=False)
    failure = check_gates(result["overall"], args.require_catch_rate, args.max_false_alarm_rate)
    if failure is not None:
        print(failure, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
