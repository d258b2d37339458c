"""``ragtruth-spans quickstart``: the whole pipeline on the embedded RAGTruth-format sample, on CPU.

Seven steps, all written under one work directory (default ``./ragtruth-spans-quickstart``)::

    data/{train,dev,test}.jsonl, stats.json   1. prepare the embedded sample (1 dev source per task)
    model/                                    2. train the ``tiny-cpu`` recipe (tiny random Llama, real 4-bit QLoRA)
    predictions.jsonl                         3. predict spans on data/test.jsonl (HF backend)
    report.json                               4. evaluate predictions against the gold test spans
    token-cls/                                5. train the all-MiniLM-L6-v2 token classifier (real weights) on
                                                 data/train.jsonl, its threshold tuned on data/dev.jsonl; only
                                                 the final weights are kept (no checkpoint-*/ folders)
    recommended-cpu/                          6. train the recommended CPU detector (``recommended-cpu``, stacked)
                                                 without its sentence encoder (:data:`RECOMMENDED_OVERRIDES`)
    leaderboard/, report.html                 7. benchmark the three trained detectors beside cheap baselines on
                                                 the test split (leaderboard.md/.json/.svg, one predictions file
                                                 each) and write the HTML report of the three

Re-running reuses what is finished: the prepared data when ``data/stats.json`` exists, the model when
``model/adapter_model.safetensors`` exists (training itself resumes from its last checkpoint), the token
classifier and the recommended detector when their ``run_info.json`` exists, and the predictions already
written (``predictions.jsonl``, ``leaderboard/predictions/``: only missing ids are detected); evaluation always
reruns. Pass ``fresh=True`` (``--fresh``) to delete those outputs first.

The tiny model is random and trained for seconds on ~50 responses: its scores show that the pipeline works end
to end, not how well a real detector performs (use a recipe for a 7-13B model on a GPU for that). The token
classifier starts from real pretrained weights but sees only the sample's 44 training responses, with the
recipe shortened for time (:data:`TOKEN_CLS_OVERRIDES`): its scores are real detection on invented text, not a
benchmark (docs/BENCHMARKS.md has the measured ones).
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

QUICKSTART_RECIPE = "tiny-cpu"
QUICKSTART_OVERRIDES = ("training.num_epochs=6",)
"""The tiny model learns the output format within 6 epochs of the sample (66 steps; the recipe's 10 take ~25 s more
on 2 CPU cores for no change in its test predictions)."""
LEADERBOARD_DETECTORS = ("numbers", "sim-overlap", "flag-all")
"""Cheap baselines ranked beside the quickstart's two trained detectors in step 6 (no download, seconds on CPU)."""
DEFAULT_WORKDIR = Path("ragtruth-spans-quickstart")
TOTAL_STEPS = 7
RECOMMENDED_RECIPE = "recommended-cpu"
RECOMMENDED_OVERRIDES = ("features.encoder=null",)
"""The recommended recipe without its sentence encoder: seconds on the sample (docs/STACKED.md)."""
RECOMMENDED_LABEL = "recommended-cpu (encoder-free)"
TOKEN_CLS_RECIPE = "all-minilm-l6-v2/token-cls"
TOKEN_CLS_OVERRIDES = (
    "data.max_length=256",          # the sample's contexts are short: one or two 256-token windows per response
    "windows.min_context_tokens=64",
    "training.num_epochs=3",        # 44 responses: 18 optimizer steps of 8 windows (~45 s on 2 cores)
    "training.learning_rate=2e-4",
    "training.eval_steps=1000",     # no mid-training evaluation; dev (1 source per task) tunes the threshold
    "training.save_steps=1000",
)
"""How the quickstart shortens the MiniLM recipe to stay within a few minutes on 2 CPU cores."""


