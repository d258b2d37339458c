"""A broken run directory is a one-line error naming the file (exit 2), never a traceback or a hub lookup."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.jsonl import write_records


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _base_path_missing(run: Path) -> None:
    shutil.rmtree(run / "base_model")
    recipe = yaml.safe_load((run / "recipe.yaml").read_text())
    recipe["model"]["name_or_path"] = "/nonexistent/models/llama"
    (run / "recipe.yaml").write_text(yaml.safe_dump(recipe))


BREAKAGES = {
    "missing adapter weights": (lambda run: (run / "adapter_model.safetensors").unlink(),
                                "the adapter weights are missing"),
    "adapter config not JSON": (lambda run: (run / "adapter_config.json").write_text("{r: 16"),
                                "adapter_config.json: not readable JSON"),
    "adapter rank not an integer": (lambda run: (run / "adapter_config.json").write_text(json.dumps(
        {**json.loads((run / "adapter_config.json").read_text()), "r": "sixteen"})),
        "adapter_config.json, field 'r': must be a positive integer"),
    "truncated adapter weights": (lambda run: _truncate(run / "adapter_model.safetensors"),
                                  "adapter_model.safetensors: truncated weights file"),
    "empty base weights": (lambda run: (run / "base_model" / "model.safetensors").write_bytes(b""),
                           "model.safetensors: missing or empty weights file"),
    "missing tokenizer": (lambda run: (run / "tokenizer_config.json").unlink(), "tokenizer files are missing"),
    "base model path missing": (_base_path_missing, "/nonexistent/models/llama: base model folder not found"),
}


@pytest.mark.parametrize("case", sorted(BREAKAGES))
def test_broken_run_directory_is_one_clear_line(case, overfit_run, tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(overfit_run.output_dir, run)
    info = json.loads((run / "run_info.json").read_text())
    info.pop("files_sha256", None)  # the family's own checks, as for a run written before manifests
    (run / "run_info.json").write_text(json.dumps(info))
    breaker, message = BREAKAGES[case]
    breaker(run)
    data = tmp_path / "data.jsonl"
    write_records(data, overfit_run.records[:1])

    def no_network(*args, **kwargs):
        raise AssertionError("a local run directory must not touch the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    result = CliRunner().invoke(app, ["predict", "--model", str(run), "--data", str(data), "--out",
                                      str(tmp_path / "pred.jsonl"), "--device", "cpu"], terminal_width=400)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], result.output


@pytest.mark.parametrize("case", ["truncated adapter weights", "adapter config not JSON", "missing tokenizer"])
def test_the_manifest_names_the_broken_file_first(case, overfit_run, tmp_path: Path) -> None:
    """With its manifest, a run names the file that changed or went missing before any family check."""
    run = tmp_path / "run"
    shutil.copytree(overfit_run.output_dir, run)
    BREAKAGES[case][0](run)
    data = tmp_path / "data.jsonl"
    write_records(data, overfit_run.records[:1])
    result = CliRunner().invoke(app, ["predict", "--model", str(run), "--data", str(data), "--out",
                                      str(tmp_path / "pred.jsonl"), "--device", "cpu"], terminal_width=400)
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert result.exit_code == 2 and len(errors) == 1, result.output
    assert "changed since the run was written" in errors[0] or "missing: the run's manifest" in errors[0]
