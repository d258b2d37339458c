"""QLoRA training on CPU with a tiny random Llama: data building, end-to-end run, resume, and overfitting."""

from __future__ import annotations

import json

import pytest
import torch
from conftest import interrupt_training_at, make_record

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.generative import prompts
from ragtruth_spans.detectors.generative.prompts import skeleton_texts
from ragtruth_spans.detectors.generative.train import DataStats, build_examples
from ragtruth_spans.detectors.recipes import load_recipe, validate_recipe
from ragtruth_spans.detectors.train import train
from ragtruth_spans.models.tiny import train_tokenizer
from ragtruth_spans.reporting.console import training_data_summary
from ragtruth_spans.training.data import select_records
from ragtruth_spans.training.data_recipe import DataSection


def _records(n_spans: int, n_clean: int):
    spanned = [make_record(f"s{i}", "QA", "Passage: the sky is blue.", f"The sky is green {i}.",
                           [("green", "Evident Conflict")], question="Sky?") for i in range(n_spans)]
    clean = [make_record(f"c{i}", "Summary", "The sky is blue.", f"Sky blue {i}.", []) for i in range(n_clean)]
    return spanned + clean


def test_select_records_subsamples_clean_examples_seeded():
    records = _records(4, 10) + [make_record("d", "Data2txt", "{}", "x", [])]
    data = DataSection(tasks=["QA", "Summary"], clean_fraction=0.3, seed=1)
    stats = DataStats()
    kept = select_records(records, data, stats)
    assert (stats.records, stats.other_tasks, stats.with_spans, stats.clean, stats.clean_kept) == (15, 1, 4, 10, 3)
    assert len(kept) == 7 and sum(1 for r in kept if r.spans) == 4
    assert [r.id for r in kept] == [r.id for r in select_records(records, data, DataStats())]  # deterministic
    capped = select_records(records, DataSection(max_examples=5), stats2 := DataStats())
    assert len(capped) == 5 and stats2.over_max_examples == 10


def test_build_examples_drops_what_does_not_fit_whole_and_counts_it():
    """An example whose context would have to be cut is dropped (its label may rely on the cut evidence)."""
    long_context = "Passage: the sky is blue and the grass is green today. " * 60
    records = [make_record("long", "QA", long_context, "The sky is red.", [("red", "Evident Conflict")],
                           question="Sky?"),
               make_record("short", "Summary", "The sky is blue.", "The sky is blue.", [])]
    tokenizer = train_tokenizer([long_context], vocab_size=500, skeleton=skeleton_texts())
    stats = DataStats()
    examples = build_examples(records, tokenizer, 600, stats)
    assert (stats.examples, stats.shortened, stats.shortened_ids, stats.too_long) == (1, 1, ["long"], 0)
    [short] = examples
    assert short["id"] == "short" and short["completion"] == [{"role": "assistant", "content": "[]"}]
    assert short["prompt"][-1]["content"].endswith("Response to check:\nThe sky is blue.")
    full = tokenizer.apply_chat_template(short["prompt"] + short["completion"], tokenize=True,
                                         return_dict=True)["input_ids"]
    assert len(full) <= 600  # TRL's own truncation never fires, so target and EOS are always trained on
    assert len(build_examples(records, tokenizer, 5000, DataStats())) == 2  # with room, the long one is kept
    summary = training_data_summary(stats, "test", 600).plain
    assert "1 dropped (context too long for max_length=600)" in summary and "shortened" not in summary

    stats = DataStats()
    assert build_examples(records[:1], tokenizer, 120, stats) == []
    assert (stats.too_long, stats.too_long_ids) == (1, ["long"])