@dataclass(frozen=True)
class QuickstartPaths:
    workdir: Path

    @property
    def data(self) -> Path:
        return self.workdir / "data"

    @property
    def model(self) -> Path:
        return self.workdir / "model"

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
    def token_model(self) -> Path:
        return self.workdir / "token-cls"

    @property
    def recommended(self) -> Path:
        return self.workdir / "recommended-cpu"

    @property
    def leaderboard(self) -> Path:
        return self.workdir / "leaderboard"


def run_quickstart(workdir: str | Path = DEFAULT_WORKDIR, *, max_steps: int | None = None,
                   max_new_tokens: int = 128, batch_size: int = 8, fresh: bool = False,
                   console: Console | None = None, token_max_steps: int | None = None):
    """Prepare → train → predict → evaluate → train a token classifier → train the recommended detector →
    leaderboard and HTML report, under ``workdir``; print each step, what it produced and where, and the final
    leaderboard; return the generative model's :class:`~ragtruth_spans.evaluation.Report`.

    ``max_steps`` / ``token_max_steps`` override the tiny-cpu / token-classifier recipes' ``training.max_steps``
    (tests use a few steps); ``max_new_tokens`` is the
    generation budget per response (the sample's gold targets take at most ~80 tokens of the tiny tokenizer, and
    128 leaves the prompt 768 - 128 = 640 tokens, enough for every test prompt of the sample unshortened).
    With ``--verbose`` (:func:`ragtruth_spans.core.logs.verbosity`) step 4 prints every evaluation table.
    """
    from ragtruth_spans.core import logs
    from ragtruth_spans.core.jsonl import write_json
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.evaluation.files import evaluate_prediction_file
    from ragtruth_spans.evaluation.gold import load_gold
    from ragtruth_spans.pipeline.predict import predict_file
    from ragtruth_spans.reporting.console import print_evaluation

    console = console or logs.make_console()
    paths = QuickstartPaths(Path(workdir).resolve())
    if fresh:
        _remove_outputs(paths, console)
    paths.workdir.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]ragtruth-spans quickstart[/] — writing under {escape(str(paths.workdir))}", highlight=False)
    started = time.perf_counter()

    _prepare_sample(paths, console)
    _train_generative(paths, console, max_steps=max_steps)

    _step(console, 3, "predict spans on the test split", paths.predictions)
    summary = predict_file(paths.model, paths.data / "test.jsonl", paths.predictions, batch_size=batch_size,
                           max_new_tokens=max_new_tokens, device="cpu").to_dict()
    console.print(f"  {summary['predicted']} responses detected ({summary['skipped_done']} already done), "
                  f"{summary['spans']} spans, {summary['errors']} failures, "
                  f"{summary['responses_per_second']:.1f} responses/s", highlight=False)

    _step(console, 4, "evaluate against the gold spans", paths.report)
    gold, gold_info = load_gold(paths.data / "test.jsonl")
    pred_file = read_prediction_file(paths.predictions, response_lengths={r.id: len(r.response) for r in gold})
    report = evaluate_prediction_file(gold, pred_file, paths.predictions, gold_info=gold_info)
    write_json(paths.report, report.to_dict())
    overall = report.to_dict()["overall"]
    console.print(f"  span F1 {overall['span']['f1']:.3f}, response F1 {overall['response']['f1']:.3f} "
                  f"(tiny random model: shows the pipeline runs, not how well it detects)", highlight=False)
    if logs.verbosity() == "verbose":
        print_evaluation(report.to_dict(), console)
    _train_token_classifier(paths, console, max_steps=token_max_steps)
    _train_recommended(paths, console)
    _step(console, 7, "rank the three trained detectors beside baselines; HTML report", paths.leaderboard)
    payload = _leaderboard(paths, {"batch_size": batch_size, "max_new_tokens": max_new_tokens, "device": "cpu"},
                           console)
    _write_html_report(paths, gold, payload, console)
    console.print(f"\n[bold green]done[/] in {time.perf_counter() - started:.0f} s. "
                  f"Files under {escape(str(paths.workdir))}:",
                  highlight=False)
    for label, path in (("data", paths.data), ("generative model", paths.model), ("predictions", paths.predictions),
                        ("report", paths.report), ("token classifier", paths.token_model),
                        ("recommended-cpu", paths.recommended), ("leaderboard", paths.leaderboard),
                        ("HTML report", paths.report_html)):
        console.print(f"  {label + ':':18} {path.relative_to(paths.workdir)}", highlight=False, markup=False)
    console.print("The tiny random model only shows that the pipeline runs end to end.", style="dim")
    console.print("The token classifier and recommended-cpu are real detectors trained on 44 invented responses: "
                  "real detection, not a benchmark (see docs/BENCHMARKS.md).", style="dim")
    return report


