"""``ragtruth-spans quickstart``: the answer first, then how it is measured and how a detector is trained.

Five steps on CPU, all written under one work directory (default ``./ragtruth-spans-quickstart``)::

    examples.jsonl                  1. detect the README's examples with the shipped detector (no training)
    data/{train,dev,test}.jsonl     2. prepare the embedded sample (invented texts in RAGTruth's format; 1 dev
                                       source per task)
    predictions.jsonl, report.json  3. evaluate the shipped detector on the sample's test split (predict, then
                                       evaluate against the gold spans)
    recommended-cpu/                4. train the recommended recipe (``recommended-cpu``, stacked) on the sample's
                                       train split, without its sentence encoder (:data:`RECOMMENDED_OVERRIDES`:
                                       seconds)
    leaderboard/, report.html       5. rank the shipped and the freshly trained detector beside cheap baselines on
                                       the test split (leaderboard.md/.json/.svg, one predictions file each) and
                                       write the HTML report of the two

The shipped detector (:mod:`ragtruth_spans.detectors.shipped`, docs/MODEL_CARD.md) was trained on real RAGTruth
responses; the embedded sample's invented texts are not among them, so step 3 measures it on text it never saw —
22 responses: a demonstration, not a benchmark (docs/BENCHMARKS.md has the measured figures). The detector trained
in step 4 sees 44 invented responses only: it shows the training path, not a useful model.

Re-running reuses what is finished: the prepared data when ``data/stats.json`` exists, the trained detector when
its ``run_info.json`` exists, and the predictions already written (``predictions.jsonl``,
``leaderboard/predictions/``: only missing ids are detected); evaluation always reruns. Pass ``fresh=True``
(``--fresh``) to delete those outputs first.

Output fits the console's width: :func:`quickstart_console` wraps text and narrows tables to the terminal, or,
through a pipe or into a file, to ``COLUMNS`` (80 when unset).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

LEADERBOARD_DETECTORS = ("numbers", "sim-overlap", "flag-all")
"""Cheap baselines ranked beside the shipped and the trained detector in step 5 (no download, seconds on CPU)."""
DEFAULT_WORKDIR = Path("ragtruth-spans-quickstart")
TOTAL_STEPS = 5
SHIPPED_LABEL = "default (shipped)"
RECOMMENDED_RECIPE = "recommended-cpu"
RECOMMENDED_OVERRIDES = ("features.encoder=null", "data.synth=null")  # seconds, not minutes: the shipped build has both
"""The recommended recipe without its sentence encoder: seconds on the sample (docs/STACKED.md)."""
RECOMMENDED_LABEL = "recommended-cpu (sample-trained)"
PIPED_WIDTH = 80
WIDE = 140
"""From this many columns on, the leaderboard shows every figure (narrower: :func:`leaderboard_table`'s compact
form; the full table is always in leaderboard.md)."""
"""Columns of the quickstart's output through a pipe or into a file when ``COLUMNS`` is not set."""
README_EXAMPLES: tuple[dict[str, str], ...] = (
    {"context": "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms.",
     "question": "When did the Grand Hotel open?",
     "response": "The Grand Hotel opened in 1998 and has 120 rooms.", "task": "QA"},
    {"context": "Revenue rose 12% to 3.4 billion euros.", "response": "Revenue rose 15%.", "task": "Summary"},
    {"context": "The museum opened in 1999 in Lyon. It holds 300 paintings.",
     "response": "The museum opened in 1998 and holds 300 paintings.", "task": "Summary"},
)
"""The README's examples (``detect``, ``serve`` and the own-data line), checked against it by the tests."""


@dataclass(frozen=True)
class QuickstartPaths:
    workdir: Path

    @property
    def examples(self) -> Path:
        return self.workdir / "examples.jsonl"

    @property
    def data(self) -> Path:
        return self.workdir / "data"

    @property
    def predictions(self) -> Path:
        return self.workdir / "predictions.jsonl"

    @property
    def report(self) -> Path:
        return self.workdir / "report.json"

    @property
    def report_html(self) -> Path:
        return self.workdir / "report.html"

    @property
    def recommended(self) -> Path:
        return self.workdir / "recommended-cpu"

    @property
    def leaderboard(self) -> Path:
        return self.workdir / "leaderboard"

    def outputs(self) -> tuple[Path, ...]:
        return (self.examples, self.data, self.predictions, self.report, self.report_html, self.recommended,
                self.leaderboard)


def quickstart_console(**kwargs: Any) -> Console:
    """A console whose lines never exceed the terminal: on a terminal, its width; through a pipe or into a file,
    ``COLUMNS`` (:data:`PIPED_WIDTH` when unset). Text wraps and tables narrow (rich's width handling)."""
    console = Console(highlight=False, **kwargs)
    if console.is_terminal or "width" in kwargs:
        return console
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH
    return Console(highlight=False, width=width, **kwargs)


