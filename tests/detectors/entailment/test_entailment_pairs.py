"""Reading the NLI pair format strictly: every bad line is one error naming the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.entailment.pairs import (
    NOT_ENTAILMENT,
    counts,
    load_split,
    read_pairs,
    sample_pairs,
    sample_per_source,
)

GOOD = {"id": "snli-test-1", "premise": "A man sleeps.", "hypothesis": "A man rests.", "label": "entailment",
        "source": "snli", "split": "test", "binary": False}


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_pairs_are_read_with_their_label_ids(tmp_path):
    path = write(tmp_path / "train.jsonl", [GOOD, GOOD | {"label": "not_entailment", "binary": True,
                                                          "source": "fever_rte"}])
    pairs = read_pairs(path)
    assert [(p.label, p.source, p.binary, p.three_way) for p in pairs] == \
        [(0, "snli", False, True), (NOT_ENTAILMENT, "fever_rte", True, False)]
    assert counts(pairs) == {"fever_rte": {"not_entailment": 1}, "snli": {"entailment": 1}}


@pytest.mark.parametrize(("change", "field"), [({"label": "maybe"}, "label"), ({"premise": " "}, "premise"),
                                               ({"hypothesis": 3}, "hypothesis"), ({"source": ""}, "source"),
                                               ({"binary": "yes"}, "binary")])
def test_a_bad_line_names_file_line_and_field(tmp_path, change, field):
    path = write(tmp_path / "dev.jsonl", [GOOD, GOOD | change])
    with pytest.raises(InputError) as caught:
        read_pairs(path)
    assert caught.value.path == str(path) and caught.value.line == 2 and caught.value.field == field


def test_splits_filters_samples_and_caps(tmp_path):
    rows = [GOOD | {"source": "snli" if i % 2 else "cad", "hypothesis": f"H {i}."} for i in range(10)]
    write(tmp_path / "train.jsonl", rows)
    assert len(load_split([tmp_path], "train", sources=["cad"])) == 5
    assert load_split([tmp_path], "dev", required=False) == []
    with pytest.raises(InputError, match="no dev.jsonl"):
        load_split([tmp_path], "dev")
    pairs = load_split([tmp_path], "train")
    sample = sample_pairs(pairs, 4, seed=1)
    assert sample == sample_pairs(pairs, 4, seed=1) and len(sample) == 4
    assert [pairs.index(p) for p in sample] == sorted(pairs.index(p) for p in sample)  # file order kept
    per_source = sample_per_source(pairs, 1, seed=1)
    assert len(per_source) == len({p.source for p in pairs}) and per_source == sample_per_source(pairs, 1, seed=1)
    assert sample_per_source(pairs, None, seed=1) == pairs