def _prepare_sample(paths: QuickstartPaths, console: Console) -> None:
    """Step 1: prepare the embedded sample into ``data/`` (one dev source per task)."""
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir

    _step(console, 1, "prepare the embedded sample", paths.data)
    if (paths.data / "stats.json").is_file():
        console.print(f"  reusing {paths.data} (delete it, or pass --fresh, to prepare again)", highlight=False)
    else:
        stats = prepare(sample_data_dir(), paths.data, dev_per_task=1)
        console.print("  " + ", ".join(f"{name}: {s.responses} responses" for name, s in stats.splits.items()),
                      highlight=False)


def _train_generative(paths: QuickstartPaths, console: Console, *, max_steps: int | None) -> None:
    """Step 2: train the tiny-cpu recipe (tiny random Llama, real 4-bit QLoRA) on the sample's train split."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    overrides = [*QUICKSTART_OVERRIDES, f"output_dir={paths.model}", f"data.prepared_dir={paths.data}",
                 "data.split=train"]
    if max_steps is not None:
        overrides.append(f"training.max_steps={max_steps}")
    _step(console, 2, f"train the '{QUICKSTART_RECIPE}' recipe", paths.model)
    if (paths.model / "adapter_model.safetensors").is_file():
        console.print(f"  reusing the trained adapter in {paths.model} (delete it, or pass --fresh, to retrain)",
                      highlight=False)
    else:
        train(load_recipe(QUICKSTART_RECIPE, overrides), console=console)


def _train_token_classifier(paths: QuickstartPaths, console: Console, *, max_steps: int | None) -> None:
    """Step 5: train the MiniLM token classifier on the sample's train split (its threshold tuned on dev)."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    overrides = [*TOKEN_CLS_OVERRIDES, f"output_dir={paths.token_model}", f"data.prepared_dir={paths.data}",
                 "data.split=train", "data.eval_split=dev"]
    if max_steps is not None:
        overrides.append(f"training.max_steps={max_steps}")
    _step(console, 5, f"train the '{TOKEN_CLS_RECIPE}' token classifier (shortened for the quickstart)",
          paths.token_model)
    if (paths.token_model / "run_info.json").is_file():
        console.print(f"  reusing the trained classifier in {paths.token_model} (delete it, or pass --fresh, to "
                      "retrain)", highlight=False)
    else:
        train(load_recipe(TOKEN_CLS_RECIPE, overrides), console=console)
    _keep_final_weights(paths.token_model, console)


def _keep_final_weights(run_dir: Path, console: Console) -> None:
    """Delete the ``checkpoint-*`` folders of a finished run (optimizer state and intermediate weights: hundreds
    of MB the detector does not load); the final weights in the run directory stay."""
    freed = 0
    for checkpoint in sorted(run_dir.glob("checkpoint-*")):
        if checkpoint.is_dir() and (run_dir / "run_info.json").is_file():
            freed += sum(f.stat().st_size for f in checkpoint.rglob("*") if f.is_file())
            shutil.rmtree(checkpoint)
    if freed:
        console.print(f"  kept the final weights only ({freed / 1e6:.0f} MB of checkpoints deleted)", highlight=False)


