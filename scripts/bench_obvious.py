"""Obvious hallucinations a detector must catch: a crafted suite of unambiguous single edits, and faithful answers.

Usage::

    python scripts/bench_obvious.py --model RUN_DIR_OR_NAME [--option KEY=VALUE ...] [--data CASES.jsonl]
                                    [--out RESULT.json] [--cases] [--baselines] [--breakdown]
                                    [--require-catch-rate 0.9] [--max-false-alarm-rate 0.2]

The cases (default: ``tests/fixtures/obvious_cases.jsonl``, which the tests check for soundness) are one JSON object
a line: ``id``, ``kind`` (see :data:`EDITED_KINDS` and :data:`FAITHFUL_KINDS`; a ``faithful-*`` kind has no span),
``task``, ``context``, ``question`` (QA; else null), ``response``, ``spans`` (``[{start, end, type}]``, half-open
character offsets of the response, ``type`` one of RAGTruth's four; ``[]`` for a faithful case), optionally
``original`` (the faithful text the span replaced, ``""`` for an insertion), ``twin`` (the id of the faithful case an
edit was made from, or of the edited case of an old pair) and ``group`` (the id of the context and question the case
shares with others). A group holds one context (and question), faithful responses (copied, compressed, paraphrased,
numbers and dates reformatted, JSON fields in words) and edited variants, each faithful except for **one** injected
error. Read strictly: a bad line is one error naming the file, the line and the field (exit 2), and an edited case
whose twin is in the file must be that twin's response with ``original`` in place of its span (for an insertion, less
one adjoining space).

Per kind, per task, per context length (``short``: at most 40 words, ``medium``: at most 250, ``long``, and
``structured``: a JSON object) and overall it prints: **caught** (an edited case whose gold span overlaps a
predicted span) and the catch rate, **false alarms** (a faithful case with any predicted span) and their rate,
**response accuracy** (edited cases with any span plus faithful cases with none, over all cases), the mean
response score (``Detection.score``) of edited and of faithful cases, and, where the detector exposes word
probabilities (the stacked family), the mean of the highest probability among the words of the changed text;
**pair order**: over the edited cases whose ``twin`` is in the file, the share whose response score is above
their twin's (ties count half: the AUROC within pairs, what best-of-2 selection by score would get right); and,
overall, 95 % intervals of the catch rate, false-alarm rate and pair order from 1,000 resamples of the contexts
(a context's cases are not independent). Cases
the detector could not judge (``Detection.error``) are counted as ``errors`` and have no spans. ``--baselines``
runs the rule references (``numbers``, ``flag-all``, ``absent-words``) on the same cases and prints the catch and
false-alarm rates beside the model's; ``--breakdown`` prints the per-kind rates per task and per context length;
``--cases`` prints every case's outcome. ``--out`` writes all of it, every case's outcome included, as JSON with
the detectors' descriptions and the cases file's SHA-256. ``--check`` (no ``--model``) only validates the cases
and prints how many edited and faithful cases each kind, task and context length holds.

Exit status: 0, unless ``--require-catch-rate`` or ``--max-false-alarm-rate`` is given and not met (1, with one
line saying which), or the input is bad (2, one line naming file, line and field).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import fmean
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

DEFAULT_DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "obvious_cases.jsonl"
EDITED_KINDS = (
    "year", "date", "percent", "count", "unit", "quantity-word",  # a changed number, date, unit or quantity word
    "name-new", "name-swap",  # a name, place or organisation: a new one, or another that the context holds
    "negation-added", "negation-removed", "antonym", "comparison",  # reversed meaning, finding, comparison, trend
    "added-clause", "added-sentence", "added-attribution", "added-figure", "added-recommendation",  # baseless
    "json-wrong", "json-invented")  # a JSON record's field rendered wrong, or a field it does not have
"""The kinds of injected error, in report order (``year`` … ``antonym``: the first suite's eight)."""
FAITHFUL_KINDS = (
    "faithful-copy", "faithful-compression", "faithful-paraphrase", "faithful-reorder", "faithful-number-format",
    "faithful-units", "faithful-date-format", "faithful-negated-negative", "faithful-json-words")
"""The kinds of faithful response (no span), in report order."""
KINDS = EDITED_KINDS + FAITHFUL_KINDS
LENGTHS = ("short", "medium", "long", "structured")
SHORT_MAX_WORDS, MEDIUM_MAX_WORDS = 40, 250
"""Context length buckets, in whitespace-separated words (a JSON object context is ``structured``)."""
BASELINES = ("numbers", "flag-all", "absent-words")
SpanType = Literal["Evident Conflict", "Subtle Conflict", "Evident Baseless Info", "Subtle Baseless Info"]


class GoldSpan(BaseModel):
    """The characters ``[start, end)`` of the response that the injected error changed or added."""

    model_config = ConfigDict(extra="forbid", strict=True)
    start: int
    end: int
    type: SpanType = "Evident Conflict"


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
    group: str | None = None

    @property
    def edited(self) -> bool:
        return bool(self.spans)

    def problem(self) -> tuple[str, str] | None:
        """``(field, message)`` of the first inconsistency (a span outside the response, a faithful kind with a
        span, an ``original`` without a span, a question that does not fit the task), or None."""
        if not self.id.strip() or not self.kind.strip():
            return ("id" if not self.id.strip() else "kind"), "must not be empty"
        for i, span in enumerate(self.spans):
            if not 0 <= span.start < span.end <= len(self.response):
                return (f"spans[{i}]", f"[{span.start}, {span.end}) is not inside the response "
                        f"({len(self.response)} characters)")
        if self.kind.startswith("faithful") and self.spans:
            return "spans", f"a {self.kind} case has no span"
        if self.original is not None and len(self.spans) != 1:
            return "original", "is the faithful text of exactly one span (a case with one span)"
        if (self.task == "QA") != (self.question is not None):
            return "question", "must be a string for QA and null otherwise"
        if self.twin == self.id:
            return "twin", "is the case itself"
        return None

    def restores(self, faithful: str) -> bool:
        """Whether ``faithful`` is this response with ``original`` in place of its one span (for an insertion,
        ``original == ""``, less one space on either side of the span)."""
        (span,) = self.spans
        text, original = self.response, self.original or ""
        if text[:span.start] + original + text[span.end:] == faithful:
            return True
        if original:
            return False
        before = span.start > 0 and text[span.start - 1].isspace()
        after = span.end < len(text) and text[span.end].isspace()
        return ((before and text[:span.start - 1] + text[span.end:] == faithful)
                or (after and text[:span.start] + text[span.end + 1:] == faithful))


def _twin_problem(case: Case, twin: Case) -> tuple[str, str] | None:
    """``(field, message)`` where ``case`` does not fit its ``twin`` (another context, question, task or group;
    an edit that is not the twin's response with one span changed), or None."""
    for name in ("task", "context", "question"):
        if getattr(case, name) != getattr(twin, name):
            return name, f"differs from its twin {twin.id!r}'s"
    if case.group is not None and twin.group is not None and case.group != twin.group:
        return "group", f"differs from its twin {twin.id!r}'s"
    if case.edited and not twin.edited and case.original is not None and not case.restores(twin.response):
        return "original", (f"put in place of spans[0] it does not give its twin {twin.id!r}'s response: the "
                            "edit must change only the span")
    return None


def length_bucket(context: str) -> str:
    """``structured`` for a JSON object, else ``short`` / ``medium`` / ``long`` by whitespace-separated words."""
    if context.lstrip().startswith("{"):
        try:
            if isinstance(json.loads(context), dict):
                return "structured"
        except ValueError:
            pass
    words = len(context.split())
    return "short" if words <= SHORT_MAX_WORDS else "medium" if words <= MEDIUM_MAX_WORDS else "long"


def read_cases(path: Path) -> list[Case]:
    """The cases of ``path``; a bad line raises :class:`InputError` naming the file, the line and the field."""
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.core.jsonl import iter_jsonl

    cases: dict[str, tuple[int, Case]] = {}
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
        if case.id in cases:
            raise InputError(f"duplicate id {case.id!r}", path=path, line=line, field="id")
        cases[case.id] = (line, case)
    if not cases:
        raise InputError("no cases", path=path)
    for line, case in cases.values():
        twin = cases.get(case.twin) if case.twin is not None else None
        problem = _twin_problem(case, twin[1]) if twin is not None else None
        if problem is not None:
            raise InputError(problem[1], path=path, line=line, field=problem[0])
    return [case for _, case in cases.values()]


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
            "id": case.id, "kind": case.kind, "task": case.task, "group": case.group,
            "length": length_bucket(case.context), "edited": case.edited,
            "gold": [[g.start, g.end] for g in case.spans], "gold_type": [g.type for g in case.spans],
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


def intervals(outcomes: Sequence[dict[str, Any]], resamples: int = 1000, seed: int = 0
              ) -> dict[str, list[float] | None]:
    """95 % percentile intervals of the catch rate, the false-alarm rate and the pair order over ``resamples``
    resamples of the case groups (a context and its cases: cases of one context are not independent), with the
    evaluator's seeded resampling (:mod:`ragtruth_spans.evaluation.bootstrap`)."""
    import numpy as np

    from ragtruth_spans.evaluation.bootstrap import bootstrap_sums, percentile_interval

    groups: dict[str, list[dict[str, Any]]] = {}
    for o in outcomes:
        groups.setdefault(o["group"] or o["id"], []).append(o)
    rows = []  # per group: edited, caught, faithful, flagged faithful, pairs, pair wins (ties half)
    for members in groups.values():
        pairs = [(o["score"], o["twin_score"]) for o in members if o["edited"] and o["score"] is not None
                 and o.get("twin_score") is not None]
        rows.append([sum(o["edited"] for o in members), sum(o["caught"] for o in members),
                     sum(not o["edited"] for o in members), sum(o["flagged"] and not o["edited"] for o in members),
                     len(pairs), sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs)])
    sums, _ = bootstrap_sums(np.asarray(rows, dtype=float), resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {name: percentile_interval(sums[:, num] / sums[:, den])
                for name, num, den in (("catch_rate", 1, 0), ("false_alarm_rate", 3, 2), ("pair_order", 5, 4))}


def grouped(outcomes: Sequence[dict[str, Any]], key: str, order: Sequence[str]) -> dict[str, dict[str, Any]]:
    """:func:`summarise` per value of ``key``, known values in ``order`` first, others after, sorted."""
    values = [v for v in order if any(o[key] == v for o in outcomes)]
    values += sorted({o[key] for o in outcomes} - set(values))
    return {v: summarise([o for o in outcomes if o[key] == v]) for v in values}


def tables(outcomes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every summary of ``outcomes``: overall, per kind, task and context length, and per kind within each task
    and each context length."""
    from ragtruth_spans.core.types import TASK_TYPES

    def within(key: str, order: Sequence[str]) -> dict[str, dict[str, dict[str, Any]]]:
        return {value: grouped([o for o in outcomes if o[key] == value], "kind", KINDS)
                for value in grouped(outcomes, key, order)}

    return {"overall": summarise(outcomes), "overall_intervals": intervals(outcomes),
            "by_kind": grouped(outcomes, "kind", KINDS),
            "by_task": grouped(outcomes, "task", TASK_TYPES), "by_length": grouped(outcomes, "length", LENGTHS),
            "by_task_kind": within("task", TASK_TYPES), "by_length_kind": within("length", LENGTHS)}


def bench(model: str, data: Path = DEFAULT_DATA, options: dict[str, Any] | None = None,
          baselines: bool = False) -> dict[str, Any]:
    """Load ``model`` with ``load_detector``, detect every case of ``data``; the JSON-ready result. With
    ``baselines``, the same tables (without the cases) for each of :data:`BASELINES` other than ``model``."""
    from ragtruth_spans.core.jsonl import file_sha256
    from ragtruth_spans.detectors.loader import load_detector

    cases = read_cases(data)
    detector = load_detector(model, **(options or {}))
    outcomes = detect_all(detector, cases)
    result = {"model": str(model), "detector": detector.describe(), "data": str(data),
              "data_sha256": file_sha256(data), **tables(outcomes), "cases": outcomes}
    if baselines:
        result["baselines"] = {}
        for name in BASELINES:
            if name != str(model):
                reference = load_detector(name)
                result["baselines"][name] = {"detector": reference.describe(),
                                             **tables(detect_all(reference, cases))}
    return result


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _rates(row: dict[str, Any]) -> str:
    """``catch rate / false-alarm rate`` of a summary, ``–`` where it has no edited or no faithful case."""
    return f"{_fmt(row['catch_rate'])} / {_fmt(row['false_alarm_rate'])}"


SECTIONS = (("by_kind", "kind"), ("by_task", "task"), ("by_length", "context"))


def render(result: dict[str, Any], print_: Callable[[Any], None]) -> None:
    """The result as one rich table: a row per kind, per task, per context length, and overall."""
    from rich.table import Table

    table = Table(title=f"Obvious cases: {result['model']} ({result['overall']['edited']} edited, "
                        f"{result['overall']['clean']} faithful)")
    columns = ("caught", "catch_rate", "false_alarms", "false_alarm_rate", "response_accuracy",
               "mean_score_edited", "mean_score_clean", "mean_word_score", "pair_order", "errors")
    table.add_column("kind / task / context")
    for name in columns:
        table.add_column(name.replace("_", " ").replace("clean", "faithful"), justify="right")

    def cells(row: dict[str, Any]) -> list[str]:
        out = [_fmt(row[c]) for c in columns]
        out[0], out[2] = f"{row['caught']}/{row['edited']}", f"{row['false_alarms']}/{row['clean']}"
        return out

    for section, _ in SECTIONS:
        for name, row in result[section].items():
            table.add_row(name, *cells(row), end_section=name == list(result[section])[-1])
    table.add_row("all", *cells(result["overall"]), style="bold")
    print_(table)
    ci = result.get("overall_intervals") or {}
    if ci:
        shown = {"catch rate": ci["catch_rate"], "false-alarm rate": ci["false_alarm_rate"],
                 "pair order": ci["pair_order"]}
        print_("95 % intervals, the contexts resampled: " + ", ".join(
            f"{name} [{v[0]:.3f}, {v[1]:.3f}]" for name, v in shown.items() if v is not None))


def render_baselines(result: dict[str, Any], print_: Callable[[Any], None]) -> None:
    """Catch rate / false-alarm rate of the model beside each baseline: a row per kind, task, context length."""
    from rich.table import Table

    references = result.get("baselines", {})
    table = Table(title="Catch rate / false-alarm rate beside the rule references (same cases)")
    table.add_column("kind / task / context")
    table.add_column("cases", justify="right")
    for name in (result["model"], *references):
        table.add_column(name, justify="right")
    for section, _ in SECTIONS:
        for name, row in result[section].items():
            table.add_row(name, f"{row['edited']}+{row['clean']}", _rates(row),
                          *(_rates(ref[section][name]) for ref in references.values()),
                          end_section=name == list(result[section])[-1])
    row = result["overall"]
    table.add_row("all", f"{row['edited']}+{row['clean']}", _rates(row),
                  *(_rates(ref["overall"]) for ref in references.values()), style="bold")
    print_(table)


def render_breakdown(result: dict[str, Any], print_: Callable[[Any], None]) -> None:
    """Catch rate / false-alarm rate per kind within each task and each context length (the model only)."""
    from rich.table import Table

    for section, what in (("by_task_kind", "task"), ("by_length_kind", "context")):
        columns = list(result[section])
        table = Table(title=f"{result['model']}: catch rate / false-alarm rate per kind and {what}")
        table.add_column("kind")
        for name in columns:
            table.add_column(name, justify="right")
        for kind in result["by_kind"]:
            table.add_row(kind, *(_rates(result[section][c][kind]) if kind in result[section][c] else ""
                                  for c in columns))
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


def census(cases: Sequence[Case]) -> dict[str, Any]:
    """What the suite holds: cases, edited and faithful, per kind, task and context length; groups, and the groups
    without a faithful case (which a suite should not have)."""
    def count(key: Callable[[Case], str], order: Sequence[str]) -> dict[str, dict[str, int]]:
        rows: dict[str, dict[str, int]] = {}
        for case in cases:
            row = rows.setdefault(key(case), {"edited": 0, "faithful": 0})
            row["edited" if case.edited else "faithful"] += 1
        return {k: rows[k] for k in [*[o for o in order if o in rows], *sorted(set(rows) - set(order))]}

    groups: dict[str, list[Case]] = {}
    for case in cases:
        groups.setdefault(case.group or case.id, []).append(case)
    return {"cases": len(cases), "edited": sum(c.edited for c in cases),
            "faithful": sum(not c.edited for c in cases), "groups": len(groups),
            "groups_without_faithful": sorted(g for g, members in groups.items() if all(c.edited for c in members)),
            "by_kind": count(lambda c: c.kind, KINDS),
            "by_task": count(lambda c: c.task, ("QA", "Summary", "Data2txt")),
            "by_length": count(lambda c: length_bucket(c.context), LENGTHS)}


def render_census(found: dict[str, Any], print_: Callable[[Any], None]) -> None:
    """The census as one rich table: edited and faithful cases per kind, task and context length."""
    from rich.table import Table

    table = Table(title=f"{found['cases']} cases ({found['edited']} edited, {found['faithful']} faithful) in "
                        f"{found['groups']} groups; groups without a faithful case: "
                        f"{', '.join(found['groups_without_faithful']) or 'none'}")
    for name in ("kind / task / context", "edited", "faithful"):
        table.add_column(name, justify="left" if name.startswith("kind") else "right")
    for section in ("by_kind", "by_task", "by_length"):
        for name, row in found[section].items():
            table.add_row(name, str(row["edited"]), str(row["faithful"]), end_section=name == list(found[section])[-1])
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
    parser.add_argument("--model", help="a run directory or a detector name (numbers, flag-all, ...)")
    parser.add_argument("--check", action="store_true", help="only validate the cases and print what they hold "
                                                              "(no detector)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a detector option")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the cases (default: %(default)s)")
    parser.add_argument("--out", type=Path, help="write the result here as JSON")
    parser.add_argument("--cases", action="store_true", help="also print every case's outcome")
    parser.add_argument("--baselines", action="store_true",
                        help=f"also run {', '.join(BASELINES)} on the same cases and print their rates beside")
    parser.add_argument("--breakdown", action="store_true", help="also print the rates per kind within each task "
                                                                 "and each context length")
    parser.add_argument("--require-catch-rate", type=float, metavar="X", help="exit 1 if fewer edited cases caught")
    parser.add_argument("--max-false-alarm-rate", type=float, metavar="Y", help="exit 1 if more clean cases flagged")
    args = parser.parse_args(argv)
    if args.model is None and not args.check:
        parser.error("--model is required (or --check)")

    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.core.files import check_output_path, exclusive_output
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.logs import configure, make_console
    from ragtruth_spans.detectors.options import DetectorOptions

    configure("normal")  # the libraries' warnings and progress bars off, as on the command line
    console = make_console()
    try:
        if args.check:
            render_census(census(read_cases(args.data)), console.print)
            return 0
        if args.out is not None:
            check_output_path(args.out, field="--out")
        options = DetectorOptions.from_items(args.option).load_kwargs()
        result = bench(args.model, args.data, options, baselines=args.baselines)
        if args.out is not None:
            with exclusive_output(args.out):
                write_json(args.out, result)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.cases:
        render_cases(result, console.print)
    render(result, console.print)
    if args.breakdown:
        render_breakdown(result, console.print)
    if args.baselines:
        render_baselines(result, console.print)
    if args.out is not None:
        console.print(f"wrote {args.out}", markup=False)
    failure = check_gates(result["overall"], args.require_catch_rate, args.max_false_alarm_rate)
    if failure is not None:
        print(failure, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
