"""The token-classification recipe's own checks: settings this family cannot honour are refused, not ignored."""

from __future__ import annotations

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.recipes import load_recipe, validate_recipe


def test_packing_is_refused_not_ignored():
    base = {"kind": "token-classification", "model": {"name_or_path": "tiny"}, "output_dir": "runs/x"}
    assert validate_recipe(base).training.packing is False
    with pytest.raises(InputError, match=r"training\.packing=true is not supported by token-classification"):
        validate_recipe({**base, "training": {"packing": True}})
    with pytest.raises(InputError, match="packing"):
        load_recipe("all-minilm-l6-v2/token-cls", ["training.packing=true"])
    assert load_recipe("tiny-cpu", ["training.packing=true"]).training.packing  # generative: TRL packs
