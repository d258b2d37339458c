"""The stacked response head when it cannot be cross-validated: all training responses of one source
(one document with many answers) or a very small set give a run without a head and the reason recorded, not a
LightGBM crash; a run trained again in its directory without a head leaves no stale response_head.txt."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_stacked_train import stacked_recipe, synthetic_records

from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.stacked.recipe import ResponseSection
from ragtruth_spans.detectors.stacked.response import RESPONSE_FEATURES, HeadNotFitted, fit_head
from ragtruth_spans.detectors.train import train
from ragtruth_spans.runs.manifest import MANIFEST_KEY


@pytest.mark.parametrize(("groups", "reason"), [
    (["doc"] * 20, "share one source"),
    (["a", "b"], "could not cross-validate it on 2 responses"),
])
def test_fit_head_says_why_it_cannot_cross_validate(groups, reason):
    x = np.random.default_rng(0).normal(size=(len(groups), len(RESPONSE_FEATURES)))
    y = (np.arange(len(groups)) % 2).astype(np.int8)
    with pytest.raises(HeadNotFitted, match=reason):
        fit_head(x, y, groups, ResponseSection())


def test_one_source_trains_without_a_head_and_records_why(tmp_path):
    data = tmp_path / "data"
    one_source = [r.__class__(**{**r.__dict__, "source_id": "the-only-document"})
                  for r in synthetic_records(12, 0, "train")]
    write_records(data / "train.jsonl", one_source)
    write_records(data / "dev.jsonl", synthetic_records(4, 1, "dev"))
    out = tmp_path / "run"
    recipe = stacked_recipe(data, out)
    recipe["combiner"]["oof_folds"] = 2
    train(validate_recipe(recipe))
    info = json.loads((out / "run_info.json").read_text())
    assert info["response"] is None and "share one source" in info["response_head_dropped"]["reason"]
    assert not (out / "response_head.txt").exists()
    assert len(load_detector(out).detect_batch(synthetic_records(2, 3, "test"))) == 4


def test_resume_without_the_head_drops_a_stale_head_file(tmp_path):
    data = tmp_path / "data"
    write_records(data / "train.jsonl", synthetic_records(16, 0, "train"))
    write_records(data / "dev.jsonl", synthetic_records(6, 1, "dev"))
    out = tmp_path / "run"
    train(validate_recipe(stacked_recipe(data, out)))
    (out / "run_info.json").unlink()  # a try killed after writing its head: unfinished, resumable
    (out / "response_head.txt").write_text("tree\nthe head of the earlier try\n", encoding="utf-8")
    recipe = stacked_recipe(data, out)
    recipe["response"] = None
    train(validate_recipe(recipe), resume=True)
    info = json.loads((out / "run_info.json").read_text())
    assert info["response"] is None and not (out / "response_head.txt").exists()
    assert "response_head.txt" not in info[MANIFEST_KEY]
    load_detector(out)
