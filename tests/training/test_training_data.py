"""Which records a recipe trains on (the embedded sample honours data.split), and checks made before a model
is loaded (the logger a recipe names must be installed)."""

from __future__ import annotations

import sys

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.training.data import load_split
from ragtruth_spans.training.hf_models import check_report_to
from ragtruth_spans.training.recipe import DataSection


def test_the_embedded_sample_honours_the_split():
    train, where = load_split(DataSection(), "train")
    test, _ = load_split(DataSection(split="test"), "test")
    assert where.endswith("split train") and train and test
    assert {r.split for r in train} == {"train"} and {r.split for r in test} == {"test"}
    assert not {r.source_id for r in train} & {r.source_id for r in test}
    with pytest.raises(InputError, match="has the splits train and test, not 'dev'"):
        load_split(DataSection(), "dev")


def test_a_missing_logger_fails_before_any_model_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb → ImportError
    with pytest.raises(InputError, match=r"report_to=wandb needs the wandb package"):
        check_report_to("wandb")
    check_report_to("none")
