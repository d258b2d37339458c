"""On a real (tiny) stacked run: an edited combiner.txt is refused on load, a damaged one is one clean
error (never an abort, nothing on stdout), and absurd decision values are refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_stacked_train import stacked_recipe, synthetic_records
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.stacked import combiner
from ragtruth_spans.detectors.train import train
from ragtruth_spans.runs.manifest import content_fingerprint


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stacked-run")
    write_records(root / "train.jsonl", synthetic_records(16, 0, "train"))
    write_records(root / "dev.jsonl", synthetic_records(6, 1, "dev"))
    write_records(root / "test.jsonl", synthetic_records(6, 2, "test"))
    train(validate_recipe(stacked_recipe(root, root / "run", [{"name": "numbers", "detector": "numbers"}])))
    return root / "run"


def _copy(run: Path, tmp_path: Path) -> Path:
    import shutil

    return Path(shutil.copytree(run, tmp_path / "run"))


def test_the_fingerprint_reported_covers_the_combiner(run):
    info = json.loads((run / "run_info.json").read_text(encoding="utf-8"))
    assert "combiner.txt" in info["files_sha256"] and info["fingerprint"] == content_fingerprint(info)
    later = {"response_head.txt"} & {p.name for p in run.iterdir()}  # a file the family added after the manifest
    assert later <= set(info["files_sha256"])  # was written: covered without any change here
    assert load_detector(run).describe()["fingerprint"] == info["fingerprint"]


def test_an_edited_combiner_of_the_same_length_is_refused_by_load_and_by_a_resume(run, tmp_path):
    copy = _copy(run, tmp_path)
    data = run.parent / "test.jsonl"
    out = tmp_path / "pred.jsonl"
    result = CliRunner().invoke(app, ["-q", "predict", "--model", str(copy), "--data", str(data), "--out", str(out),
                                      "--limit", "3"])
    assert result.exit_code == 0, result.output
    text = (copy / "combiner.txt").read_text(encoding="utf-8")
    edited = text.replace("shrinkage=1\n", "shrinkage=9\n", 1)
    assert len(edited) == len(text) and edited != text
    (copy / "combiner.txt").write_text(edited, encoding="utf-8")
    with pytest.raises(InputError, match=r"combiner.txt: changed since the run was written"):
        load_detector(copy)
    result = CliRunner().invoke(app, ["-q", "predict", "--model", str(copy), "--data", str(data), "--out", str(out)])
    assert result.exit_code == 2 and "combiner.txt: changed since the run was written" in result.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 3


def _damaged(text: str) -> dict[str, bytes]:
    cut = text.index("Tree=3")
    return {"truncated-in-header": text[:200].encode(), "truncated-in-trees": text[:cut + 40].encode(),
            "truncated-before-end": text[:text.index("end of trees")].encode(),
            "garbage": b"\x00\xff" * 300, "text-garbage": b"hello world\n" * 50,
            "bad-number": text.replace("leaf_value=", "leaf_value=x", 1).encode(),
            "bad-child": text.replace("left_child=-1", "left_child=99", 1).encode()}


def test_a_damaged_combiner_is_one_clean_error_in_a_process_that_survives(run, tmp_path):
    variants = _damaged((run / "combiner.txt").read_text(encoding="utf-8"))
    for name, data in variants.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "combiner.txt").write_bytes(data)
    code = ("import sys; from pathlib import Path; from ragtruth_spans.core.errors import InputError\n"
            "from ragtruth_spans.detectors.stacked import combiner\n"
            f"for name in {sorted(variants)!r}:\n"
            f"    try:\n        combiner.load(Path({str(tmp_path)!r}) / name)\n        print('LOADED', name)\n"
            "    except InputError as exc:\n        print('ERROR', exc, file=sys.stderr)\n")
    repo = str(Path(__file__).resolve().parents[3])  # this checkout's code, whatever is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, (done.returncode, done.stderr[-500:])  # never 134 (abort) nor a traceback
    assert done.stdout == ""  # nothing loaded, and LightGBM said nothing on stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert len(errors) == len(variants) and all("combiner.txt" in line for line in errors), done.stderr


@pytest.mark.parametrize("decision", [
    {"thresholds": {"*": "abc"}}, {"thresholds": {"*": None}}, {"thresholds": {"*": "nan"}},
    {"thresholds": {"*": -5}}, {"thresholds": {"*": 0.5}, "max_word_gap": [1]},
    {"thresholds": {"*": 0.5}, "response_threshold": float("inf")}, ["not", "an", "object"],
])
def test_decision_values_are_validated(decision):
    with pytest.raises(InputError):
        combiner.Decision.from_dict(decision)


def test_a_damaged_response_head_is_one_clean_error(tmp_path):
    import lightgbm
    import numpy as np

    from ragtruth_spans.detectors.stacked import response

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, len(response.RESPONSE_FEATURES)))
    booster = lightgbm.train({"objective": "binary", "verbose": -1, "num_leaves": 4, "seed": 0},
                             lightgbm.Dataset(x, (x[:, 0] > 0).astype(float),
                                              feature_name=list(response.RESPONSE_FEATURES)), 10)
    (tmp_path / "good").mkdir()
    response.save(booster, tmp_path / "good", 10)
    assert response.load(tmp_path / "good").num_feature() == len(response.RESPONSE_FEATURES)
    text = (tmp_path / "good" / response.HEAD_FILE).read_text(encoding="utf-8")
    for name, data in _damaged(text).items():
        (tmp_path / name).mkdir()
        (tmp_path / name / response.HEAD_FILE).write_bytes(data)
        with pytest.raises(InputError, match=response.HEAD_FILE):
            response.load(tmp_path / name)


def test_the_run_records_the_fingerprints_of_what_it_trained_and_tuned_on(run):
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.evaluation.overlap import TRAINED_ON_FILE, TrainedOn, text_fingerprint
    from ragtruth_spans.runs.run_dir import read_trained_on

    info = json.loads((run / "run_info.json").read_text(encoding="utf-8"))
    trained = read_trained_on(run)
    assert TRAINED_ON_FILE in info["files_sha256"] and info["trained_on"]["records"] == dict(trained.records)
    assert trained.records["eval"] == 12 and trained.records["train"] >= 32  # augmented records come on top
    seen = read_records(run.parent / "train.jsonl") + read_records(run.parent / "dev.jsonl")
    assert {text_fingerprint(r.response) for r in seen} <= trained.responses
    assert {text_fingerprint(r.context) for r in seen} <= trained.sources
    unseen = read_records(run.parent / "test.jsonl")
    assert not {text_fingerprint(r.response) for r in unseen} & trained.responses
    assert isinstance(TrainedOn.read(run / TRAINED_ON_FILE), TrainedOn)
