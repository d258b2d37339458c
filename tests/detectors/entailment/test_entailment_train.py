"""Training the entailment family at toy scale: `ragtruth-spans train` dispatches on `kind: entailment`, the run
directory is a standard Hugging Face sequence-classification folder with run_info.json and metrics.json, the one
loader loads it, the loss goes down, and a killed run resumes from its last checkpoint (not bit for bit: the
``Trainer`` draws the next epoch's order from the global RNG before it restores the checkpoint's, measured here as
a 0.009 largest weight difference after 12 steps)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")


def _train(recipe, **kwargs):
    from ragtruth_spans.detectors.train import train

    return train(recipe, **kwargs)


@pytest.mark.slow
def test_train_writes_a_hugging_face_folder_with_run_info_and_metrics_and_the_loader_loads_it(nli_dir, tmp_path,
                                                                                             tiny_recipe):
    from ragtruth_spans.cli import app
    from ragtruth_spans.detectors.entailment.detector import EntailmentDetector
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

    out = tmp_path / "run"
    recipe = tiny_recipe(nli_dir, out)
    sets = [f"{key}={value}" for key, value in (
        ("model.name_or_path", "tiny"), ("model.max_length", 64), ("training.per_device_batch_size", 8),
        ("stages", json.dumps(recipe.model_dump(mode="json")["stages"])), ("training.save_steps", 3),
        ("detection.window_sentences", 1), ("output_dir", out))]
    result = CliRunner().invoke(app, ["train", "entailment-minilm", *[x for s in sets for x in ("--set", s)]])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "config.json").read_text())
    assert config["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    assert not list(out.glob("checkpoint-*"))  # the stages' checkpoints go once the run is finished
    info = json.loads((out / "run_info.json").read_text())
    assert info["kind"] == "entailment" and info["max_length"] == 64
    assert info["base_model"]["weights_sha256"] == file_sha256(out / "base_model" / "model.safetensors")
    train_file = str(nli_dir / "train.jsonl")
    assert info["data"]["files_sha256"][train_file] == file_sha256(nli_dir / "train.jsonl")
    assert info["data_sha256"][train_file] == file_sha256(nli_dir / "train.jsonl")  # the training fingerprint
    (stage,) = info["stages"]
    assert stage["pairs"] == 48 and stage["counts"]["fever_rte"] == {"entailment": 4, "not_entailment": 8}
    assert stage["steps"] == 12 and stage["dev"]["sources"]["all"]["pairs"] == 12
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"dev", "test"} and metrics["test"]["sources"]["fever_rte"]["three_way_accuracy"] is None
    assert metrics["test"]["sources"]["snli"]["three_way_pairs"] == 9
    detector = load_detector(out, threshold=0.9)
    assert isinstance(detector, EntailmentDetector) and detector.threshold == 0.9
    assert (detector.top_k, detector.window_sentences) == (3, 1)  # the run's detection settings
    cheaper = load_detector(out, windows=1, window_sentences=2)
    assert (cheaper.top_k, cheaper.window_sentences) == (1, 2)
    with pytest.raises(InputError, match="option windows must be a whole number"):
        load_detector(out, windows=0)
    detector._encoder = SentenceEncoder(runtime="torch")  # the encoder's ONNX export is tested elsewhere
    response = "The hotel is red. It opened in 1950."
    found = detector.detect(context="The hotel in the old town is red. It opened in 1950.", response=response,
                            task="Summary")
    assert all((s.start, s.end) in {(0, 17), (18, 36)} for s in found.spans) and 0.0 <= found.score <= 1.0


def _loss(folder: Path, pairs) -> float:
    from ragtruth_spans.detectors.entailment.loss import masked_nli_loss
    from ragtruth_spans.detectors.entailment.model import load_classifier, load_tokenizer

    torch.manual_seed(0)
    model, tokenizer = load_classifier(str(folder)).eval(), load_tokenizer(str(folder))
    batch = tokenizer([p.premise for p in pairs], [p.hypothesis for p in pairs], padding=True, return_tensors="pt")
    with torch.no_grad():
        return masked_nli_loss(model(**batch).logits, torch.tensor([p.label for p in pairs])).item()


@pytest.mark.slow
def test_the_training_loss_goes_down(nli_dir, tmp_path, tiny_recipe):
    from ragtruth_spans.detectors.entailment.pairs import read_pairs

    out = tmp_path / "run"
    _train(tiny_recipe(nli_dir, out, f"stages=[{{name: nli, data: [{nli_dir}], epochs: 16, learning_rate: 0.001}}]"))
    pairs = read_pairs(nli_dir / "train.jsonl")
    before, after = _loss(out / "base_model", pairs), _loss(out, pairs)
    assert after < 0.8 * before, (before, after)


class Interrupt(Exception):
    pass


def _stop_after_save(step: int):
    from transformers import TrainerCallback

    class StopAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == step:
                raise Interrupt(f"killed after the checkpoint of step {step}")

    return StopAfterSave()


@pytest.mark.slow
def test_a_killed_run_resumes_from_its_last_checkpoint_and_other_settings_are_refused(
        nli_dir, tmp_path, tiny_recipe):
    from safetensors.torch import load_file

    whole, killed = tmp_path / "whole", tmp_path / "killed"
    _train(tiny_recipe(nli_dir, whole))
    with pytest.raises(Interrupt):
        _train(tiny_recipe(nli_dir, killed), callbacks=[_stop_after_save(6)])
    assert (killed / "checkpoint-stage-1" / "checkpoint-6").is_dir() and not (killed / "run_info.json").exists()
    with pytest.raises(InputError, match=r"differs in: recipe\.stages"):
        _train(tiny_recipe(nli_dir, killed, f"stages=[{{name: nli, data: [{nli_dir}], epochs: 2, "
                                            "learning_rate: 0.002}]"))
    result = _train(tiny_recipe(nli_dir, killed))
    info = json.loads((killed / "run_info.json").read_text())
    assert info["stages"][0]["resumed_from"].endswith("checkpoint-6") and result.output_dir == killed
    whole_info = json.loads((whole / "run_info.json").read_text())
    assert info["stages"][0]["steps"] == whole_info["stages"][0]["steps"] == 12
    # the resumed session trained only the steps after the checkpoint: its own mean loss covers steps 7 to 12
    assert info["stages"][0]["train"]["train_loss"] != info["stages"][0]["train"]["train_loss_whole_run"]
    assert load_file(killed / "model.safetensors").keys() == load_file(whole / "model.safetensors").keys()
