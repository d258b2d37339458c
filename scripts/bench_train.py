"""Measure QLoRA training peak memory and throughput for a model shape, with random weights.

The model is a Llama of the chosen shape with random weights (no download), saved once and loaded through the
training code path (``ragtruth_spans.detectors.generative.train.load_model``: 4-bit NF4 bitsandbytes +
``prepare_model_for_kbit_training``, LoRA from the recipe, TRL ``SFTTrainer`` with the recipe's ``SFTConfig``).
Sequences are exactly ``--max-length`` random tokens, all trained on, so the compute equals a real batch of that
length.

Usage:
    python scripts/bench_train.py --shape tiny --max-length 512            # CPU
    python scripts/bench_train.py --shape llama-3.1-8b --max-length 4096   # GPU
    python scripts/bench_train.py --shape llama-2-13b --max-length 4096    # GPU

Prints one JSON object (and writes it to ``--json PATH``): peak memory (GPU:
``torch.cuda.max_memory_allocated``; CPU: the process's peak RSS) and
tokens/s over the timed steps (the first ``--warmup-steps`` steps are excluded).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import tempfile
import time
from pathlib import Path

import torch

SHAPES = {
    "llama-3.1-8b": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, max_position_embeddings=131072,
                         rope_theta=500000.0),
    "llama-2-13b": dict(vocab_size=32000, hidden_size=5120, intermediate_size=13824, num_hidden_layers=40,
                        num_attention_heads=40, num_key_value_heads=40, max_position_embeddings=4096),
}
DEFAULT_RECIPE = {"tiny": "tiny-cpu", "llama-3.1-8b": "llama-3.1-8b-instruct/qlora",
                  "llama-2-13b": "llama-2-13b/qlora"}


def build_random_model(shape: str, out_dir: Path, seed: int) -> Path:
    """Save a random-weight model of ``shape`` (bf16 for full-size shapes) to ``out_dir``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from ragtruth_spans.models.tiny import build_tiny_llama

    if shape == "tiny":
        return build_tiny_llama(out_dir, seed=seed)
    torch.manual_seed(seed)
    config = LlamaConfig(**SHAPES[shape], tie_word_embeddings=False)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out_dir)
    del model
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return out_dir


class StepTimer:
    """A TrainerCallback recording wall time at every optimizer step's end."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def __getattr__(self, name):  # the other TrainerCallback hooks: no-ops
        if name.startswith("on_"):
            return lambda *args, **kwargs: None
        raise AttributeError(name)

    def on_step_end(self, args, state, control, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        self.times.append(time.perf_counter())


def device_and_peak_memory() -> tuple[str, float, str]:
    """``(device, peak GiB, what the peak measures)``: the GPU's allocator peak, or on a CPU the process's peak RSS."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_name(), torch.cuda.max_memory_allocated() / 2**30, \
            "torch.cuda.max_memory_allocated"
    device = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    return device, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "peak process RSS"  # KiB on Linux


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=["tiny", *SHAPES], default="tiny")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--steps", type=int, default=10, help="timed optimizer steps")
    parser.add_argument("--warmup-steps", type=int, default=2)
    parser.add_argument("--recipe", default=None, help="recipe for quantization/LoRA/training settings "
                        "(default: the shape's shipped recipe)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], help="recipe override key=value")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", dest="json_out", type=Path, default=None, help="also write the result here")
    return parser.parse_args()


def main() -> None:
    args = parse_args()

    from datasets import Dataset
    from trl import SFTTrainer

    from ragtruth_spans.detectors.generative.train import load_model, lora_config, sft_config
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.models.tiny import train_tokenizer
    from ragtruth_spans.runs.run_dir import library_versions

    overrides = [f"training.per_device_batch_size={args.batch_size}", "training.gradient_accumulation_steps=1",
                 f"training.max_steps={args.warmup_steps + args.steps}", "training.save_steps=100000",
                 "training.logging_steps=100000", "logging.report_to=none", f"data.max_length={args.max_length}",
                 *args.overrides]
    recipe = load_recipe(args.recipe or DEFAULT_RECIPE[args.shape], overrides)
    if not torch.cuda.is_available():  # bf16 autocast / paged optimizers are GPU settings
        recipe = load_recipe(args.recipe or DEFAULT_RECIPE[args.shape],
                             overrides + ["training.bf16=false", "training.optim=adamw_torch"])

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_random_model(args.shape, Path(tmp) / "model", args.seed)
        recipe = recipe.model_copy(update={"output_dir": str(Path(tmp) / "run")})
        model = load_model(recipe, str(model_dir), None)
        vocab = model.config.vocab_size
        g = torch.Generator().manual_seed(args.seed)
        n_rows = args.batch_size * (args.warmup_steps + args.steps)
        ids = torch.randint(3, vocab, (n_rows, args.max_length), generator=g).tolist()
        dataset = Dataset.from_dict({"input_ids": ids, "labels": ids})
        tokenizer = train_tokenizer([], vocab_size=300)  # only its pad token is used
        timer = StepTimer()
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        trainer = SFTTrainer(model=model, args=sft_config(recipe, Path(recipe.output_dir)), train_dataset=dataset,
                             processing_class=tokenizer, peft_config=lora_config(recipe), callbacks=[timer])
        trainer.train()

    timed = timer.times[args.warmup_steps - 1:] if args.warmup_steps else timer.times
    seconds = timed[-1] - timed[0] if len(timed) > 1 else float("nan")
    tokens = args.batch_size * args.max_length * (len(timed) - 1)
    device, peak_gib, memory_kind = device_and_peak_memory()
    result = {
        "shape": args.shape, "max_length": args.max_length, "batch_size": args.batch_size,
        "timed_steps": len(timed) - 1, "tokens_per_s": round(tokens / seconds, 1),
        "s_per_step": round(seconds / max(1, len(timed) - 1), 3),
        "peak_memory_gib": round(peak_gib, 2), "memory": memory_kind, "device": device,
        "quantization": recipe.quantization.model_dump(), "lora_r": recipe.lora.r,
        "gradient_checkpointing": recipe.training.gradient_checkpointing,
        "torch": library_versions()["torch"], "bitsandbytes": library_versions()["bitsandbytes"],
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
