"""An entailment run on ONNX Runtime: the export is made on first use into the run's ``onnx/`` folder with its
record, its probabilities equal torch's (fp32 within 1e-3; int8 close), the detector's spans are the same on
fp32, an export of other weights or a changed file is made again, and a bad runtime is one error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ragtruth_spans.core.errors import InputError

torch = pytest.importorskip("torch")
pytest.importorskip("datasets")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

CONTEXT = "The hotel in the old town is red. It opened in 1950 beside the river. It has two pools."
RESPONSE = "The hotel is red. It opened in 1962. It has a spa."


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from ragtruth_spans.detectors.train import train
    from tests.conftest import _tiny_recipe, write_nli_dir

    root = tmp_path_factory.mktemp("onnx-run")
    out = root / "run"
    train(_tiny_recipe(write_nli_dir(root / "nli"), out))
    return out


def _detector(run, runtime):
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

    detector = load_detector(run, runtime=runtime, threshold=0.34)
    detector._encoder = SentenceEncoder(runtime="torch")  # the same window choice for every runtime
    return detector


@pytest.mark.slow
def test_exports_match_torch_and_the_detector_agrees(run):
    from ragtruth_spans.detectors.entailment.model import pair_probabilities
    from ragtruth_spans.detectors.entailment.onnx import PROBE

    torch_detector, fp32, int8 = (_detector(run, r) for r in ("torch", "onnx-fp32", "onnx-int8"))
    record = json.loads((run / "onnx" / "model-int8.json").read_text())
    assert record["precision"] == "int8" and record["max_difference_to_fp32"] <= 0.25
    assert json.loads((run / "onnx" / "model-fp32.json").read_text())["max_difference_to_torch"] <= 1e-3
    pairs = [*PROBE, (CONTEXT, RESPONSE)]
    expected = pair_probabilities(torch_detector.model, torch_detector.tokenizer, pairs, max_length=64)
    assert np.abs(fp32.model.probabilities(pairs) - expected).max() <= 1e-3
    assert np.abs(int8.model.probabilities(pairs) - expected).max() <= 0.1
    alone = int8.model.probabilities(pairs[-1:])  # int8: a pair's probabilities never depend on its batch
    assert np.array_equal(alone[0], int8.model.probabilities(pairs)[-1])
    found = [d.detect(context=CONTEXT, response=RESPONSE, task="Summary") for d in (torch_detector, fp32)]
    assert [(s.start, s.end) for s in found[0].spans] == [(s.start, s.end) for s in found[1].spans]
    assert found[0].score == pytest.approx(found[1].score, abs=1e-3)
    assert fp32.describe()["runtime"] == "onnx-fp32"


@pytest.mark.slow
def test_an_export_of_other_weights_or_a_changed_file_is_made_again(run):
    _detector(run, "onnx-fp32")
    record_path, model_path = run / "onnx" / "model-fp32.json", run / "onnx" / "model-fp32.onnx"
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps(record | {"weights_sha256": "0" * 64}))
    _detector(run, "onnx-fp32")
    assert json.loads(record_path.read_text())["weights_sha256"] == record["weights_sha256"]
    model_path.write_bytes(model_path.read_bytes() + b"\0")
    _detector(run, "onnx-fp32")
    assert json.loads(record_path.read_text())["sha256"] == record["sha256"]  # the same export, made again


def test_an_unknown_runtime_is_one_error(run):
    from ragtruth_spans.detectors.loader import load_detector

    with pytest.raises(InputError, match="runtime must be one of torch, onnx-fp32, onnx-int8"):
        load_detector(run, runtime="onnx-fp16")
