"""One set of load options: predict, detect, serve, select-best and benchmark take the same flags (benchmark also
per detector, ``NAME[k=v,...]``); ``threshold`` reaches every family that has one (stacked included); the
operating point used is recorded in ``OUT.meta.json`` and shown by ``/v1/model``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import typer
from conftest import make_record
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.base import operating_point
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.train import train
from ragtruth_spans.pipeline.benchmark import parse_detectors

LOAD_FLAGS = {"--device", "--batch-size", "--threshold", "--backend", "--max-new-tokens", "--load-in-4bit",
              "--aggregation", "--option"}
COMMANDS = ("predict", "detect", "serve", "select-best", "benchmark")


def command_options(name: str) -> dict[str, str]:
    command = typer.main.get_command(app).commands[name]
    return {opt: param.help or "" for param in command.params for opt in param.opts}


def test_the_five_commands_take_the_same_load_flags_with_the_same_help() -> None:
    helps = {name: command_options(name) for name in COMMANDS}
    for name, options in helps.items():
        assert set(options) >= LOAD_FLAGS, (name, sorted(LOAD_FLAGS - set(options)))
    for flag in LOAD_FLAGS:
        assert len({helps[name][flag] for name in COMMANDS}) == 1, flag


def test_benchmark_takes_options_per_detector_over_the_shared_flags() -> None:
    specs = parse_detectors("numbers,sim-overlap[threshold=0.3,batch_size=4],sim-overlap", {"batch_size": 8})
    assert [s.label for s in specs] == ["numbers", "sim-overlap[threshold=0.3,batch_size=4]", "sim-overlap"]
    assert specs[1].options == {"threshold": 0.3, "batch_size": 4} and specs[2].options == {"batch_size": 8}
    for bad in ("numbers[threshold=0.3", "numbers[a=[1]]", "numbers[threshold]"):
        with pytest.raises(InputError, match="--detectors"):
            parse_detectors(bad)


def test_a_threshold_the_family_cannot_take_is_refused_by_name() -> None:
    with pytest.raises(InputError, match="threshold"):
        load_detector("numbers", threshold=0.5)
    with pytest.raises(InputError, match="hybrid method has 2 thresholds"):
        load_detector("sim-hybrid", threshold=0.5)
    with pytest.raises(InputError, match=r"--detectors.*must be in \(0, 1\)"):
        parse_detectors("sim-overlap[threshold=1.0]")


def test_predict_records_the_operating_point(sample_test_file, tmp_path: Path) -> None:
    data, _ = sample_test_file
    out = tmp_path / "pred.jsonl"
    result = CliRunner().invoke(app, ["predict", "--model", "sim-overlap", "--data", str(data), "--out", str(out),
                                      "--threshold", "0.35", "--option", "batch_size=4"])
    assert result.exit_code == 0, result.output
    point = json.loads(out.with_name(out.name + ".meta.json").read_text())["operating_point"]
    assert point["thresholds"] == {"overlap": 0.35}
    assert point["load_options"] == {"threshold": 0.35, "batch_size": 4}


def _stacked_records(n_sources: int, seed: int, split: str) -> list:
    rng = random.Random(seed)
    records = []
    for s in range(n_sources):
        year = rng.randint(1900, 2000)
        context = f"The hotel in Oslo opened in {year}. It has {rng.randint(10, 90)} rooms."
        wrong = str(year + rng.randint(1, 9))
        for k, (response, spans) in enumerate([(f"The hotel opened in {year}.", []),
                                               (f"The hotel opened in {wrong}.", [(wrong, "Evident Conflict")])]):
            record = make_record(f"{split}-{s}-{k}", "Summary", context, response, spans, split=split)
            records.append(record.__class__(**{**record.__dict__, "source_id": f"{split}-src-{s}"}))
    return records


@pytest.fixture(scope="module")
def stacked_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stacked")
    for split, n, seed in (("train", 12, 0), ("dev", 4, 1)):
        write_records(root / f"{split}.jsonl", _stacked_records(n, seed, split))
    out = root / "run"
    train(validate_recipe({"kind": "stacked", "features": {"encoder": None},
                           "combiner": {"min_data_in_leaf": 5, "num_leaves": 7, "max_rounds": 30,
                                        "early_stopping_rounds": 10, "oof_folds": 2},
                           "decision": {"grid": [0.3, 0.5], "max_word_gap": [0]},
                           "data": {"prepared_dir": str(root), "eval_split": "dev"}, "output_dir": str(out)}))
    return out


def test_the_stacked_threshold_is_a_load_option_shown_by_v1_model(stacked_run: Path) -> None:
    from fastapi.testclient import TestClient

    from ragtruth_spans.serving.app import create_app

    tuned = load_detector(stacked_run)
    moved = load_detector(stacked_run, threshold=0.97)
    assert moved.describe()["thresholds"] == {"*": 0.97} and tuned.describe()["thresholds"] != {"*": 0.97}
    assert moved.describe()["max_word_gap"] == tuned.describe()["max_word_gap"]
    assert operating_point(moved)["load_options"] == {"threshold": 0.97}
    with TestClient(create_app(moved)) as client:
        shown = client.get("/v1/model").json()["operating_point"]
    assert shown["thresholds"] == {"*": 0.97} and shown["load_options"] == {"threshold": 0.97}
