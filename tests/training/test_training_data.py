"""Which records a recipe trains on (the embedded sample honours data.split), and checks made before a model
is loaded (the logger a recipe names must be installed, a local base model must exist)."""

from __future__ import annotations

import sys

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.models.hf_models import check_report_to, is_local_reference, resolve_base_model
from ragtruth_spans.training.data import load_eval_records, load_split
from ragtruth_spans.training.data_recipe import DataSection


def test_the_embedded_sample_honours_the_split():
    train, where = load_split(DataSection(), "train")
    test, _ = load_split(DataSection(split="test"), "test")
    assert where.endswith("split train") and train and test
    assert {r.split for r in train} == {"train"} and {r.split for r in test} == {"test"}
    assert not {r.source_id for r in train} & {r.source_id for r in test}
    with pytest.raises(InputError, match="has the splits train and test, not 'dev'"):
        load_split(DataSection(), "dev")


def test_an_eval_split_the_sample_lacks_names_data_eval_split():
    with pytest.raises(InputError, match="not 'dev'") as error:
        load_eval_records(DataSection(eval_split="dev"))
    assert error.value.field == "data.eval_split"
    with pytest.raises(InputError, match="not 'dev'") as error:
        load_split(DataSection(split="dev"), "dev")
    assert error.value.field == "data.split"


@pytest.mark.parametrize("name", ["./my-model", "../models/my-model", "/nonexistent/my-model", "~/no-such-model",
                                  "models/llama/my-model"])
def test_a_missing_local_base_model_is_an_error_naming_the_recipe_field(name):
    assert is_local_reference(name)  # path syntax: never looked up on the hub
    with pytest.raises(InputError, match="base model folder .* not found") as error:
        resolve_base_model(name)
    assert error.value.field == "model.name_or_path"


def test_a_hub_id_or_an_existing_folder_resolves(tmp_path):
    assert not is_local_reference("org/model")
    assert resolve_base_model("org/model", "main") == ("org/model", "main")
    with pytest.raises(InputError, match="config.json is missing"):  # an existing folder is checked
        resolve_base_model(str(tmp_path))


def test_a_missing_logger_fails_before_any_model_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb → ImportError
    with pytest.raises(InputError, match=r"report_to=wandb needs the wandb package"):
        check_report_to("wandb")
    check_report_to("none")
