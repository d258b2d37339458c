"""One set of load options: predict, detect, serve, select-best and benchmark take the same flags (benchmark also
per detector, ``NAME[k=v,...]``), read into one :class:`DetectorOptions` by one KEY=VALUE parser, so an option means
the same on the command line, in a benchmark spec and over HTTP; ``threshold`` reaches every family that has one
(stacked included); the operating point used is recorded in ``OUT.meta.json`` and shown by ``/v1/model``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import typer
from conftest import make_record
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.cli.common import LoadFlags, detector_names
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.base import operating_point
from ragtruth_spans.detectors.family import named_detectors
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.options import DetectorOptions
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.train import train
from ragtruth_spans.pipeline.benchmark import parse_detectors

LOAD_FLAGS = {"--device", "--batch-size", "--threshold", "--backend", "--max-new-tokens", "--load-in-4bit",
              "--aggregation", "--runtime", "--option"}
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


def test_model_help_lists_every_registry_name_in_every_command() -> None:
    names = ["default", *named_detectors()]
    for name in ("predict", "detect", "serve", "select-best", "benchmark"):
        result = CliRunner().invoke(app, [name, "--help"], env={"COLUMNS": "2000", "TERMINAL_WIDTH": "2000"})
        assert result.exit_code == 0, result.output
        assert detector_names() in result.output, name
        assert all(detector in result.output for detector in names), name


JUDGE_ITEMS = ["base_url=http://127.0.0.1:9/v1", "model=tiny", "extra_body.top_k=5", "temperature=0.5"]


def test_an_option_means_the_same_on_the_command_line_and_in_a_benchmark_spec() -> None:
    from_flags = LoadFlags(option=JUDGE_ITEMS).options().load_kwargs()
    [spec] = parse_detectors(f"llm-judge[{','.join(JUDGE_ITEMS)}]")
    assert spec.options == from_flags == {"base_url": "http://127.0.0.1:9/v1", "model": "tiny",
                                          "extra_body": {"top_k": 5}, "temperature": 0.5}
    assert spec.label == f"llm-judge[{','.join(JUDGE_ITEMS)}]"
    described = [load_detector("llm-judge", **options).describe() for options in (from_flags, spec.options)]
    assert described[0] == described[1] and described[0]["extra_body"] == {"top_k": 5}


def test_a_key_given_twice_is_refused_on_the_command_line_and_in_a_benchmark_spec(sample_test_file,
                                                                                    tmp_path: Path) -> None:
    data, _ = sample_test_file
    predicted = CliRunner().invoke(app, ["predict", "--model", "sim-overlap", "--data", str(data), "--out",
                                         str(tmp_path / "p.jsonl"), "--option", "threshold=0.3", "--option",
                                         "threshold=0.4"])
    benchmarked = CliRunner().invoke(app, ["benchmark", "--gold", str(data), "--out", str(tmp_path / "b"),
                                           "--detectors", "sim-overlap[threshold=0.3,threshold=0.4]"])
    for result, flag in ((predicted, "--option"), (benchmarked, "--detectors")):
        assert result.exit_code == 2, result.output
        [line] = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert f"field '{flag}'" in line and "threshold is given twice" in line
    assert not (tmp_path / "p.jsonl").exists() and not (tmp_path / "b").exists()


def test_the_options_served_over_http_are_the_options_given() -> None:
    from fastapi.testclient import TestClient

    from ragtruth_spans.serving.app import create_app

    given = LoadFlags(threshold=0.35, option=["batch_size=4"]).options()
    app = create_app(load_detector("sim-overlap", **given.load_kwargs()))
    with TestClient(app, base_url="http://localhost") as client:
        shown = client.get("/v1/model").json()["operating_point"]["load_options"]
    assert DetectorOptions.of(shown) == given
    assert parse_detectors("sim-overlap[threshold=0.35,batch_size=4]")[0].options == DetectorOptions.of(
        shown).load_kwargs()


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
    with TestClient(create_app(moved), base_url="http://localhost") as client:
        shown = client.get("/v1/model").json()["operating_point"]
    assert shown["thresholds"] == {"*": 0.97} and shown["load_options"] == {"threshold": 0.97}
