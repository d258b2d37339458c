"""The ``ragtruth-spans`` command line (typer). Each command is a thin wrapper over a module's function;
heavy imports (torch, transformers) happen inside the commands so ``--help`` stays fast."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape

from .schema import InputError, write_json

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Find the exact hallucinated spans in RAG answers (RAGTruth).")
console = Console(stderr=True)


def fail(exc: Exception) -> None:
    """Print a one-line error (no traceback) and exit with status 2."""
    console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
    raise typer.Exit(code=2)


# --- prepare (issue: foundation / data) ------------------------------------------------------------------

@app.command("prepare")
def prepare_command(
    ragtruth_dir: Optional[Path] = typer.Option(None, "--ragtruth-dir", help="RAGTruth dataset folder holding "
                                                "response.jsonl and source_info.jsonl (or a RAGTruth clone)."),
    sample: bool = typer.Option(False, "--sample", help="Use the embedded sample instead of --ragtruth-dir."),
    out: Path = typer.Option(..., "--out", help="Output folder for train/dev/test.jsonl and stats.json."),
    dev_per_task: int = typer.Option(50, "--dev-per-task", min=0, help="Train source ids per task moved to dev."),
    seed: int = typer.Option(0, "--seed", help="Seed of the dev sampling."),
    keep_quality: Optional[list[str]] = typer.Option(None, "--keep-quality", help="Quality values to keep "
                                                     "(repeatable or comma-separated; 'all' keeps every "
                                                     "response). Default: good."),
) -> None:
    """Convert RAGTruth into prepared train/dev/test span files (labels checked, counts in stats.json)."""
    from .prepare import prepare
    from .ragtruth import sample_data_dir

    if sample == (ragtruth_dir is not None):
        fail(InputError("give exactly one of --ragtruth-dir DIR or --sample"))
    import warnings

    try:
        with warnings.catch_warnings():  # the summary below shows them
            warnings.simplefilter("ignore", UserWarning)
            stats = prepare(sample_data_dir() if sample else ragtruth_dir, out, dev_per_task=dev_per_task,
                            seed=seed, keep_quality=keep_quality if keep_quality else ("good",))
    except InputError as exc:
        fail(exc)
    Console().print(stats.render())
    console.print(f"wrote {out}/{{train,dev,test}}.jsonl and {out}/stats.json", highlight=False, markup=False)


# --- evaluate (issue: foundation / evaluator) --------------------------------------------------------------

@app.command("evaluate")
def evaluate_command(
    gold: Path = typer.Option(..., "--gold", help="Prepared split file (e.g. OUT/test.jsonl) or a RAGTruth "
                              "dataset directory (its test split, quality 'good')."),
    pred: Path = typer.Option(..., "--pred", help="Predictions JSONL: {\"id\", \"spans\": [{start, end, type?, "
                              "score?}]} per line."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Write the full report as JSON here."),
    ignore_implicit_true: bool = typer.Option(False, "--ignore-implicit-true",
                                              help="Drop gold spans marked implicit_true (RAGTruth §3.4)."),
    ignore_due_to_null: bool = typer.Option(False, "--ignore-due-to-null",
                                            help="Drop gold spans marked due_to_null (RAGTruth §3.4)."),
    allow_missing: bool = typer.Option(False, "--allow-missing",
                                       help="A gold response with no prediction line counts as no spans."),
    bootstrap: int = typer.Option(0, "--bootstrap", min=0, help="Resamples for 95% confidence intervals."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
) -> None:
    """Score predicted spans against gold: character-overlap P/R/F1, response-level P/R/F1, type recall,
    seqeval, AUROC, by task and by model."""
    from rich.console import Console

    from .evaluation import evaluate, load_gold, read_prediction_file

    try:
        records, gold_info = load_gold(gold)
        pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
        predictions, response_scores, diagnostics = pred_file.spans, pred_file.response_scores, pred_file.diagnostics
    except InputError as exc:
        fail(exc)
    try:
        report = evaluate(records, predictions, ignore_implicit_true=ignore_implicit_true,
                          ignore_due_to_null=ignore_due_to_null, allow_missing=allow_missing,
                          bootstrap=bootstrap, seed=seed, response_scores=response_scores)
    except InputError as exc:  # what evaluate() rejects here is about the predictions (e.g. a missing id)
        fail(InputError(str(exc), path=pred))
    report.settings["gold"] = gold_info
    report.settings["predictions"] = str(pred)
    report.settings["prediction_diagnostics"] = diagnostics
    if diagnostics["parse_failures"]:
        report.notes.append(f"{diagnostics['parse_failures']} of {diagnostics['lines']} prediction lines are parse "
                            f"failures ({diagnostics['too_long']} of them too long to run): they count as predicting "
                            "no span")
    if 0 < diagnostics["scored_lines"] < diagnostics["lines"]:
        report.notes.append(f"auroc: only {diagnostics['scored_lines']} of {diagnostics['lines']} prediction lines "
                            "carry a response score (e.g. too-long responses have none), so AUROC uses span scores")
    if diagnostics["unaligned_spans"]:
        report.notes.append(f"{diagnostics['unaligned_spans']} generated span(s) could not be aligned to their "
                            "response and are not in the predictions")
    if gold_info.get("labels_unrepairable_dropped"):
        report.notes.append(f"{gold_info['labels_unrepairable_dropped']} gold label(s) of the RAGTruth test split "
                            "could not be aligned to the response and were dropped by the conversion")
    report.render(Console())
    if json_out is not None:
        write_json(json_out, report.to_dict())
        console.print(f"report written to {json_out}")

# --- train (issue: QLoRA training) -------------------------------------------------------------------------

@app.command("train")
def train_command(
    recipe: str = typer.Argument(..., help="Recipe YAML path or shipped name (tiny-cpu, "
                                 "llama-3.1-8b-instruct/qlora, ...)."),
    overrides: list[str] = typer.Option([], "--set", help="Override a recipe key, e.g. --set training.max_steps=20 "
                                        "(value parsed as YAML; repeatable)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Validate and print the resolved recipe; load no model."),
) -> None:
    """Fine-tune a generative span detector with QLoRA (TRL SFTTrainer + PEFT + bitsandbytes); resumes from the
    last checkpoint in the output dir. Multi-GPU: `accelerate launch --config_file recipes/accelerate/ddp.yaml
    -m ragtruth_spans train RECIPE`."""
    from .recipe import load_recipe

    try:
        resolved = load_recipe(recipe, overrides)
        if dry_run:
            sys.stdout.write(resolved.to_yaml())
            return
        from .train import train

        train(resolved, console=console)
    except (InputError, OSError) as exc:  # OSError: model or tokenizer not found / not accessible
        fail(exc)

# --- predict (issue: inference) ----------------------------------------------------------------------------

@app.command("predict")
def predict_command(
    model: Path = typer.Option(..., "--model", help="Training output directory (adapter + recipe.yaml)."),
    data: Path = typer.Option(..., "--data", help="Prepared split file, e.g. OUT/test.jsonl."),
    out: Path = typer.Option(..., "--out", help="Predictions JSONL to write; ids already in it are skipped."),
    batch_size: int = typer.Option(8, "--batch-size", min=1, help="Responses generated together."),
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="Only the first N records of --data."),
    backend: str = typer.Option("hf", "--backend", help="hf (transformers, CPU/GPU) or vllm (optional, GPU)."),
    max_new_tokens: int = typer.Option(512, "--max-new-tokens", min=1, help="Generation budget per response."),
    load_in_4bit: Optional[bool] = typer.Option(None, "--load-in-4bit/--no-load-in-4bit",
                                                help="Override the recipe's 4-bit quantization of the base model."),
    device: Optional[str] = typer.Option(None, "--device", help="hf backend: cpu, cuda, cuda:1 ... "
                                         "(default: cuda if available)."),
) -> None:
    """Generate hallucinated spans for each response and write the predictions file (resumable)."""
    from .predict import predict_file
    from .vllm_backend import BackendUnavailable

    if backend not in ("hf", "vllm"):
        fail(InputError(f"unknown backend {backend!r} (expected hf or vllm)", field="--backend"))
    console.print(f"predicting with [bold]{model}[/] ({backend}) on {data} → {out}", highlight=False)
    try:
        summary = predict_file(model, data, out, batch_size=batch_size, limit=limit, backend=backend,
                               max_new_tokens=max_new_tokens, load_in_4bit=load_in_4bit, device=device)
    except (InputError, BackendUnavailable) as exc:
        fail(exc)
    console.print(summary.render(), highlight=False, markup=False)

# --- quickstart (issue: inference) -------------------------------------------------------------------------

@app.command("quickstart")
def quickstart_command(
    workdir: Path = typer.Option(Path("ragtruth-spans-quickstart"), "--workdir",
                                 help="Where data, model, predictions and report are written."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", min=1,
                                            help="Override the tiny-cpu recipe's training steps."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the previous quickstart outputs in --workdir first "
                               "(by default finished steps are reused)."),
) -> None:
    """Run the whole pipeline on the embedded sample on CPU: prepare → train tiny-cpu → predict → evaluate."""
    from rich.console import Console

    from .quickstart import run_quickstart

    try:
        run_quickstart(workdir, max_steps=max_steps, fresh=fresh, console=Console())
    except InputError as exc:
        fail(exc)

# --- select (issue: best-of-N) -----------------------------------------------------------------------------


@app.command("select")
def select_command(
    data: Optional[Path] = typer.Option(None, "--data", help="Corpus mode: prepared records (e.g. OUT/test.jsonl) "
                                        "or a RAGTruth dataset folder (its test split)."),
    pred: Optional[Path] = typer.Option(None, "--pred", help="Corpus mode: predictions JSONL for those records."),
    models: Optional[str] = typer.Option(None, "--models", help="Corpus mode: comma-separated models to select "
                                         "among, e.g. llama-2-7b-chat,mistral-7B-instruct."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Corpus mode: bootstrap resamples of the sources "
                                  "for 95% intervals (0 = none)."),
    model: Optional[Path] = typer.Option(None, "--model", help="Online mode: a trained model directory."),
    context: Optional[Path] = typer.Option(None, "--context", help="Online mode: text file with the context."),
    candidates: Optional[Path] = typer.Option(None, "--candidates", help='Online mode: JSONL, one '
                                              '{"response": "...", "id"?: "..."} per line.'),
    task: Optional[str] = typer.Option(None, "--task", help="Online mode: QA, Summary or Data2txt "
                                       "(default QA when --question is given)."),
    question: Optional[str] = typer.Option(None, "--question", help="Online mode: the question (QA)."),
    device: Optional[str] = typer.Option(None, "--device", help="Online mode: torch device (default: auto)."),
    strategy: str = typer.Option("fewest-spans", "--strategy",
                                 help="fewest-spans | no-spans | least-hallucinated-chars | max-confidence."),
    tie_break: str = typer.Option("random", "--tie-break", help="random (seeded) | first | shortest."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random tie-breaks (and of the bootstrap)."),
    json_out: Optional[Path] = typer.Option(None, "--json", help="Also write the report / selection as JSON."),
) -> None:
    """Best-of-N answer selection: evaluate it on a labelled corpus, or pick among your own candidates."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from . import selection as sel

    out = Console()
    corpus_opts = {"--data": data, "--pred": pred, "--models": models}
    online_opts = {"--model": model, "--context": context, "--candidates": candidates}
    given_corpus = [k for k, v in corpus_opts.items() if v is not None]
    given_online = [k for k, v in online_opts.items() if v is not None] + \
        [k for k, v in {"--task": task, "--question": question, "--device": device}.items() if v is not None]
    try:
        if given_corpus and given_online:
            raise InputError(f"use either corpus mode (--data --pred --models) or online mode (--model --context "
                             f"--candidates), not both: got {', '.join(given_corpus + given_online)}")
        if not given_corpus and not given_online:
            raise InputError("give corpus mode options (--data --pred --models) or online mode options "
                             "(--model --context --candidates)")
        required = corpus_opts if given_corpus else online_opts
        missing = [k for k, v in required.items() if v is None]
        if missing:
            raise InputError(f"missing option(s) {', '.join(missing)} for "
                             f"{'corpus' if given_corpus else 'online'} mode")

        if given_corpus:
            from .evaluation import load_gold, read_prediction_file

            records, _ = load_gold(data)  # a prepared split file, or a RAGTruth directory's test split
            pred_file = read_prediction_file(pred, response_lengths={r.id: len(r.response) for r in records})
            names = [m.strip() for m in models.split(",") if m.strip()]
            report = sel.evaluate_selection(records, pred_file.spans, names, strategy, seed, bootstrap,
                                            tie_break=tie_break, response_scores=pred_file.response_scores)
            out.print(sel.render_selection_report(report))
            sources = report["sources"]
            if sources["skipped"]:
                reasons = ", ".join(f"{reason} ({count})" for reason, count in sources["skipped_reasons"].items())
                console.print(f"[yellow]skipped[/] {sources['skipped']} of {sources['total']} sources: {reasons}",
                              highlight=False)
            payload = report
        else:
            if task is None:
                if question is None:
                    raise InputError("--task is required (QA, Summary or Data2txt) when no --question is given")
                task = "QA"
            from .schema import TASK_TYPES

            if task not in TASK_TYPES:
                raise InputError(f"unknown task {task!r} (expected one of {', '.join(TASK_TYPES)})", field="--task")
            if not context.is_file():
                raise InputError("file not found", path=context)
            context_text = context.read_text(encoding="utf-8")
            items = sel.read_candidates(candidates)
            from .detector import Detector

            detector = Detector.from_pretrained(str(model), device=device)
            chosen = sel.select_best(items, strategy=strategy, seed=seed, tie_break=tie_break, detector=detector,
                                     context=context_text, task=task, question=question)
            table = Table(title=f"Candidates scored by {strategy} (lower is better)")
            for column in ("#", "id", "score", "spans found"):
                table.add_column(column)
            for i, (cand, score) in enumerate(zip(chosen.candidates, chosen.scores)):
                found = "\n".join(f"[{s.start}, {s.end}) {s.type or ''}: {cand.response[s.start:s.end]!r}"
                                  for s in cand.spans or ()) or "none"
                if i in chosen.detection_failed:
                    found = "detector output could not be parsed (ranked last)"
                table.add_row(("* " if i == chosen.index else "") + str(i), Text(cand.id or ""), f"{score:g}",
                              Text(found),
                              style="bold" if i == chosen.index else None)
            out.print(table)
            how = f"; tie among {chosen.tied} broken by {chosen.tie_break}" if chosen.tie_broken else ""
            flag = "; no clean candidate, fell back to fewest spans" if chosen.fallback else ""
            out.print(f"Chosen: candidate {chosen.index} (id {chosen.candidate.id}){how}{flag}", markup=False,
                      highlight=False)
            out.print(chosen.candidate.response, markup=False, highlight=False)
            payload = chosen.to_dict()
        if json_out is not None:
            write_json(json_out, payload)
            console.print(f"wrote {json_out}")
    except InputError as exc:
        fail(exc)



def main() -> None:  # pragma: no cover - entry point for `python -m ragtruth_spans`
    app()
