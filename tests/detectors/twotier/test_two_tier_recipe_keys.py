"""The two-tier family reads the recipe keys it accepts: ``data.augment`` adds synthetic training records,
``model.revision`` and ``model.gguf_file`` reach the base model's resolution (models are stubbed: this checks
what reaches them, fast)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragtruth_spans.data.augment import is_augmented
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.detectors.twotier import train as twotier_train


class Reached(Exception):
    """Raised by a stub once the records it was given are captured."""


def captured_training_records(monkeypatch: pytest.MonkeyPatch, overrides: list[str], tmp_path: Path) -> list:
    seen: list = []

    def stop(records: Any, encoder: Any, top_k: int) -> Any:
        seen.extend(records)
        raise Reached

    monkeypatch.setattr(twotier_train, "sentence_checks", stop)
    monkeypatch.setattr("ragtruth_spans.detectors.shared.encoder.SentenceEncoder", lambda name: None)
    recipe = load_recipe("all-minilm-l6-v2/two-tier", ["data.prepared_dir=sample", "data.eval_split=null",
                                                        f"output_dir={tmp_path / 'run'}", *overrides])
    with pytest.raises(Reached):
        twotier_train.train(recipe)
    return seen


def test_data_augment_adds_synthetic_training_records(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    plain = captured_training_records(monkeypatch, [], tmp_path)
    augmented = captured_training_records(monkeypatch, ["data.augment={kinds: [number, entity]}"], tmp_path)
    assert not any(is_augmented(r) for r in plain)
    assert len(augmented) > len(plain) and any(is_augmented(r) for r in augmented)
    assert [r for r in augmented if not is_augmented(r)] == plain


@pytest.mark.parametrize(("overrides", "expected"), [
    (["model.name_or_path=org/encoder", "model.revision=0123abc"], ("org/encoder", "0123abc", None)),
    (["model.name_or_path=/models/enc", "model.gguf_file=enc.gguf"], ("/models/enc", None, "enc.gguf")),
])
def test_revision_and_gguf_file_reach_the_base_model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     overrides: list[str], expected: tuple) -> None:
    calls = []

    def resolve(name_or_path: str, revision: str | None = None, gguf_file: str | None = None) -> tuple:
        calls.append((name_or_path, revision, gguf_file))
        return "resolved", revision

    monkeypatch.setattr("ragtruth_spans.models.hf_models.resolve_base_model", resolve)
    recipe = load_recipe("all-minilm-l6-v2/two-tier", [f"output_dir={tmp_path / 'run'}", *overrides])
    assert twotier_train.base_model_path(recipe, tmp_path, []) == ("resolved", expected[1])
    assert calls == [expected]
