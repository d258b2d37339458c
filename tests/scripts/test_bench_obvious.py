"""scripts/obvious_cases.jsonl is a sound suite (exact offsets, one real edit per pair, faithful twins), and
scripts/bench_obvious.py counts what rule detectors and a tiny stacked run catch on it, in process."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import make_record

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "scripts" / "obvious_cases.jsonl"
NUMBER_KINDS = {"year", "percent", "count"}


def _load_script():
    spec = importlib.util.spec_from_file_location("bench_obvious", REPO / "scripts" / "bench_obvious.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_obvious"] = module
    spec.loader.exec_module(module)
    return module


bench_obvious = _load_script()


def _rows() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_every_shipped_case_is_exact_and_paired_with_its_faithful_twin():
    rows = _rows()
    cases = {case.id: case for case in bench_obvious.read_cases(CASES)}
    assert len(cases) == len(rows) >= 60
    kinds = Counter((row["kind"], bool(row["spans"])) for row in rows)
    assert {kind for kind, _ in kinds} == set(bench_obvious.KINDS)
    assert all(kinds[(kind, True)] == kinds[(kind, False)] >= 4 for kind in bench_obvious.KINDS)
    assert {row["task"] for row in rows} == {"QA", "Summary", "Data2txt"}
    for row in rows:
        twin = next(r for r in rows if r["id"] == row["twin"])
        assert twin["twin"] == row["id"] and twin["kind"] == row["kind"], row["id"]
        assert (twin["context"], twin["question"], twin["task"]) == (row["context"], row["question"], row["task"])
        if not row["spans"]:
            assert row["original"] is None and twin["spans"], row["id"]
            continue
        (span,) = row["spans"]
        changed, original, response = row["response"][span["start"]:span["end"]], row["original"], row["response"]
        assert span["type"] == "Evident Conflict" and changed.strip() == changed != original, row["id"]
        # the twin is this response with the faithful text back in place of the span
        assert response[:span["start"]] + original + response[span["end"]:] == twin["response"], row["id"]
        # the span is whole words
        before, after = response[span["start"] - 1:span["start"]], response[span["end"]:span["end"] + 1]
        assert not before.isalnum() and not after.isalnum(), row["id"]
        if row["kind"] == "name-swap":  # swapped for another name the context holds
            assert changed in row["context"] and original in row["context"], row["id"]
        else:  # the changed text is nowhere in the context
            assert changed.lower() not in row["context"].lower(), row["id"]
        if row["kind"] in NUMBER_KINDS | {"name-new"}:
            assert original in row["context"], row["id"]
        if row["task"] == "Data2txt":
            assert isinstance(json.loads(row["context"]), dict)


def test_the_readme_examples_are_in_the_suite():
    responses = {(row["context"], row["response"]) for row in _rows()}
    assert ("Passage 1: The Grand Hotel opened in 1999 and has 120 rooms.",
            "The Grand Hotel opened in 1998 and has 120 rooms.") in responses
    assert ("Revenue rose 12% to 3.4 billion euros.", "Revenue rose 15%.") in responses
    assert ("Revenue rose 12% to 3.4 billion euros.", "Revenue rose 15% to 3.4 billion euros.") in responses


def test_numbers_catches_exactly_the_number_swaps_and_flag_none_nothing(tmp_path, capsys):
    out = tmp_path / "numbers.json"
    assert bench_obvious.main(["--model", "numbers", "--out", str(out), "--cases"]) == 0
    printed = capsys.readouterr().out
    assert "Obvious cases: numbers" in printed and "✓ year-01-edited" in printed and "✗ antonym-01-edited" in printed
    result = json.loads(out.read_text())
    assert result["detector"] == {"kind": "rules", "name": "numbers"}
    for kind, row in result["by_kind"].items():
        expected = row["edited"] if kind in NUMBER_KINDS else 0
        assert (row["caught"], row["false_alarms"], row["errors"]) == (expected, 0, 0), kind
    overall = result["overall"]
    assert overall["caught"] == sum(result["by_kind"][k]["edited"] for k in NUMBER_KINDS) == 12
    assert overall["mean_score_clean"] == 0.0 and overall["mean_word_score"] is None
    # scores 1 vs 0 on the 12 number pairs, ties (0 vs 0) counted half on the 20 others
    assert overall["pair_order"] == pytest.approx((12 + 0.5 * 20) / 32)
    caught = [c for c in result["cases"] if c["caught"]]
    assert all(c["predicted_text"][0] in c["gold_text"][0] for c in caught)  # "15" of "15%": the number itself

    none = bench_obvious.bench("flag-none")
    assert none["overall"]["caught"] == none["overall"]["false_alarms"] == 0
    assert none["overall"]["response_accuracy"] == none["overall"]["pair_order"] == 0.5


def test_gates_exit_1_with_one_line_and_bad_input_exits_2(tmp_path, capsys):
    assert bench_obvious.main(["--model", "numbers", "--require-catch-rate", "0.9"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "catch rate 0.375 is below the required 0.9 (12 of 32 edited cases caught)"
    assert bench_obvious.main(["--model", "numbers", "--require-catch-rate", "0.375",
                               "--max-false-alarm-rate", "0"]) == 0
    assert bench_obvious.main(["--model", "flag-all", "--max-false-alarm-rate", "0.5"]) == 1
    assert "32 of 32 clean cases flagged" in capsys.readouterr().err

    bad = tmp_path / "bad.jsonl"
    row = _rows()[0] | {"spans": [{"start": 40, "end": 400, "type": "Evident Conflict"}]}
    bad.write_text(json.dumps(_rows()[1]) + "\n" + json.dumps(row) + "\n")
    assert bench_obvious.main(["--model", "numbers", "--data", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {bad}:2, field 'spans[0]'") and "not inside the response" in err


def test_a_stacked_run_exposes_the_word_score_of_the_changed_text(tmp_path):
    """A tiny stacked run trained on changed years: the bench reads its word probabilities."""
    from ragtruth_spans.core.jsonl import write_records
    from ragtruth_spans.detectors.recipes import validate_recipe
    from ragtruth_spans.detectors.train import train

    pytest.importorskip("lightgbm")
    rng = random.Random(0)
    for split, n in (("train", 16), ("dev", 6)):
        records = []
        for s in range(n):
            year = rng.randint(1900, 2000)
            context = f"The museum in Town {s} opened in {year}. It has {s + 3} rooms."
            for k, shown in enumerate((year, year + rng.randint(1, 9))):
                spans = [(str(shown), "Evident Conflict")] if k else []
                record = make_record(f"{split}-{s}-{k}", "Summary", context,
                                     f"The museum in Town {s} opened in {shown}.", spans, split=split)
                records.append(record.__class__(**{**record.__dict__, "source_id": f"{split}-{s}"}))
        write_records(tmp_path / f"{split}.jsonl", records)
    run = tmp_path / "run"
    train(validate_recipe({
        "kind": "stacked", "features": {"encoder": None}, "members": [],
        "combiner": {"min_data_in_leaf": 5, "num_leaves": 7, "max_rounds": 40, "early_stopping_rounds": 20,
                     "oof_folds": 2},
        "decision": {"grid": [0.3, 0.5], "max_word_gap": [0]}, "response": None,  # word scores only: no head
        "data": {"prepared_dir": str(tmp_path), "eval_split": "dev"}, "output_dir": str(run)}))
    result = bench_obvious.bench(str(run))
    edited = [c for c in result["cases"] if c["edited"]]
    assert all(0.0 <= c["word_score"] <= 1.0 for c in edited)
    assert all(c["word_score"] is None for c in result["cases"] if not c["edited"])
    year = [c["word_score"] for c in edited if c["kind"] == "year"]
    assert result["by_kind"]["year"]["mean_word_score"] == pytest.approx(sum(year) / len(year), abs=1e-4)
