"""Training token classifiers on CPU: a tiny random BERT (full fine-tuning) and the tiny random Llama with a real
4-bit NF4 base + LoRA + a trainable head (QLoRA), through `ragtruth_spans.detectors.train.train`; both overfit four
records, are loaded by `load_detector` and reproduce the gold spans; threshold tuning, resume, the CLI."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from conftest import interrupt_training_at, make_record, overfit_records
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.token_classification.train import WindowStats, build_examples, weighted_loss
from ragtruth_spans.detectors.train import train


def token_cls_recipe(prepared: Path, output_dir: Path, architecture: str, **overrides) -> dict:
    """A tiny-model token-classification recipe that memorises :func:`overfit_records` in 60 steps."""
    recipe = {
        "kind": "token-classification", "model": {"name_or_path": "tiny", "tiny": {"architecture": architecture}},
        "labels": {"scheme": "typed"},
        "data": {"prepared_dir": str(prepared), "eval_split": "dev", "max_length": 128},
        "windows": {"min_context_tokens": 16, "response_overlap": 4},
        "training": {"max_steps": 60, "learning_rate": 3e-3 if architecture == "bert" else 1e-2,
                     "lr_scheduler": "constant", "warmup_ratio": 0.0, "per_device_batch_size": 4,
                     "gradient_accumulation_steps": 1, "gradient_checkpointing": False, "bf16": False,
                     "max_grad_norm": 1.0, "logging_steps": 10, "save_steps": 60, "eval_steps": 60, "seed": 0},
        "output_dir": str(output_dir)}
    if architecture == "llama":  # a random base: its embeddings learn too (as in the tiny-cpu recipe)
        recipe.update(finetuning="lora", quantization={"enabled": True, "compute_dtype": "float32"},
                      lora={"r": 16, "alpha": 16, "dropout": 0.0, "modules_to_save": ["embed_tokens"]})
    for key, value in overrides.items():
        recipe[key] = {**recipe.get(key, {}), **value} if isinstance(value, dict) else value
    return recipe


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("token-cls-data")
    write_records(root / "train.jsonl", overfit_records())
    write_records(root / "dev.jsonl", overfit_records())
    return root


@pytest.fixture(scope="module", params=["bert", "llama"])  # its tests are slow: it trains two models
def trained(request, prepared, tmp_path_factory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp(f"token-cls-{request.param}") / "run"
    train(validate_recipe(token_cls_recipe(prepared, out, request.param)))
    return request.param, out


@pytest.mark.slow
def test_both_paths_memorise_the_records_and_load_back(trained):
    architecture, out = trained
    info = json.loads((out / "run_info.json").read_text())
    assert info["kind"] == "token-classification" and info["labels"][0] == "O" and len(info["labels"]) == 5
    assert info["detection"]["tuned"] and info["detection"]["dev"]["f1"] == 1.0
    # the base is a local folder (the tiny model under base_model/): no hub commit to record
    assert "resolved_revision" in info["base_model"] and info["base_model"]["resolved_revision"] is None
    detector = load_detector(out, device="cpu")
    records = overfit_records()
    for record, detection in zip(records, detector.detect_batch(records)):
        assert [(s.start, s.end, s.type) for s in detection.spans] == [(s.start, s.end, s.type) for s in record.spans]
        assert all(s.score > 0.9 for s in detection.spans) and detection.diagnostics == {"windows": 1}
        assert (detection.score > 0.9) == bool(record.spans)
    if architecture == "llama":  # QLoRA: the base is 4-bit NF4, the head and the embeddings are saved in full
        import bitsandbytes as bnb

        config = json.loads((out / "adapter_config.json").read_text())
        assert config["task_type"] == "TOKEN_CLS" and "score" in config["modules_to_save"]
        assert any(isinstance(m, bnb.nn.Linear4bit) for m in detector.model.modules())
        assert (out / "base_model" / "config.json").is_file()
    else:
        assert (out / "model.safetensors").is_file() and not (out / "adapter_config.json").exists()


@pytest.mark.slow
def test_threshold_option_and_run_default(trained):
    _, out = trained
    info = json.loads((out / "run_info.json").read_text())
    detector = load_detector(out, device="cpu")
    assert detector.threshold == info["detection"]["threshold"]
    assert detector.describe()["fingerprint"] == info["fingerprint"]
    records = overfit_records()
    strict = load_detector(out, device="cpu", threshold=0.99999)
    assert sum(len(d.spans) for d in strict.detect_batch(records)) < sum(len(r.spans) for r in records)
    with pytest.raises(InputError, match="threshold"):
        load_detector(out, threshold=1.5)
    with pytest.raises(InputError, match="do not apply"):
        load_detector(out, max_new_tokens=5)


def test_build_examples_label_response_tokens_only(prepared):
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    record = make_record("x", "Summary", "Evidence sentence one. " * 40, "The park opens in June and has a zoo.",
                         [("opens in June", "Evident Conflict")])
    tokenizer = train_bert_tokenizer([record.context, record.response], vocab_size=300)
    recipe = validate_recipe(token_cls_recipe(prepared, prepared / "unused", "bert",
                                              data={"max_length": 64}, labels={"scheme": "binary"}))
    stats = WindowStats()
    examples = build_examples([record], tokenizer, recipe, stats, best_only=False)
    assert stats.windows == len(examples) > 3 and stats.windows_used == stats.windows
    for example in examples:
        labelled = [label for label in example["labels"] if label != -100]
        assert len(labelled) == len(tokenizer(record.response, add_special_tokens=False)["input_ids"])
        assert 0 < sum(labelled) < len(labelled)
        assert len(example["input_ids"]) <= 64 and len(example["token_type_ids"]) == len(example["input_ids"])
    best = build_examples([record], tokenizer, recipe, WindowStats(), best_only=True)
    assert len(best) == 1


def test_run_info_records_the_commit_a_hub_base_resolved_to(prepared):
    from ragtruth_spans.detectors.token_classification.train import _Prepared, _run_info
    from ragtruth_spans.training.skeleton import SelectedData

    commit = "0123456789abcdef0123456789abcdef01234567"
    base = SimpleNamespace(config=SimpleNamespace(_commit_hash=commit))
    lora = SimpleNamespace(get_base_model=lambda: base)  # what PEFT wraps the base in
    recipe = validate_recipe(token_cls_recipe(prepared, prepared / "unused", "llama",
                                              model={"name_or_path": "example-org/llama-base", "revision": "main"}))

    def info(model, base_path):
        stats = WindowStats()
        data = _Prepared(None, base_path, "main", [], [], [], stats, None, "test",
                         SelectedData([], "test", stats, None, None, None))
        return _run_info(recipe, data, model, {}, None, {})["base_model"]

    assert info(lora, "example-org/llama-base") == {
        "name_or_path": "example-org/llama-base", "revision": "main", "resolved_revision": commit,
        "path": "example-org/llama-base", "local": False}
    assert info(base, "example-org/llama-base")["resolved_revision"] == commit
    assert info(lora, str(prepared))["resolved_revision"] is None  # a local folder has no hub commit


@pytest.mark.slow
@pytest.mark.parametrize("trained", ["llama"], indirect=True)  # LoRA; full fine-tuning saves the whole model
def test_a_lora_run_reloads_its_hub_base_at_the_recorded_commit(trained, tmp_path, monkeypatch):
    """A LoRA run on a hub base at ``revision: main`` loads the commit recorded at training time, not whatever
    ``main`` is now (the recipe's revision only when the run recorded none)."""
    import shutil

    import yaml

    from ragtruth_spans.detectors.token_classification import model as model_module

    _, out = trained
    run = tmp_path / "run"
    shutil.copytree(out, run, ignore=shutil.ignore_patterns("checkpoint-*", "base_model"))
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["model"].update(name_or_path="example-org/llama-base", revision="main")
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))
    commit = "0123456789abcdef0123456789abcdef01234567"
    info = json.loads((run / "run_info.json").read_text())
    info.pop("files_sha256")  # as a run written before manifests (which would refuse these edits themselves)
    info["base_model"]["resolved_revision"] = commit
    (run / "run_info.json").write_text(json.dumps(info))
    loaded = []

    class Loaded(Exception):
        pass

    def from_pretrained(path, kwargs, max_length):
        loaded.append((path, kwargs["revision"]))
        raise Loaded

    monkeypatch.setattr(model_module, "_from_pretrained", from_pretrained)
    with pytest.raises(Loaded):
        load_detector(run, device="cpu", load_in_4bit=False)
    info["base_model"]["resolved_revision"] = None
    (run / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(Loaded):
        load_detector(run, device="cpu", load_in_4bit=False)
    assert loaded == [("example-org/llama-base", commit), ("example-org/llama-base", "main")]


def _long_question_record(rid: str = "qa-long"):
    return make_record(rid, "QA", "Passage 1: Mount Kibo is the highest peak of Kilimanjaro.",
                       "Kibo is the highest peak.", [("highest peak", "Evident Conflict")],
                       question="Which of the peaks of the mountain is the highest one? " * 12)


def test_build_examples_skip_and_count_records_no_window_fits(prepared):
    from ragtruth_spans.models.tiny import train_bert_tokenizer
    from ragtruth_spans.reporting.console import training_data_summary

    records = [*overfit_records(), _long_question_record()]
    tokenizer = train_bert_tokenizer([t for r in records for t in (r.context, r.response, r.question or "")],
                                     vocab_size=300)
    recipe = validate_recipe(token_cls_recipe(prepared, prepared / "unused", "bert"))
    stats = WindowStats()
    examples = build_examples(records, tokenizer, recipe, stats, best_only=False)
    assert stats.no_windows == 1 and stats.no_windows_ids == ["qa-long"]
    assert {ex["id"] for ex in examples} == {r.id for r in overfit_records()}
    stats.records = stats.examples
    assert "1 records skipped (no window fits max_length=128): qa-long" in training_data_summary(stats, "x", 128).plain


def test_build_examples_refuse_an_untyped_span_with_typed_labels(prepared):
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    record = make_record("sum-9", "Summary", "The council approved a park.", "The council approved a zoo.",
                         [("a zoo", "Evident Baseless Info")])
    record.spans[0] = Span(record.spans[0].start, record.spans[0].end)  # no type
    tokenizer = train_bert_tokenizer([record.context, record.response], vocab_size=300)
    typed = validate_recipe(token_cls_recipe(prepared, prepared / "unused", "bert"))
    with pytest.raises(InputError, match="record 'sum-9': gold span") as caught:
        build_examples([record], tokenizer, typed, WindowStats(), best_only=False)
    assert caught.value.field == "spans[0].type"
    binary = validate_recipe(token_cls_recipe(prepared, prepared / "unused", "bert", labels={"scheme": "binary"}))
    assert build_examples([record], tokenizer, binary, WindowStats(), best_only=False)


@pytest.mark.slow
def test_training_skips_records_no_window_fits_and_records_them(tmp_path, caplog):
    data = tmp_path / "data"
    records = [*overfit_records(), _long_question_record()]
    write_records(data / "train.jsonl", records)
    write_records(data / "dev.jsonl", records)
    out = tmp_path / "run"
    with caplog.at_level(logging.INFO, logger="ragtruth_spans"):
        train(validate_recipe(token_cls_recipe(data, out, "bert", training={"max_steps": 2, "save_steps": 2,
                                                                             "eval_steps": 2})))
    printed = caplog.text
    assert printed.count("1 records skipped (no window fits max_length=128): qa-long") == 2  # train and dev
    info = json.loads((out / "run_info.json").read_text())
    for counts in (info["data"]["counts"], info["data"]["eval"]["counts"]):
        assert counts["no_windows"] == 1 and counts["no_windows_ids"] == ["qa-long"] and counts["records"] == 5
    assert info["detection"]["responses"] == 4  # the threshold is tuned on the dev records that have windows
    [detection] = load_detector(out, device="cpu").detect_batch([_long_question_record()])
    assert not detection.ok and "no room for the response" in detection.error
    every = tmp_path / "none-fit"
    write_records(every / "train.jsonl", [_long_question_record("a"), _long_question_record("b")])
    with pytest.raises(InputError, match="no training record fits data.max_length=128: all 2 were skipped"):
        train(validate_recipe(token_cls_recipe(every, tmp_path / "run2", "bert", data={"eval_split": None})))


def test_weighted_loss_counts_hallucinated_tokens_more():
    logits = torch.zeros(1, 3, 2)
    labels = torch.tensor([[0, 1, -100]])
    plain = weighted_loss(2, 1.0)({"logits": logits}, labels)
    weighted = weighted_loss(2, 3.0)({"logits": logits}, labels)
    assert plain.item() == pytest.approx(torch.log(torch.tensor(2.0)).item())
    assert weighted.item() == pytest.approx(2 * plain.item())  # (1 + 3) / 2 labelled tokens
    assert weighted_loss(2, 3.0)({"logits": logits}, labels, num_items_in_batch=4).item() == pytest.approx(
        plain.item())


@pytest.mark.slow
def test_resume_after_a_kill_and_fixed_threshold(prepared, tmp_path, monkeypatch):
    import transformers

    out = tmp_path / "run"
    recipe = validate_recipe(token_cls_recipe(prepared, out, "bert", detection={"threshold": 0.7},
                                              training={"max_steps": 4, "save_steps": 2, "eval_steps": 2}))
    original_step = interrupt_training_at(monkeypatch, 2)  # the process dies after checkpoint-2 was saved
    with pytest.raises(KeyboardInterrupt):
        train(recipe)
    assert (out / "checkpoint-2").is_dir() and not (out / "run_info.json").exists()
    with pytest.raises(InputError, match="not finished"):
        load_detector(out)
    monkeypatch.setattr(transformers.Trainer, "training_step", original_step)
    result = train(recipe)
    info = json.loads((out / "run_info.json").read_text())
    assert result.resumed_from.endswith("checkpoint-2") and info["resumed_from"].endswith("checkpoint-2")
    assert info["detection"]["threshold"] == 0.7 and not info["detection"]["tuned"]
    assert set(info["detection"]["aggregations"]) == {"mean", "max", "min", "best", "by-type"}


@pytest.mark.slow
def test_cli_train_predict_evaluate(prepared, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    import yaml

    recipe.write_text(yaml.safe_dump(token_cls_recipe(prepared, tmp_path / "run", "bert")), encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["train", str(recipe), "--set", "training.max_steps=2",
                                 "--set", "training.save_steps=2", "--set", "training.eval_steps=2"])
    assert result.exit_code == 0, result.output
    pred = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["predict", "--model", str(tmp_path / "run"), "--data", str(prepared / "dev.jsonl"),
                                 "--out", str(pred), "--threshold", "0.5", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "windows: 4" in result.output
    rows = [json.loads(line) for line in pred.read_text().splitlines()]
    assert all(0.0 <= row["score"] <= 1.0 and row["windows"] == 1 for row in rows)
    result = runner.invoke(app, ["evaluate", "--gold", str(prepared / "dev.jsonl"), "--pred", str(pred)])
    assert result.exit_code == 0, result.output
    assert "AUROC" in result.output
    assert "gold responses overlap the training data of" in result.output  # named by pred.jsonl.meta.json
    result = runner.invoke(app, ["predict", "--model", "numbers", "--data", str(prepared / "dev.jsonl"),
                                 "--out", str(tmp_path / "n.jsonl"), "--threshold", "0.5"])
    assert result.exit_code == 2 and "do not apply" in result.output


@pytest.mark.slow
def test_select_best_with_a_token_classifier_run(trained, tmp_path):
    """`select-best` works on a token-classification run: of two candidates for the clean QA record's context, the
    one the classifier memorised as clean wins over the one it memorised as hallucinated."""
    _, out = trained
    clean, hallucinated = overfit_records()[3], overfit_records()[0]
    (tmp_path / "context.txt").write_text(clean.context, encoding="utf-8")
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text("".join(json.dumps({"id": cid, "response": text}) + "\n" for cid, text in
                                  (("made-up", hallucinated.response), ("clean", clean.response))), encoding="utf-8")
    result = CliRunner().invoke(app, ["select-best", "--model", str(out), "--context", f"@{tmp_path / 'context.txt'}",
                                      "--candidates", str(candidates), "--question", clean.question,
                                      "--device", "cpu", "--json", str(tmp_path / "choice.json")])
    assert result.exit_code == 0, result.output
    choice = json.loads((tmp_path / "choice.json").read_text(encoding="utf-8"))
    assert choice["id"] == "clean" and choice["strategy"] == "max-confidence"  # auto: every candidate has a score
