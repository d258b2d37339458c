"""Augmentation: every kind makes exact, typed offsets; edits are seeded and counted; only clean training records
are edited; the recipe section reaches the training records (and the fingerprint), never the eval split."""

from __future__ import annotations

import json

import pytest
from conftest import make_record
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.jsonl import read_records, write_records
from ragtruth_spans.data.augment import KINDS, TYPES, augment, is_augmented

CONTEXT = ("The Grand Hotel in Leeds opened in 1999 and has 120 rooms. Its owner, Maria Lopez, bought it from "
           "James Carter. Prices increased in 2020.")


def clean_records() -> list:
    responses = ["The Grand Hotel in Leeds opened in 1999. It has 120 rooms and Maria Lopez owns it.",
                 "Maria Lopez bought the hotel from James Carter. Prices increased in 2020.",
                 "The hotel is in Leeds and was opened in 1999. It has a bar."]
    records = [make_record(f"r{i}", "Summary", CONTEXT, text, []) for i, text in enumerate(responses)]
    records.append(make_record("other", "Summary", "Another article.", "A storm hit the coast on Monday night.", []))
    return records


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_makes_an_exact_typed_span(kind):
    new, stats = augment(clean_records(), kinds=[kind], seed=3)
    assert new and stats.made[kind] == len(new)
    for record in new:
        (span,) = record.spans
        assert record.response[span.start:span.end] == span.text and span.type == TYPES[kind]
        assert record.id.endswith(f"#aug-{kind}") and is_augmented(record)
        assert record.source_id.startswith("src-")  # the source of the edited response is kept


def test_edits_change_what_they_claim():
    new, _ = augment(clean_records()[:1], kinds=["number"], seed=0)
    (record,) = new
    original = clean_records()[0].response
    span = record.spans[0]
    assert span.text not in ("1999", "120") and span.text.isdigit()
    assert record.response[:span.start] == original[:span.start]


def test_seeded_counted_and_only_clean_records():
    labelled = make_record("bad", "Summary", CONTEXT, "It opened in 1998.", [("1998", "Evident Conflict")])
    records = [*clean_records(), labelled]
    a, stats_a = augment(records, seed=7, rounds=2)
    b, _ = augment(records, seed=7, rounds=2)
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]
    assert not any(r.id.startswith("bad") for r in a)
    assert sum(stats_a.made.values()) == len(a)
    assert sum(stats_a.made.values()) + sum(stats_a.skipped.values()) == 2 * 4  # every clean record, each round
    assert len({r.id for r in a}) == len(a)


def test_augment_command_and_recipe_section(tmp_path):
    src = tmp_path / "train.jsonl"
    write_records(src, clean_records())
    out = tmp_path / "aug.jsonl"
    result = CliRunner().invoke(app, ["augment", "--data", str(src), "--out", str(out), "--seed", "1"])
    assert result.exit_code == 0, result.output
    written = read_records(out)
    assert len(written) > 4 and [r.id for r in written[:4]] == [r.id for r in clean_records()]
    refused = CliRunner().invoke(app, ["augment", "--data", str(src), "--out", str(src)])
    assert refused.exit_code == 2
    bad_kind = CliRunner().invoke(app, ["augment", "--data", str(src), "--out", str(out), "--kind", "typo"])
    assert bad_kind.exit_code == 2 and "typo" in bad_kind.output

    from ragtruth_spans.detectors.recipes import validate_recipe
    from ragtruth_spans.training.data import RecordStats, load_eval_records, selected_training_records

    write_records(tmp_path / "dev.jsonl", clean_records())
    recipe = validate_recipe({"kind": "stacked", "features": {"encoder": None},
                              "data": {"prepared_dir": str(tmp_path), "eval_split": "dev",
                                       "augment": {"kinds": ["number"], "seed": 0}}, "output_dir": "x"})
    stats = RecordStats()
    records, _ = selected_training_records(recipe.data, stats)
    assert len(records) > 4 and stats.augmented["made"]["number"] == len(records) - 4
    assert not any(is_augmented(r) for r in load_eval_records(recipe.data)[0])
    assert json.loads(recipe.model_dump_json())["data"]["augment"]["kinds"] == ["number"]


def test_the_donor_pool_draws_what_the_filtered_list_drew() -> None:
    import random
    from dataclasses import replace

    from ragtruth_spans.data.augment import DonorPool

    tasks, sources = ("QA", "Summary"), ("s1", "s2", "s3", "s4")
    base = make_record("r", "QA", "The castle was built in 1240.", "It was built in 1240.", [])
    records = [replace(base, id=f"r{i}", source_id=sources[i * 7 % 4], task_type=tasks[i % 3 % 2])
               for i in range(40)]
    pool = DonorPool(records)
    for record in records:
        expected = [r for r in records if r.task_type == record.task_type and r.source_id != record.source_id]
        view = pool.other_sources(record)
        assert list(view) == expected and len(view) == len(expected)
        assert random.Random(5).choice(view) is random.Random(5).choice(expected)
    assert list(pool) == records and len(pool) == 40