def run_quickstart(workdir: str | Path = DEFAULT_WORKDIR, *, fresh: bool = False, console: Console | None = None):
    """Detect the README's examples with the shipped detector → prepare the embedded sample → evaluate the shipped
    detector on its test split → train the recommended recipe on its train split → leaderboard and HTML report,
    under ``workdir`` (module docstring); print each step, what it produced and where; return the shipped
    detector's :class:`~ragtruth_spans.evaluation.Report` on the test split. With ``--verbose``
    (:func:`ragtruth_spans.core.logs.verbose`) step 3 prints every evaluation table. The steps' own progress
    (training) goes to the ``ragtruth_spans`` loggers, as the entry point set them up."""
    from ragtruth_spans.core import logs
    from ragtruth_spans.detectors.quick_detect import shipped_detector

    console = console or quickstart_console()
    paths = QuickstartPaths(Path(workdir).resolve())
    if fresh:
        _remove_outputs(paths, console)
    paths.workdir.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]ragtruth-spans quickstart[/] — writing under {escape(str(paths.workdir))}")
    started = time.perf_counter()

    _step(console, 1, "detect the README's examples with the shipped detector (no training)", paths.examples)
    detector = shipped_detector()
    _detect_examples(detector, paths, console)
    _prepare_sample(paths, console)
    report = _evaluate_shipped(detector, paths, console, verbose=logs.verbose())
    _train_recommended(paths, console)
    _step(console, 5, "rank both beside baselines on the test split; HTML report", paths.leaderboard)
    payload = _leaderboard(paths, console)
    _write_html_report(paths, payload, console)
    console.print(f"\n[bold green]done[/] in {time.perf_counter() - started:.0f} s. "
                  f"Files under {escape(str(paths.workdir))}:")
    for label, path in (("examples", paths.examples), ("data", paths.data), ("predictions", paths.predictions),
                        ("report", paths.report), ("trained detector", paths.recommended),
                        ("leaderboard", paths.leaderboard), ("HTML report", paths.report_html)):
        console.print(f"  {label + ':':18} {path.relative_to(paths.workdir)}", markup=False)
    console.print("Next: `ragtruth-spans detect --context ... --response ...` uses the shipped detector; "
                  "docs/MODEL_CARD.md says what it was trained on and its limits. The sample has 22 invented "
                  "test responses: its figures show the pipeline, not a benchmark (docs/BENCHMARKS.md).",
                  style="dim", markup=False)
    return report


def _detect_examples(detector: Any, paths: QuickstartPaths, console: Console) -> None:
    """Step 1: the README's examples, each shown with its spans highlighted; written to ``examples.jsonl``."""
    from ragtruth_spans.core.jsonl import write_jsonl
    from ragtruth_spans.reporting.console import detection_view

    tick = time.perf_counter()
    detections = detector.detect_batch(list(README_EXAMPLES))
    rows = []
    for example, detection in zip(README_EXAMPLES, detections):
        row = detection.to_dict()
        row["spans"] = [s | {"text": example["response"][s["start"]:s["end"]]} for s in row["spans"]]
        rows.append({**example, **row})
        console.print(f"  context: {example['context']}", markup=False)
        console.print(detection_view(example["response"], row, title=example["task"]))
    write_jsonl(paths.examples, rows)
    console.print(f"  {len(rows)} responses in {time.perf_counter() - tick:.1f} s (the detector loads once: "
                  f"{escape(detector.describe().get('run_dir') or 'the shipped run')})")


def _prepare_sample(paths: QuickstartPaths, console: Console) -> None:
    """Step 2: prepare the embedded sample into ``data/`` (one dev source per task)."""
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir

    _step(console, 2, "prepare the embedded sample (invented texts, RAGTruth's format)", paths.data)
    if (paths.data / "stats.json").is_file():
        console.print(f"  reusing {escape(str(paths.data))} (delete it, or pass --fresh, to prepare again)")
    else:
        stats = prepare(sample_data_dir(), paths.data, dev_per_task=1)
        console.print("  " + ", ".join(f"{name}: {s.responses} responses" for name, s in stats.splits.items()))