def _train_recommended(paths: QuickstartPaths, console: Console) -> None:
    """Step 6: train ``recommended-cpu`` without its sentence encoder (seconds) on the sample's train split."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    overrides = [*RECOMMENDED_OVERRIDES, f"output_dir={paths.recommended}", f"data.prepared_dir={paths.data}"]
    _step(console, 6, f"train the recommended detector '{RECOMMENDED_RECIPE}' without its sentence encoder",
          paths.recommended)
    if (paths.recommended / "run_info.json").is_file():
        console.print(f"  reusing the trained detector in {paths.recommended} (delete it, or pass --fresh, to "
                      "retrain)", highlight=False)
    else:
        train(load_recipe(RECOMMENDED_RECIPE, overrides), console=console)


def _leaderboard(paths: QuickstartPaths, model_options: dict, console: Console) -> dict:
    """Step 7: ``ragtruth-spans benchmark`` on the test split with the three trained detectors and cheap
    baselines; returns its payload."""
    from ragtruth_spans.pipeline.benchmark import DetectorSpec, parse_detectors, run_benchmark

    specs = [DetectorSpec(label=RECOMMENDED_LABEL, source=str(paths.recommended), options={}),
             DetectorSpec(label=TOKEN_CLS_RECIPE, source=str(paths.token_model), options={"device": "cpu"}),
             DetectorSpec(label=QUICKSTART_RECIPE, source=str(paths.model), options=model_options),
             *parse_detectors(list(LEADERBOARD_DETECTORS))]
    payload = run_benchmark(paths.data / "test.jsonl", specs, paths.leaderboard, bootstrap=200, progress=False,
                            console=Console(quiet=True))  # its per-detector summaries: one line below instead
    console.print(f"  {len(specs)} detectors; predictions in leaderboard/predictions/, the full table in "
                  "leaderboard/leaderboard.md", highlight=False)
    console.print(leaderboard_table(payload))
    return payload


def leaderboard_table(payload: dict) -> Table:
    """The leaderboard's main figures (:func:`~ragtruth_spans.reporting.leaderboard.leaderboard_view`)."""
    from ragtruth_spans.reporting.leaderboard import leaderboard_view

    return leaderboard_view(payload, title="test split of the sample (span F1 with its 95 % bootstrap interval)")


def _step(console: Console, number: int, title: str, target: Path) -> None:
    console.print(f"\n[bold]step {number}/{TOTAL_STEPS}[/]: {title} → {escape(str(target))}", highlight=False)


def _write_html_report(paths: QuickstartPaths, gold, payload: dict, console: Console) -> None:
    """The HTML report of the three trained detectors' leaderboard predictions (``report.html``, open it in a
    browser; the recommended detector first); its path is printed."""
    from ragtruth_spans.core.predictions import read_prediction_file
    from ragtruth_spans.reporting.html import report_from_files, write_report

    trained = {RECOMMENDED_LABEL, TOKEN_CLS_RECIPE, QUICKSTART_RECIPE}
    lengths = {r.id: len(r.response) for r in gold}
    files = {entry["label"]: (entry["predictions"], read_prediction_file(entry["predictions"],
                                                                         response_lengths=lengths))
             for entry in sorted(payload["detectors"], key=lambda e: [RECOMMENDED_LABEL, TOKEN_CLS_RECIPE,
                                                                       QUICKSTART_RECIPE].index(e["label"])
                                 if e["label"] in trained else 9)
             if entry["label"] in trained}
    data = report_from_files(gold, files, bootstrap=1000, gold_source=str(paths.data / "test.jsonl"))
    data.title = "ragtruth-spans quickstart report"
    console.print(f"  HTML report: {write_report(paths.report_html, data)}", highlight=False)


def _remove_outputs(paths: QuickstartPaths, console: Console) -> None:
    """Delete the quickstart's own outputs (and nothing else) under the work directory."""
    for path in (paths.data, paths.model, paths.predictions, paths.report, paths.report_html, paths.token_model,
                 paths.recommended, paths.leaderboard):
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        else:
            continue
        console.print(f"removed {path}", highlight=False)
