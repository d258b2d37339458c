"""Every trainable decoder family on a GGUF base (``model.gguf_file``), at tiny scale: the tiny Llama written as
GGUF is converted once, loaded in 4-bit NF4 + LoRA exactly like a hub model, memorises four records, records its
provenance in run_info.json, and is reloaded for detection only on the same GGUF file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import overfit_records

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.train import train

pytest.importorskip("gguf")

TRAINING = {"max_steps": 60, "learning_rate": 1e-2, "lr_scheduler": "constant", "warmup_ratio": 0.0,
            "per_device_batch_size": 4, "gradient_accumulation_steps": 1, "gradient_checkpointing": False,
            "bf16": False, "max_grad_norm": 1.0, "logging_steps": 20, "save_steps": 60, "eval_steps": 60, "seed": 0}


@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> tuple[Path, Path, Path]:
    """``(prepared dir, GGUF file, cache root)``; the cache is set for the whole module."""
    from tests.models.tiny_gguf import build_tiny_gguf

    root = tmp_path_factory.mktemp("gguf-runs")
    records = overfit_records()
    write_records(root / "prepared" / "train.jsonl", records)
    _, path = build_tiny_gguf(root / "model", texts=[t for r in records for t in (r.context, r.response,
                                                                                   r.question or "")])
    return root / "prepared", path, root / "cache"


@pytest.fixture(autouse=True)
def _cache(setup, monkeypatch):
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(setup[2]))


def recipe(kind: str, prepared: Path, gguf: Path, out: Path) -> dict:
    model = {"name_or_path": str(gguf.parent), "gguf_file": gguf.name, "dtype": "float32"}
    common = {"model": model, "quantization": {"enabled": True, "compute_dtype": "float32"},
              "data": {"prepared_dir": str(prepared), "max_length": 512}, "training": dict(TRAINING),
              "output_dir": str(out)}
    if kind == "generative":  # a random base: its embeddings and output layer learn too (as in tiny-cpu)
        return {**common, "lora": {"r": 16, "alpha": 16, "dropout": 0.0,
                                   "modules_to_save": ["embed_tokens", "lm_head"]}}
    return {**common, "kind": "token-classification", "finetuning": "lora", "labels": {"scheme": "typed"},
            "data": {**common["data"], "max_length": 128}, "detection": {"threshold": 0.5},
            "windows": {"min_context_tokens": 16, "response_overlap": 4},
            "lora": {"r": 16, "alpha": 16, "dropout": 0.0, "modules_to_save": ["embed_tokens"]}}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["generative", "token-classification"])
def test_a_gguf_base_trains_records_provenance_and_reloads(kind, setup, tmp_path):
    import hashlib

    prepared, gguf, cache = setup
    out = tmp_path / "run"
    train(validate_recipe(recipe(kind, prepared, gguf, out)))
    base = json.loads((out / "run_info.json").read_text())["base_model"]
    sha = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert base["path"] == str(cache / "gguf" / sha)
    assert {k: base["gguf"][k] for k in ("file", "sha256", "quantized", "package")} == {
        "file": "tiny.gguf", "sha256": sha, "quantized": "Q8_0", "package": None}
    assert not (out / "base_model").exists()  # the base is the cached conversion, not a copy in the run
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == base["path"]

    records = overfit_records()
    # generative: a small answer reserve leaves the whole prompt in the budget (max_length - max_new_tokens)
    options = {"max_new_tokens": 64} if kind == "generative" else {}
    detections = load_detector(out, device="cpu", **options).detect_batch(records)
    for record, detection in zip(records, detections):  # the GGUF base learned: gold spans come back exactly
        assert detection.error is None
        assert [(s.start, s.end) for s in detection.spans] == [(s.start, s.end) for s in record.spans]

    info = json.loads((out / "run_info.json").read_text())
    info["base_model"]["gguf"]["sha256"] = "0" * 64  # as if the GGUF file had changed since training
    info.pop("files_sha256")  # as a run written before manifests (which would refuse the edit itself)
    (out / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="trained on the GGUF file with sha256 0000"):
        load_detector(out, device="cpu")