@pytest.mark.slow
def test_tiny_recipe_trains_with_4bit_and_resumes(tmp_path, monkeypatch):
    import transformers
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    out = tmp_path / "run"
    recipe = load_recipe("tiny-cpu", ["training.max_steps=3", "data.max_examples=8", "data.max_length=512",
                                      f"output_dir={out}", "training.save_steps=2"])
    original_step = interrupt_training_at(monkeypatch, 2)  # the process dies after checkpoint-2 was saved
    with pytest.raises(KeyboardInterrupt):
        train(recipe)
    assert (out / "checkpoint-2").is_dir() and not (out / "run_info.json").exists()
    monkeypatch.setattr(transformers.Trainer, "training_step", original_step)
    first = train(recipe)  # the same recipe: resumes the interrupted run
    for name in ("adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "tokenizer_config.json",
                 "recipe.yaml", "run_info.json", "base_model/config.json", "base_model/model.safetensors"):
        assert (out / name).is_file(), name
    info = json.loads((out / "run_info.json").read_text())
    assert info["quantization"]["enabled"] and info["quantization"]["quant_type"] == "nf4"
    counts = info["data"]["counts"]
    assert len(info["data"]["examples_sha256"]) == 64 and counts["examples"] > 0
    assert counts["examples"] + counts["shortened"] + counts["too_long"] == 8  # every record accounted for
    assert info["libraries"]["bitsandbytes"] != "not installed"
    assert info["resumed_from"].endswith("checkpoint-2") and first.resumed_from.endswith("checkpoint-2")
    assert first.stats.examples == counts["examples"] and info["fingerprint"]
    assert first.metrics["train_loss_whole_run"] > 0 and info["train_metrics"]["train_loss_whole_run"] > 0

    # The adapter loads back onto the saved base, quantized to 4-bit NF4 as in training.
    base = AutoModelForCausalLM.from_pretrained(out / "base_model", dtype=torch.float32,
                                                quantization_config=BitsAndBytesConfig(
                                                    load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                    bnb_4bit_compute_dtype=torch.float32))
    assert type(base.model.layers[0].self_attn.q_proj).__name__ == "Linear4bit"
    model = PeftModel.from_pretrained(base, out)
    tok = AutoTokenizer.from_pretrained(out)
    ids = prompts.prompt_token_ids(tok, prompts.build_messages("Summary", "An article.", "A summary."))
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits
    assert logits.shape == (1, len(ids), len(tok)) and torch.isfinite(logits).all()

    # a finished run is never rewritten: neither by the same recipe nor by another one
    with pytest.raises(InputError, match="finished"):
        train(recipe)
    longer = recipe.model_copy(update={"training": recipe.training.model_copy(update={"max_steps": 4})})
    with pytest.raises(InputError, match=r"differs in: recipe\.training\.max_steps"):
        train(longer)
    assert json.loads((out / "run_info.json").read_text()) == info


def test_overfit_reproduces_gold_spans(overfit_run):
    """Greedy decoding of the trained prompts gives back the gold span lists exactly (4-bit base + adapter)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

    out = overfit_run.output_dir
    tok = AutoTokenizer.from_pretrained(out)
    base = AutoModelForCausalLM.from_pretrained(out / "base_model", dtype=torch.float32,
                                                quantization_config=BitsAndBytesConfig(
                                                    load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                    bnb_4bit_use_double_quant=True,
                                                    bnb_4bit_compute_dtype=torch.float32))
    model = PeftModel.from_pretrained(base, out).eval()
    n_spans = [len(r.spans) for r in overfit_run.records]
    assert 0 in n_spans and 2 in n_spans
    for rec in overfit_run.records:
        ids = prompts.prompt_token_ids(tok, prompts.build_messages(rec.task_type, rec.context, rec.response,
                                                                   rec.question))
        with torch.no_grad():
            out_ids = model.generate(torch.tensor([ids]), max_new_tokens=80, do_sample=False)
        generated = tok.decode(out_ids[0][len(ids):], skip_special_tokens=True)
        assert generated == prompts.format_target(rec.spans), rec.id
        assert [(s["text"], s["type"]) for s in json.loads(generated)] == [(s.text, s.type) for s in rec.spans]


@pytest.mark.slow
def test_dev_loss_is_evaluated_and_the_best_checkpoint_kept(tmp_path):
    from conftest import overfit_recipe, overfit_records

    from ragtruth_spans.core.jsonl import write_records

    records = overfit_records()
    write_records(tmp_path / "prepared" / "train.jsonl", records)
    write_records(tmp_path / "prepared" / "dev.jsonl", records[:2])
    recipe = overfit_recipe(tmp_path / "prepared", tmp_path / "run", max_steps=4, eval_steps=2, save_steps=2)
    recipe = recipe.model_copy(update={"data": recipe.data.model_copy(update={"eval_split": "dev"})})
    result = train(recipe)
    info = json.loads((tmp_path / "run" / "run_info.json").read_text())
    assert info["data"]["eval"]["split"] == "dev" and info["data"]["eval"]["counts"]["examples"] == 2
    assert result.metrics["best_eval_loss"] > 0 and result.metrics["best_checkpoint"].endswith(("checkpoint-2",
                                                                                                 "checkpoint-4"))
    assert info["train_metrics"]["best_eval_loss"] == result.metrics["best_eval_loss"]
    bad = {**recipe.model_dump(), "training": {**recipe.training.model_dump(), "save_steps": 3}}
    with pytest.raises(InputError, match=r"save_steps=3 must be a multiple of training.eval_steps=2"):
        validate_recipe(bad)
