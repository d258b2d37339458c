"""A run is what it claims — run_info.json records the SHA-256 of every file of the run directory, its
fingerprint covers them, and loading verifies them; every value read from a run is validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.runs.manifest import run_files, verify_run
from ragtruth_spans.runs.run_dir import write_run_files
from ragtruth_spans.runs.run_info import read_run_info


def _run(tmp_path: Path, **extra) -> Path:
    out = tmp_path / "run"
    (out / "tokenizer").mkdir(parents=True)
    (out / "weights.bin").write_bytes(b"\x00\x01" * 100)
    (out / "tokenizer" / "vocab.txt").write_text("a\nb\n", encoding="utf-8")
    (out / "checkpoint-3").mkdir()
    (out / "checkpoint-3" / "optimizer.pt").write_bytes(b"state")
    (out / "members" / "m" / "full").mkdir(parents=True)
    (out / "members" / "m" / "full" / "run_info.json").write_text('{"kind": "x"}', encoding="utf-8")
    (out / "members" / "m" / "full" / "big.bin").write_bytes(b"nested run: covered by its own run_info")
    recipe = validate_recipe({"model": {"name_or_path": "tiny"}, "output_dir": str(out)})
    write_run_files(out, recipe, {"threshold": 0.5, **extra}, trained_on=None)
    return out


def test_every_file_but_the_metadata_is_in_the_manifest_and_the_fingerprint_covers_it(tmp_path):
    out = _run(tmp_path)
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    assert sorted(info["files_sha256"]) == ["members/m/full/run_info.json", "recipe.yaml", "tokenizer/vocab.txt",
                                            "weights.bin"]
    assert run_files(out) == sorted(info["files_sha256"])
    assert verify_run(out)["fingerprint"] == info["fingerprint"]
    (out / "response_head.txt").write_text("a file a family adds later is covered without any change", "utf-8")
    recipe = validate_recipe({"model": {"name_or_path": "tiny"}, "output_dir": str(out)})
    again = write_run_files(out, recipe, {"threshold": 0.5}, trained_on=None)
    assert "response_head.txt" in again["files_sha256"] and again["fingerprint"] != info["fingerprint"]


@pytest.mark.parametrize(("victim", "edit"), [
    ("weights.bin", lambda p: p.write_bytes(b"\x00\x02" * 100)),  # same length, other bytes
    ("tokenizer/vocab.txt", lambda p: p.unlink()),
    ("members/m/full/run_info.json", lambda p: p.write_text('{"kind": "y"}', encoding="utf-8")),
])
def test_a_changed_or_missing_file_is_one_error_naming_it(tmp_path, victim, edit):
    out = _run(tmp_path)
    edit(out / victim)
    with pytest.raises(InputError, match=rf"{victim}: (changed since the run was written|missing)"):
        verify_run(out)


def test_an_edited_run_info_no_longer_matches_its_fingerprint(tmp_path):
    out = _run(tmp_path)
    info = json.loads((out / "run_info.json").read_text(encoding="utf-8"))
    (out / "run_info.json").write_text(json.dumps(info | {"threshold": 0.9}), encoding="utf-8")
    with pytest.raises(InputError, match=r"run_info.json: edited after the run was written"):
        verify_run(out)


def test_checkpoints_and_lock_files_are_not_verified(tmp_path):
    out = _run(tmp_path)
    (out / "checkpoint-3" / "optimizer.pt").write_bytes(b"other state")
    (out / "weights.bin.lock").write_text("1", encoding="utf-8")
    verify_run(out)


def test_a_run_without_a_manifest_loads_with_a_warning(tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    (out / "run_info.json").write_text('{"kind": "generative", "fingerprint": "abc"}', encoding="utf-8")
    with pytest.warns(UserWarning, match="written before runs recorded the SHA-256 of their files"):
        assert verify_run(out)["fingerprint"] == "abc"


@pytest.mark.parametrize(("values", "field"), [
    ({"threshold": "abc"}, "threshold"), ({"threshold": None}, "threshold"),
    ({"thresholds": {"cosine": -5}}, "thresholds.cosine"),
    ({"decision": {"thresholds": {"*": 1.5}}}, "decision.thresholds.*"),
    ({"decision": {"thresholds": {"*": 0.5}, "max_word_gap": [1]}}, "decision.max_word_gap"),
    ({"detection": {"threshold": True}}, "detection.threshold"), ({"thresholds": "0.5"}, "thresholds"),
])
def test_every_value_read_from_a_run_is_validated(tmp_path, values, field):
    path = tmp_path / "run_info.json"
    path.write_text(json.dumps({"kind": "x", **values}), encoding="utf-8")
    with pytest.raises(InputError, match=rf"field '{field}'"):
        read_run_info(tmp_path)


def test_nan_is_refused_as_a_threshold(tmp_path):
    (tmp_path / "run_info.json").write_text('{"threshold": "nan"}', encoding="utf-8")
    with pytest.raises(InputError, match="finite number in"):
        read_run_info(tmp_path)