def _evaluate_shipped(detector: Any, paths: QuickstartPaths, console: Console, *, verbose: bool) -> Any:
    """Step 3: the shipped detector's predictions on the test split, evaluated against the gold spans."""
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation.files import evaluate_prediction_file
    from ragtruth_spans.evaluation.gold import load_gold
    from ragtruth_spans.pipeline.predict import predict_file
    from ragtruth_spans.reporting.console import print_evaluation

    _step(console, 3, "evaluate the shipped detector on the sample's test split", paths.report)
    summary = predict_file(None, paths.data / "test.jsonl", paths.predictions, detector=detector,
                           progress=False).to_dict()
    gold, gold_info = load_gold(paths.data / "test.jsonl")
    pred_file = read_prediction_file(paths.predictions, response_lengths={r.id: len(r.response) for r in gold})
    report = evaluate_prediction_file(gold, pred_file, paths.predictions, gold_info=gold_info)
    write_json(paths.report, report.to_dict())
    overall = report.to_dict()["overall"]
    console.print(f"  {summary['predicted']} responses detected ({summary['skipped_done']} already done), "
                  f"{summary['spans']} spans; span F1 {overall['span']['f1']:.3f}, response F1 "
                  f"{overall['response']['f1']:.3f} on {overall['responses']} invented responses it never saw")
    if verbose:
        print_evaluation(report.to_dict(), console)
    return report


def _train_recommended(paths: QuickstartPaths, console: Console) -> None:
    """Step 4: train ``recommended-cpu`` without its sentence encoder (seconds) on the sample's train split."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    overrides = [*RECOMMENDED_OVERRIDES, f"output_dir={paths.recommended}", f"data.prepared_dir={paths.data}"]
    _step(console, 4, f"train '{RECOMMENDED_RECIPE}' on the sample's train split (the training path; no "
          "sentence encoder, for speed)", paths.recommended)
    if (paths.recommended / "run_info.json").is_file():
        console.print(f"  reusing the trained detector in {escape(str(paths.recommended))} (delete it, or pass "
                      "--fresh, to retrain)")
    else:
        result = train(load_recipe(RECOMMENDED_RECIPE, overrides))
        console.print(f"  trained: {result.summary}", markup=False)


def _leaderboard(paths: QuickstartPaths, console: Console) -> dict:
    """Step 5: ``ragtruth-spans benchmark`` on the test split with the shipped and the trained detector and
    cheap baselines; returns its payload."""
    from ragtruth_spans.detectors.shipped import DEFAULT_DIR
    from ragtruth_spans.pipeline.benchmark import DetectorSpec, parse_detectors, run_benchmark

    specs = [DetectorSpec(label=SHIPPED_LABEL, source=str(DEFAULT_DIR), options={}),
             DetectorSpec(label=RECOMMENDED_LABEL, source=str(paths.recommended), options={}),
             *parse_detectors(list(LEADERBOARD_DETECTORS))]
    payload = run_benchmark(paths.data / "test.jsonl", specs, paths.leaderboard, bootstrap=200, progress=False)
    console.print(f"  {len(specs)} detectors; predictions in leaderboard/predictions/, the full table in "
                  "leaderboard/leaderboard.md")
    console.print(leaderboard_table(payload, compact=console.width < WIDE))
    console.print("  The sample-trained detector learned from 44 responses written like these 22; the shipped one "
                  "never saw such text. On 22 responses the intervals are wide: a demonstration, not a benchmark.",
                  style="dim", markup=False)
    return payload


def leaderboard_table(payload: dict, *, compact: bool = False) -> Table:
    """The leaderboard's main figures (:func:`~ragtruth_spans.reporting.leaderboard.leaderboard_view`; compact
    on a console narrower than :data:`WIDE` columns)."""
    from ragtruth_spans.reporting.leaderboard import leaderboard_view

    return leaderboard_view(payload, title="test split of the sample (span F1 with its 95 % bootstrap interval)",
                            compact=compact)


def _step(console: Console, number: int, title: str, target: Path) -> None:
    console.print(f"\n[bold]step {number}/{TOTAL_STEPS}[/]: {escape(title)} → {escape(str(target))}")


def _write_html_report(paths: QuickstartPaths, payload: dict, console: Console) -> None:
    """The HTML report of the shipped and the trained detector's leaderboard predictions (``report.html``, open
    it in a browser; the shipped detector first); its path is printed."""
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.reporting.html import report_from_files, write_report

    order = [SHIPPED_LABEL, RECOMMENDED_LABEL]
    gold = read_records(paths.data / "test.jsonl")
    lengths = {r.id: len(r.response) for r in gold}
    entries = sorted((e for e in payload["detectors"] if e["label"] in order), key=lambda e: order.index(e["label"]))
    files = {e["label"]: (e["predictions"], read_prediction_file(e["predictions"], response_lengths=lengths))
             for e in entries}
    data = report_from_files(gold, files, bootstrap=1000, gold_source=str(paths.data / "test.jsonl"))
    data.title = "ragtruth-spans quickstart report"
    console.print(f"  HTML report: {escape(str(write_report(paths.report_html, data)))}")


def _remove_outputs(paths: QuickstartPaths, console: Console) -> None:
    """Delete the quickstart's own outputs (and nothing else) under the work directory."""
    for path in paths.outputs():
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        else:
            continue
        console.print(f"removed {escape(str(path))}")
