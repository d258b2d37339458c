"""Which encoder runtime a detector runs on: the features it was built on unless told otherwise, and told loudly."""

from __future__ import annotations

import logging

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.detectors.shared.encoder_runtime import PRECISION, RUNTIMES, runtime_for_build
from ragtruth_spans.runs.run_dir import run_fingerprint


def test_a_build_runs_on_its_own_features_by_default(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert runtime_for_build("fp32", None) == runtime_for_build("fp32", "auto") == "auto"
        assert runtime_for_build("int8", None) == runtime_for_build("int8", "auto") == "onnx-int8"
        assert runtime_for_build("fp32", "torch") == "torch"
        assert runtime_for_build("fp32", "onnx-fp32") == "onnx-fp32"
    assert caplog.text == ""


@pytest.mark.parametrize(("precision", "runtime"), [("fp32", "onnx-int8"), ("int8", "onnx-fp32"), ("int8", "torch")])
def test_features_other_than_the_builds_are_explicit_and_logged(precision: str, runtime: str,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ragtruth_spans.detectors.shared.encoder_runtime"):
        assert runtime_for_build(precision, runtime) == runtime
    assert f"to a detector built on {precision} ones" in caplog.text


def test_every_runtime_has_a_precision_and_others_are_refused() -> None:
    assert set(PRECISION) == set(RUNTIMES)
    with pytest.raises(InputError, match="runtime must be one of"):
        runtime_for_build("fp32", "onnx-int4")


def test_int8_features_are_in_the_fingerprint_and_fp32_ones_leave_it_as_it_was() -> None:
    """A combiner trained on int8 features is another run; fp32 runs keep the fingerprint they had before the
    recipe could say which (the shipped detector's fingerprint.json among them)."""
    plain = load_recipe("recommended-cpu", [])
    int8 = load_recipe("recommended-cpu", ["features.precision=int8"])
    assert plain.features.precision == "fp32"
    assert "precision" not in run_fingerprint(plain, [])["recipe"]["features"]
    assert run_fingerprint(int8, [])["recipe"]["features"]["precision"] == "int8"
    assert run_fingerprint(int8, [])["fingerprint"] != run_fingerprint(plain, [])["fingerprint"]


def test_a_cut_encoder_is_in_the_fingerprint_and_needs_an_encoder() -> None:
    plain = load_recipe("recommended-cpu", [])
    cut = load_recipe("recommended-cpu", ["features.encoder_layers=3"])
    assert plain.features.encoder_layers is None
    assert "encoder_layers" not in run_fingerprint(plain, [])["recipe"]["features"]  # runs from before keep theirs
    assert run_fingerprint(cut, [])["recipe"]["features"]["encoder_layers"] == 3
    assert run_fingerprint(cut, [])["fingerprint"] != run_fingerprint(plain, [])["fingerprint"]
    with pytest.raises(InputError, match="encoder_layers needs an encoder"):
        load_recipe("recommended-cpu", ["features.encoder_layers=3", "features.encoder=null"])
