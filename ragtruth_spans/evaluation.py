"""Score predicted hallucination spans against gold records (the ``ragtruth-spans evaluate`` command).

Predictions file (JSONL, one line per response; extra keys such as ``raw`` or ``parse_ok`` are ignored)::

    {"id": "...", "score": 0.97, "spans": [{"start": 0, "end": 5, "type": "Evident Conflict", "score": 0.9}]}

``start``/``end`` are character offsets of the response, half-open ``[start, end)``; ``type`` and the span
``score`` are optional. The optional line-level ``score`` is a response-level hallucination score (higher = more
likely hallucinated; ``ragtruth-spans predict`` writes ``1 - P(clean)``): when every line carries one, AUROC ranks
responses by it (:func:`read_response_scores`), else by their maximum span score.

The metric definitions live in :mod:`ragtruth_spans.metrics`; this module validates input, builds a per-response
count matrix, pools it overall / by task / by model, and bootstraps confidence intervals by resampling responses.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import metrics
from .schema import (HALLUCINATION_TYPES, TASK_TYPES, InputError, Record, Span, is_finite_number, iter_jsonl,
                     read_records)

CI_LEVEL = 0.95
_BASE_COLUMNS = ("gold_chars", "pred_chars", "overlap_chars", "gold_pos", "pred_pos", "both_pos",
                 "ent_tp", "ent_pred", "ent_gold")


# --- reading -----------------------------------------------------------------------------------------------

def _parse_span(obj: Any, *, path: Path, line: int, pid: str, index: int, length: int | None) -> Span:
    where = {"path": path, "line": line, "field": f"spans[{index}]"}
    if not isinstance(obj, dict):
        raise InputError(f"id {pid!r}: a span must be a JSON object, got {type(obj).__name__}", **where)
    for key in ("start", "end"):
        if key not in obj:
            raise InputError(f"id {pid!r}: missing required field", path=path, line=line,
                             field=f"spans[{index}].{key}")
        if not isinstance(obj[key], int) or isinstance(obj[key], bool):
            raise InputError(f"id {pid!r}: must be an integer, got {obj[key]!r}", path=path, line=line,
                             field=f"spans[{index}].{key}")
    span_type, score = obj.get("type"), obj.get("score")
    if span_type is not None and not isinstance(span_type, str):
        raise InputError(f"id {pid!r}: 'type' must be a string, got {span_type!r}", **where)
    if score is not None and not is_finite_number(score):
        raise InputError(f"id {pid!r}: 'score' must be a finite number, got {score!r}", **where)
    try:
        span = Span(start=obj["start"], end=obj["end"], type=span_type,
                    score=float(score) if score is not None else None)
    except ValueError as exc:
        raise InputError(f"id {pid!r}: {exc}", **where) from None
    if length is not None and span.end > length:
        raise InputError(f"id {pid!r}: span [{span.start}, {span.end}) is out of range for a response of "
                         f"{length} characters", **where)
    return span


@dataclass
class PredictionFile:
    """A predictions file read in one pass: ``spans`` per id; ``response_scores`` (``{id: score}`` of the
    line-level ``score``, or None unless every line carries one — a missing or null ``score`` anywhere means "use
    the span scores"); ``diagnostics``: counts of the optional keys that ``ragtruth-spans predict`` writes —
    ``parse_failures`` (``parse_ok`` false: the output could not be read, so the line has no spans although the
    detector did not say "clean"), ``too_long`` (not generated, the response did not fit the model's window),
    ``unaligned_spans`` (generated span texts not found in the response), ``scored_lines`` (lines with a non-null
    ``score``); lines without them count as 0."""

    spans: dict[str, list[Span]]
    response_scores: dict[str, float] | None
    diagnostics: dict[str, int]


def read_prediction_file(path: str | Path, gold_ids: Collection[str] | None = None, *,
                         response_lengths: Mapping[str, int] | None = None) -> PredictionFile:
    """Read and validate a predictions JSONL file (see :class:`PredictionFile`).

    With ``gold_ids`` (or ``response_lengths``, whose keys are the gold ids) an id that is not in the gold data is
    an error; with ``response_lengths`` a span ending past its response (``end > len(response)``) is an error.
    Bad JSON, a missing ``id``/``spans``/``start``/``end``, a non-integer offset, ``end < start``, a bad
    ``type``/``score`` and a duplicate id all raise :class:`InputError` naming the file, line and id.
    """
    path = Path(path)
    known = set(response_lengths) if response_lengths is not None else (
        set(gold_ids) if gold_ids is not None else None)
    predictions: dict[str, list[Span]] = {}
    scores: dict[str, float] = {}
    first_line: dict[str, int] = {}
    counts = {"lines": 0, "parse_failures": 0, "too_long": 0, "unaligned_spans": 0, "scored_lines": 0}
    for line, obj in iter_jsonl(path):
        if "id" not in obj:
            raise InputError("missing required field", path=path, line=line, field="id")
        if isinstance(obj["id"], bool) or not isinstance(obj["id"], (str, int)):
            raise InputError(f"must be a string, got {obj['id']!r}", path=path, line=line, field="id")
        pid = str(obj["id"])
        if pid in predictions:
            raise InputError(f"duplicate prediction for id {pid!r} (first on line {first_line[pid]})",
                             path=path, line=line, field="id")
        if known is not None and pid not in known:
            raise InputError(f"unknown id {pid!r}: no gold response has this id", path=path, line=line, field="id")
        if "spans" not in obj:
            raise InputError(f"id {pid!r}: missing required field", path=path, line=line, field="spans")
        if not isinstance(obj["spans"], list):
            raise InputError(f"id {pid!r}: must be a list of spans, got {type(obj['spans']).__name__}",
                             path=path, line=line, field="spans")
        length = response_lengths.get(pid) if response_lengths is not None else None
        predictions[pid] = [_parse_span(s, path=path, line=line, pid=pid, index=i, length=length)
                            for i, s in enumerate(obj["spans"])]
        first_line[pid] = line
        score = obj.get("score")
        if score is not None:
            if not is_finite_number(score):
                raise InputError(f"id {pid!r}: the response score must be a finite number, got {score!r}",
                                 path=path, line=line, field="score")
            scores[pid] = float(score)
        counts["lines"] += 1
        counts["scored_lines"] += score is not None
        counts["parse_failures"] += obj.get("parse_ok") is False
        counts["too_long"] += obj.get("too_long") is True
        unaligned = obj.get("unaligned")
        counts["unaligned_spans"] += len(unaligned) if isinstance(unaligned, list) else 0
    complete = bool(scores) and len(scores) == len(predictions)
    return PredictionFile(spans=predictions, response_scores=scores if complete else None, diagnostics=counts)


def read_predictions(path: str | Path, gold_ids: Collection[str] | None = None, *,
                     response_lengths: Mapping[str, int] | None = None) -> dict[str, list[Span]]:
    """``{id: [Span, ...]}`` of a predictions file (:func:`read_prediction_file`, validated the same way)."""
    return read_prediction_file(path, gold_ids, response_lengths=response_lengths).spans


def read_response_scores(path: str | Path) -> dict[str, float] | None:
    """The line-level response scores of a predictions file, or None unless every line has one
    (:attr:`PredictionFile.response_scores`)."""
    return read_prediction_file(path).response_scores


def load_gold(path: str | Path) -> tuple[list[Record], dict[str, Any]]:
    """Gold records and a description of where they came from.

    ``path`` is a prepared split file (``.jsonl``, read as is) or a raw RAGTruth directory: then its ``test``
    split, keeping ``quality == "good"`` (the default of ``prepare`` and of the RAGTruth baselines). For a raw
    directory the description counts the test responses dropped by the quality filter and the test labels that
    the conversion repaired, dropped as unrepairable or removed as duplicates (see :mod:`ragtruth_spans.ragtruth`).
    """
    path = Path(path)
    if not path.is_dir():
        records = read_records(path)
        info: dict[str, Any] = {"path": str(path), "format": "prepared split file"}
    else:
        from .ragtruth import convert_ragtruth

        converted, labels = convert_ragtruth(path)
        test = [r for r in converted if r.split == "test"]
        records = [r for r in test if r.quality == "good"]
        kept = {r.id for r in records}
        info = {"path": str(path), "format": "RAGTruth directory", "split": "test", "keep_quality": ["good"],
                "test_responses": len(test), "dropped_by_quality": len(test) - len(records),
                "labels_repaired": sum(e["id"] in kept for e in labels.repaired),
                "labels_unrepairable_dropped": sum(e["id"] in kept for e in labels.unrepairable),
                "labels_duplicates_removed": sum(e["id"] in kept for e in labels.duplicates)}
    if not records:
        raise InputError("no gold records (for a RAGTruth directory: no test-split response of quality 'good')",
                         path=path)
    return records, info


# --- per-response counts --------------------------------------------------------------------------------

def _filter_gold(spans: Sequence[Span], ignore_implicit_true: bool, ignore_due_to_null: bool
                 ) -> tuple[list[Span], int, int]:
    """Gold spans kept by the adaptive filters, and how many each active filter matched."""
    kept, n_implicit, n_null = [], 0, 0
    for span in spans:
        drop_implicit = ignore_implicit_true and span.implicit_true
        drop_null = ignore_due_to_null and span.due_to_null
        n_implicit += drop_implicit
        n_null += drop_null
        if not (drop_implicit or drop_null):
            kept.append(span)
    return kept, n_implicit, n_null


@dataclass
class _Table:
    """Per-response count matrix (responses x columns) plus the per-response attributes used for grouping."""

    columns: list[str]
    counts: np.ndarray
    tasks: np.ndarray
    models: np.ndarray
    gold_pos: np.ndarray
    scores: np.ndarray | None
    types: list[str]

    def col(self, sums: np.ndarray, name: str) -> np.ndarray:
        return sums[..., self.columns.index(name)]


def _summarise(table: _Table, sums: np.ndarray) -> dict[str, Any]:
    """All pooled metrics from column sums (shape ``(k,)`` for a point estimate, ``(B, k)`` for resamples)."""
    out: dict[str, Any] = {}
    for level, (tp, n_pred, n_gold) in {
        "span": ("overlap_chars", "pred_chars", "gold_chars"),
        "response": ("both_pos", "pred_pos", "gold_pos"),
        "seqeval": ("ent_tp", "ent_pred", "ent_gold"),
    }.items():
        p, r, f = metrics.prf(table.col(sums, tp), table.col(sums, n_pred), table.col(sums, n_gold))
        out[level] = {"precision": p, "recall": r, "f1": f}
    out["type_recall"] = {
        t: metrics.safe_ratio(table.col(sums, f"type_covered:{t}"), table.col(sums, f"type_gold:{t}"),
                              undefined=math.nan)
        for t in table.types}
    return out


def _to_python(tree: Any) -> Any:
    """Arrays/NumPy scalars → floats, NaN → None, recursively."""
    if isinstance(tree, dict):
        return {k: _to_python(v) for k, v in tree.items()}
    value = float(tree)
    return None if math.isnan(value) else value


def _ci_tree(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _ci_tree(v) for k, v in tree.items()}
    return metrics.percentile_interval(tree, CI_LEVEL)


# --- report ---------------------------------------------------------------------------------------------

@dataclass
class Report:
    """Evaluation result. ``overall`` / each ``by_task[task]`` / ``by_model[model]`` is a group dict with
    ``responses``, ``span``, ``response``, ``seqeval`` (each ``{precision, recall, f1}``), ``type_recall``
    (``{type: recall or None}``) and ``auroc`` (float or None). ``ci`` mirrors those keys with ``[low, high]``
    95 % percentile intervals when bootstrapped."""

    overall: dict[str, Any]
    by_task: dict[str, dict[str, Any]]
    by_model: dict[str, dict[str, Any]]
    counts: dict[str, Any]
    settings: dict[str, Any]
    ci: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict. ``type_recall``, ``seqeval`` and ``auroc`` at the top level are the overall values."""
        d: dict[str, Any] = {
            "overall": self.overall,
            "type_recall": self.overall["type_recall"],
            "seqeval": self.overall["seqeval"],
            "auroc": self.overall["auroc"],
            "by_task": self.by_task,
            "by_model": self.by_model,
            "counts": self.counts,
            "settings": self.settings,
            "notes": self.notes,
        }
        if self.ci is not None:
            d["ci"] = self.ci
        return d

    def render(self, console: Any = None) -> None:
        """Print the report as rich tables (to ``console``, default stdout)."""
        from rich.console import Console

        console = console or Console()
        for table in _tables(self):
            console.print(table)
        for note in self.notes:
            console.print(f"[yellow]note:[/] {note}", highlight=False)


def _group(table: _Table, mask: np.ndarray) -> dict[str, Any]:
    summary = _to_python(_summarise(table, table.counts[mask].sum(axis=0)))
    score = metrics.auroc(table.gold_pos[mask], table.scores[mask]) if table.scores is not None else None
    return {"responses": int(mask.sum()), **summary, "auroc": score}


def _bootstrap(table: _Table, groups: dict[str, dict[str, np.ndarray]], n: int, seed: int) -> dict[str, Any]:
    """Percentile CIs: ``n`` resamples of the responses (with replacement, ``numpy.random.default_rng(seed)``).
    Each resample is a row of multiplicities, so every group's pooled sums are one matrix product."""
    rng = np.random.default_rng(seed)
    size = len(table.counts)
    draws = rng.integers(0, size, size=(n, size))
    flat = (draws + np.arange(n)[:, None] * size).ravel()
    weights = np.bincount(flat, minlength=n * size).reshape(n, size).astype(float)
    ci: dict[str, Any] = {"level": CI_LEVEL, "resamples": n, "seed": seed, "method": "percentile"}
    ci["overall"] = _ci_tree(_summarise(table, weights @ table.counts))
    for name, masks in groups.items():
        ci[name] = {}
        for key, mask in masks.items():
            resampled = _summarise(table, weights[:, mask] @ table.counts[mask])
            ci[name][key] = _ci_tree({"span": resampled["span"], "response": resampled["response"]})
    return ci


def evaluate(gold: Sequence[Record], predictions: Mapping[str, Sequence[Span]], *,
             ignore_implicit_true: bool = False, ignore_due_to_null: bool = False, allow_missing: bool = False,
             bootstrap: int = 0, seed: int = 0, response_scores: Mapping[str, float] | None = None) -> Report:
    """Score ``predictions`` (``{response id: spans}``, character offsets, half-open) against ``gold`` records.

    - A gold response with no entry in ``predictions`` raises :class:`InputError`, unless ``allow_missing``:
      then it counts as predicting no span and is reported in ``counts.missing_predictions``.
    - A prediction id not in ``gold`` or a span with ``end > len(response)`` raises :class:`InputError`.
    - ``ignore_implicit_true`` / ``ignore_due_to_null`` drop those gold spans (RAGTruth §3.4 adaptive evaluation);
      the dropped spans are counted. A response whose gold spans were all dropped counts as clean.
    - ``bootstrap > 0``: 95 % percentile intervals from that many resamples of the responses (seeded).
    - AUROC ranks responses by ``response_scores[id]`` when given (one per prediction, e.g. from
      :func:`read_response_scores`; a missing prediction counts as 0.0, like its missing spans), else by
      :func:`metrics.response_score` (max span score, 0.0 without spans; needs a score on every span).
      ``settings.auroc_scores`` says which: ``"response"``, ``"max-span"`` or None (not computed).
    """
    if not gold:
        raise InputError("no gold records to evaluate")
    if bootstrap < 0:
        raise InputError(f"bootstrap must be >= 0, got {bootstrap}")
    lengths: dict[str, int] = {}
    for record in gold:
        if record.id in lengths:
            raise InputError(f"duplicate gold id {record.id!r}")
        lengths[record.id] = len(record.response)
    unknown = [pid for pid in predictions if pid not in lengths]
    if unknown:
        raise InputError(f"{len(unknown)} prediction id(s) not in the gold data, e.g. {unknown[0]!r}")
    missing = [r.id for r in gold if r.id not in predictions]
    if response_scores is not None:
        unscored = [pid for pid in predictions if pid not in response_scores]
        extra = [pid for pid in response_scores if pid not in predictions]
        if unscored or extra:
            raise InputError(f"response_scores must have one score per prediction: "
                             f"{len(unscored)} prediction(s) without one, {len(extra)} score(s) without a prediction"
                             f" (e.g. {(unscored or extra)[0]!r})")
        if not all(math.isfinite(v) for v in response_scores.values()):
            raise InputError("response_scores must be finite numbers")
    if missing and not allow_missing:
        raise InputError(f"{len(missing)} gold response(s) have no prediction, e.g. id {missing[0]!r} "
                         "(use allow_missing / --allow-missing to count them as predicting no span)")

    types = list(HALLUCINATION_TYPES)
    rows, type_rows = [], []
    n_gold_total = n_drop_implicit = n_drop_null = n_gold = n_pred = n_empty_pred = 0
    n_scored = n_unscored = 0
    scores: list[float | None] = []
    for record in gold:
        pred = list(predictions.get(record.id, ()))
        for span in pred:
            if span.end > lengths[record.id]:
                raise InputError(f"id {record.id!r}: predicted span [{span.start}, {span.end}) is out of range "
                                 f"for a response of {lengths[record.id]} characters")
            if span.score is None:
                n_unscored += 1
            else:
                n_scored += 1
        kept, drop_implicit, drop_null = _filter_gold(record.spans, ignore_implicit_true, ignore_due_to_null)
        n_gold_total += len(record.spans)
        n_drop_implicit += drop_implicit
        n_drop_null += drop_null
        n_gold += len(kept)
        n_pred += len(pred)
        n_empty_pred += sum(1 for s in pred if s.start == s.end)
        gold_chars, pred_chars, overlap = metrics.char_counts(kept, pred)
        ent = metrics.word_entity_counts(record.response, kept, pred)
        rows.append((gold_chars, pred_chars, overlap, gold_chars > 0, pred_chars > 0,
                     gold_chars > 0 and pred_chars > 0, *ent))
        per_type = metrics.type_char_counts(kept, pred)
        types.extend(t for t in per_type if t not in types)
        type_rows.append(per_type)
        scores.append(metrics.response_score(pred))

    columns = list(_BASE_COLUMNS) + [f"type_{kind}:{t}" for t in types for kind in ("gold", "covered")]
    counts = np.zeros((len(gold), len(columns)), dtype=float)
    counts[:, :len(_BASE_COLUMNS)] = np.asarray(rows, dtype=float)
    for i, per_type in enumerate(type_rows):
        for t, (g, c) in per_type.items():
            counts[i, columns.index(f"type_gold:{t}")] = g
            counts[i, columns.index(f"type_covered:{t}")] = c

    notes: list[str] = []
    if response_scores is not None:
        scores = [response_scores.get(r.id, 0.0) for r in gold]
        use_scores, auroc_scores = True, "response"
    else:
        use_scores = n_scored > 0 and n_unscored == 0
        auroc_scores = "max-span" if use_scores else None
    if auroc_scores is None and n_scored == 0:
        notes.append("auroc: not computed, the predictions carry no scores")
    elif auroc_scores is None:
        notes.append(f"auroc: not computed, {n_unscored} of {n_scored + n_unscored} predicted spans have no score")
    table = _Table(columns=columns, counts=counts,
                   tasks=np.array([r.task_type for r in gold]), models=np.array([r.model for r in gold]),
                   gold_pos=counts[:, columns.index("gold_pos")] > 0,
                   scores=np.array(scores, dtype=float) if use_scores else None, types=types)
    if use_scores and metrics.auroc(table.gold_pos, table.scores) is None:
        notes.append("auroc: undefined, the gold responses are all hallucinated or all clean")

    task_order = [t for t in TASK_TYPES if t in set(table.tasks)] + sorted(set(table.tasks) - set(TASK_TYPES))
    groups = {"by_task": {t: table.tasks == t for t in task_order},
              "by_model": {m: table.models == m for m in sorted(set(table.models))}}
    overall = _group(table, np.ones(len(gold), dtype=bool))
    by_task = {t: _group(table, mask) for t, mask in groups["by_task"].items()}
    by_model = {m: _group(table, mask) for m, mask in groups["by_model"].items()}

    total = counts.sum(axis=0)
    if missing:
        notes.append(f"{len(missing)} gold response(s) had no prediction and count as predicting no span "
                     f"(first: {', '.join(missing[:5])})")
    report_counts = {
        "responses": len(gold),
        "gold_spans": n_gold,
        "gold_spans_before_filters": n_gold_total,
        "dropped_gold_spans": n_gold_total - n_gold,
        "dropped_implicit_true": n_drop_implicit,
        "dropped_due_to_null": n_drop_null,
        "predicted_spans": n_pred,
        "empty_predicted_spans": n_empty_pred,
        "missing_predictions": len(missing),
        "gold_positive_responses": int(table.col(total, "gold_pos")),
        "predicted_positive_responses": int(table.col(total, "pred_pos")),
        "gold_chars": int(table.col(total, "gold_chars")),
        "predicted_chars": int(table.col(total, "pred_chars")),
        "overlap_chars": int(table.col(total, "overlap_chars")),
        "gold_entities": int(table.col(total, "ent_gold")),
        "predicted_entities": int(table.col(total, "ent_pred")),
        "matched_entities": int(table.col(total, "ent_tp")),
        "type_gold_chars": {t: int(table.col(total, f"type_gold:{t}")) for t in types},
        "type_covered_chars": {t: int(table.col(total, f"type_covered:{t}")) for t in types},
        "scored_predicted_spans": n_scored,
    }
    settings = {"ignore_implicit_true": ignore_implicit_true, "ignore_due_to_null": ignore_due_to_null,
                "allow_missing": allow_missing, "bootstrap": bootstrap, "seed": seed,
                "auroc_scores": auroc_scores,
                "word_pattern": metrics.WORD_PATTERN.pattern, "seqeval_label": metrics.ENTITY_LABEL}
    ci = _bootstrap(table, groups, bootstrap, seed) if bootstrap > 0 else None
    return Report(overall=overall, by_task=by_task, by_model=by_model, counts=report_counts, settings=settings,
                  ci=ci, notes=notes)


# --- rendering ------------------------------------------------------------------------------------------

def _fmt(value: float | None, interval: list[float] | None = None) -> str:
    if value is None:
        return "–"
    text = f"{value:.3f}"
    return text if interval is None else f"{text} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _fmt_interval(interval: list[float] | None) -> str:
    return "–" if interval is None else f"[{interval[0]:.3f}, {interval[1]:.3f}]"


def _tables(report: Report) -> list[Any]:
    """The rich tables of a report: overall, by task, by model, type recall, counts."""
    from rich import box
    from rich.table import Table

    ci = report.ci or {}
    overall = Table(title="Overall (pooled over responses" + (", with 95 % intervals)" if ci else ")"))
    overall.add_column("level")
    for metric in ("precision", "recall", "f1"):
        overall.add_column(metric, justify="right")
    for level, label in (("span", "span (characters)"), ("response", "response (has a span)"),
                         ("seqeval", "seqeval (word entities)")):
        overall.add_row(label, *(_fmt(report.overall[level][m]) for m in ("precision", "recall", "f1")))
        if ci:
            intervals = ci["overall"][level]
            overall.add_row("  95 % interval", *(_fmt_interval(intervals[m]) for m in ("precision", "recall", "f1")),
                            style="dim")
    overall.add_row("AUROC (response)", _fmt(report.overall["auroc"]), "", "")
    tables = [overall]

    for name, title in (("by_task", "By task"), ("by_model", "By generating model")):
        table = Table(title=f"{title} (seqeval and intervals: see --json)", box=box.SIMPLE_HEAD, padding=(0, 1),
                      pad_edge=False, collapse_padding=True)
        table.add_column(name.removeprefix("by_"), no_wrap=True)
        for column in ("n", "span\nP", "span\nR", "span\nF1", "resp.\nP", "resp.\nR", "resp.\nF1", "AUROC"):
            table.add_column(column, justify="right", no_wrap=True, min_width=5)
        for key, group in getattr(report, name).items():
            table.add_row(key, str(group["responses"]),
                          *(_fmt(group[level][m]) for level in ("span", "response")
                            for m in ("precision", "recall", "f1")),
                          _fmt(group["auroc"]))
        tables.append(table)

    types = Table(title="Recall per gold hallucination type (characters covered by any predicted span)")
    types.add_column("type")
    types.add_column("gold chars", justify="right")
    types.add_column("recall", justify="right")
    intervals = ci.get("overall", {}).get("type_recall", {})
    for span_type, recall in report.overall["type_recall"].items():
        types.add_row(span_type, str(report.counts["type_gold_chars"][span_type]),
                      _fmt(recall, intervals.get(span_type)))
    tables.append(types)

    counts = Table(title="Counts")
    counts.add_column("what")
    counts.add_column("n", justify="right")
    for key, value in report.counts.items():
        if not isinstance(value, dict):
            counts.add_row(key.replace("_", " "), str(value))
    tables.append(counts)
    return tables
