"""tests/fixtures/obvious_cases.jsonl is a sound suite (≥ 150 cases, every edit kind ≥ 8 times, a faithful answer
in every group, exact offsets, one real edit per case against its faithful twin), and scripts/bench_obvious.py
validates it strictly and counts what rule detectors (and their baselines) and a tiny stacked run catch on it,
in process."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from conftest import load_script, make_record

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "fixtures" / "obvious_cases.jsonl"
NUMBER_KINDS = {"year", "percent", "count"}


bench_obvious = load_script("bench_obvious")


def _rows() -> list[dict]:
    return [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]


def _old_pairs(rows: list[dict]) -> list[dict]:
    """The first suite's 32 pairs (ids ``KIND-NN-edited`` / ``KIND-NN-clean``), kept as they were."""
    return [row for row in rows if row["id"].endswith(("-edited", "-clean"))]


def test_the_shipped_suite_is_large_typed_and_every_group_has_a_faithful_answer():
    rows = _rows()
    cases = bench_obvious.read_cases(CASES)  # strict: every twin restored from its edit, offsets inside
    assert len(cases) == len(rows) >= 150
    edited = [row for row in rows if row["spans"]]
    assert len(edited) >= 100 and len(rows) - len(edited) >= 50
    assert {row["kind"] for row in rows} <= set(bench_obvious.KINDS)
    per_kind = Counter(row["kind"] for row in edited)
    assert all(per_kind[kind] >= 8 for kind in bench_obvious.EDITED_KINDS), per_kind
    assert all(row["kind"].startswith("faithful") or row["id"].endswith("-clean") for row in rows if not row["spans"])
    assert {row["task"] for row in rows} == {"QA", "Summary", "Data2txt"}
    assert {bench_obvious.length_bucket(row["context"]) for row in rows} == set(bench_obvious.LENGTHS)
    groups: dict[str, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["group"], []).append(row)
    for group, members in groups.items():
        assert any(not row["spans"] for row in members), group  # a faithful answer in every group
        assert len({(row["task"], row["context"], row["question"]) for row in members}) == 1, group
    assert sum(any(row["kind"] == "faithful-paraphrase" for row in members) for members in groups.values()) >= 30
    first = {row["group"] for row in _old_pairs(rows)}
    for group, members in groups.items():  # a new group holds a faithful answer other than a copy
        assert group in first or any(row["kind"].startswith("faithful-") and row["kind"] != "faithful-copy"
                                     for row in members), group
    per_faithful_kind = Counter(row["kind"] for row in rows if not row["spans"])
    assert all(per_faithful_kind[kind] >= 5 for kind in bench_obvious.FAITHFUL_KINDS), per_faithful_kind
    long_contexts = {row["context"] for row in rows if bench_obvious.length_bucket(row["context"]) == "long"}
    assert len(long_contexts) >= 5 and all(300 <= len(c.split()) <= 600 for c in long_contexts)


def test_every_edit_is_exact_whole_words_and_its_twin_is_the_faithful_text():
    rows = _rows()
    by_id = {row["id"]: row for row in rows}
    for row in rows:
        if not row["spans"]:
            assert row["original"] is None, row["id"]
            continue
        (span,) = row["spans"]
        twin = by_id[row["twin"]]
        changed, original, response = row["response"][span["start"]:span["end"]], row["original"], row["response"]
        assert not twin["spans"] and twin["group"] == row["group"], row["id"]
        assert changed.strip() == changed and changed != original and changed.lower() != original.lower(), row["id"]
        if original:  # a replacement: the twin is this response with the faithful text back in place
            assert response[:span["start"]] + original + response[span["end"]:] == twin["response"], row["id"]
        else:  # an insertion: the twin is this response without it (and one space)
            assert row["kind"].startswith(("added-", "json-invented", "negation-added")), row["id"]
            removed = response[:span["start"]] + response[span["end"]:]
            assert twin["response"] in {removed, removed.replace("  ", " ", 1),
                                        response[:span["start"] - 1] + response[span["end"]:]}, row["id"]
        # the span is whole words (an added clause may start at its comma)
        before, after = response[span["start"] - 1:span["start"]], response[span["end"]:span["end"] + 1]
        assert not (before.isalnum() and changed[0].isalnum()) and not after.isalnum(), row["id"]
        baseless = span["type"].endswith("Baseless Info")
        assert baseless == row["kind"].startswith(("added-", "json-invented")), row["id"]
        if row["kind"] == "name-swap":  # swapped for another name the context holds
            assert changed in row["context"] and original in row["context"], row["id"]
        elif row["kind"] == "name-new" or baseless:  # a name, or added text, that is nowhere in the context
            assert changed.lower() not in row["context"].lower(), row["id"]
        if row["kind"].startswith("json-") or row["task"] == "Data2txt":
            assert row["task"] == "Data2txt" and isinstance(json.loads(row["context"]), dict), row["id"]


def test_the_first_suite_is_kept_as_pairs():
    old = _old_pairs(_rows())
    assert len(old) == 64
    kinds = Counter((row["kind"], bool(row["spans"])) for row in old)
    assert all(kinds[(kind, True)] == kinds[(kind, False)] == 4 for kind, _ in kinds)
    assert {kind for kind, _ in kinds} == {"year", "percent", "count", "name-new", "name-swap", "negation-added",
                                           "negation-removed", "antonym"}
    for row in old:
        twin = next(r for r in old if r["id"] == row["twin"])
        assert twin["twin"] == row["id"] and twin["kind"] == row["kind"] and twin["group"] == row["group"]
        if row["spans"] and row["kind"] in NUMBER_KINDS | {"name-new"}:
            assert row["original"] in row["context"], row["id"]


def test_the_readme_examples_are_in_the_suite():
    responses = {(row["context"], row["response"]) for row in _rows()}
    assert ("Passage 1: The Grand Hotel opened in 1999 and has 120 rooms.",
            "The Grand Hotel opened in 1998 and has 120 rooms.") in responses
    assert ("Revenue rose 12% to 3.4 billion euros.", "Revenue rose 15%.") in responses
    assert ("Revenue rose 12% to 3.4 billion euros.", "Revenue rose 15% to 3.4 billion euros.") in responses


def test_length_buckets():
    assert bench_obvious.length_bucket('{"name": "A", "stars": 4}') == "structured"
    assert bench_obvious.length_bucket("{not json") == "short"
    assert bench_obvious.length_bucket(" ".join(["word"] * 40)) == "short"
    assert bench_obvious.length_bucket(" ".join(["word"] * 41)) == "medium"
    assert bench_obvious.length_bucket(" ".join(["word"] * 251)) == "long"


def test_numbers_catches_exactly_the_first_suites_number_swaps(tmp_path, capsys):
    out = tmp_path / "numbers.json"
    assert bench_obvious.main(["--model", "numbers", "--out", str(out), "--cases"]) == 0
    printed = capsys.readouterr().out
    assert "Obvious cases: numbers" in printed and "✓ year-01-edited" in printed and "✗ antonym-01-edited" in printed
    result = json.loads(out.read_text())
    assert result["detector"] == {"kind": "rules", "name": "numbers"}
    assert {"overall", "by_kind", "by_task", "by_length", "by_task_kind", "by_length_kind", "cases"} <= set(result)
    assert list(result["by_length"]) == list(bench_obvious.LENGTHS)
    old = [c for c in result["cases"] if c["id"].endswith(("-edited", "-clean"))]
    for kind, row in bench_obvious.grouped(old, "kind", bench_obvious.KINDS).items():
        expected = row["edited"] if kind in NUMBER_KINDS else 0
        assert (row["caught"], row["false_alarms"], row["errors"]) == (expected, 0, 0), kind
    first = bench_obvious.summarise(old)
    assert first["caught"] == 12 and first["mean_score_clean"] == 0.0 and first["mean_word_score"] is None
    # scores 1 vs 0 on the 12 number pairs, ties (0 vs 0) counted half on the 20 others
    assert first["pair_order"] == pytest.approx((12 + 0.5 * 20) / 32)
    caught = [c for c in old if c["caught"]]
    assert all(c["predicted_text"][0] in c["gold_text"][0] for c in caught)  # "15" of "15%": the number itself
    # a faithful copy holds no number the context lacks; a reformatted number ("1,200,000" for "1.2 million") does
    assert result["by_kind"]["faithful-copy"]["false_alarms"] == 0
    assert result["by_kind"]["faithful-number-format"]["false_alarms"] > 0
    one = next(c for c in result["cases"] if c["id"] == "lighthouse-year")
    assert (one["group"], one["length"], one["gold_text"], one["gold_type"], one["caught"]) == (
        "lighthouse", "short", ["1817"], ["Evident Conflict"], True)

    none = bench_obvious.bench("flag-none")
    assert none["overall"]["caught"] == none["overall"]["false_alarms"] == 0
    assert none["overall"]["response_accuracy"] == pytest.approx(
        none["overall"]["clean"] / (none["overall"]["clean"] + none["overall"]["edited"]), abs=1e-4)
    assert none["overall"]["pair_order"] == 0.5
    # intervals resample whole contexts: a detector that flags nothing has no spread; numbers' rates lie inside theirs
    assert none["overall_intervals"] == {"catch_rate": [0.0, 0.0], "false_alarm_rate": [0.0, 0.0],
                                         "pair_order": [0.5, 0.5]}
    for name, (lo, hi) in result["overall_intervals"].items():
        assert lo <= result["overall"][name] <= hi and lo < hi, name
    assert "95 % intervals, the contexts resampled: catch rate [" in printed


def test_baselines_and_breakdown_are_the_same_tables_per_reference(tmp_path, capsys):
    out = tmp_path / "absent.json"
    assert bench_obvious.main(["--model", "absent-words", "--baselines", "--breakdown", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "beside the rule references" in printed and "per kind and context" in printed
    result = json.loads(out.read_text())
    assert list(result["baselines"]) == ["numbers", "flag-all"]  # the model itself is not run twice
    flag_all = result["baselines"]["flag-all"]
    assert flag_all["detector"] == {"kind": "rules", "name": "flag-all"} and "cases" not in flag_all
    assert flag_all["overall"]["catch_rate"] == flag_all["overall"]["false_alarm_rate"] == 1.0
    assert set(flag_all) >= {"overall", "by_kind", "by_task", "by_length", "by_task_kind", "by_length_kind"}
    assert all(row["catch_rate"] in (None, 1.0) for row in flag_all["by_kind"].values())
    absent, numbers = result["by_kind"], result["baselines"]["numbers"]["by_kind"]
    # absent words catch the invented names and clauses that numbers cannot, and flag faithful paraphrases
    for kind in ("name-new", "added-attribution", "added-clause"):
        assert absent[kind]["catch_rate"] > numbers[kind]["catch_rate"], kind
    assert absent["name-swap"]["caught"] == 0  # a name the context holds is never absent
    assert absent["faithful-paraphrase"]["false_alarm_rate"] > 0.5
    in_qa = result["by_task_kind"]["QA"]
    assert sum(row["edited"] for row in in_qa.values()) == result["by_task"]["QA"]["edited"]
    assert sum(row["clean"] for rows in result["by_length_kind"].values() for row in rows.values()) == \
        result["overall"]["clean"]


def test_gates_exit_1_with_one_line(capsys):
    overall = bench_obvious.bench("numbers")["overall"]
    assert bench_obvious.main(["--model", "numbers", "--require-catch-rate", "0.9"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"catch rate {overall['catch_rate']} is below the required 0.9 ({overall['caught']} of "
                   f"{overall['edited']} edited cases caught)")
    assert bench_obvious.main(["--model", "numbers", "--require-catch-rate", str(overall["catch_rate"]),
                               "--max-false-alarm-rate", str(overall["false_alarm_rate"])]) == 0
    assert bench_obvious.main(["--model", "flag-all", "--max-false-alarm-rate", "0.5"]) == 1
    assert f"{overall['clean']} of {overall['clean']} clean cases flagged" in capsys.readouterr().err


def _by_id(*ids: str) -> list[dict]:
    rows = {row["id"]: row for row in _rows()}
    return [dict(rows[i]) for i in ids]


@pytest.mark.parametrize(("change", "line", "field", "message"), [
    (lambda rows: rows[1].update(spans=[{"start": 40, "end": 400, "type": "Evident Conflict"}]),
     2, "spans[0]", "not inside the response"),
    (lambda rows: rows[1].update(spans=[{"start": 0, "end": 3, "type": "Obvious"}]), 2, "spans.0.type",
     "Input should"),
    (lambda rows: rows[0].update(spans=[{"start": 0, "end": 3, "type": "Evident Conflict"}]), 1, "spans",
     "a faithful-copy case has no span"),
    (lambda rows: rows[1].update(original="1781"), 2, "original", "does not give its twin 'lighthouse-copy'"),
    (lambda rows: rows[2].update(response=rows[2]["response"].replace("Skerrow", "Skerrou")), 3, "original",
     "the edit must change only the span"),
    (lambda rows: rows[1].update(context="Another context."), 2, "context", "differs from its twin"),
    (lambda rows: rows[1].update(group="ferry"), 2, "group", "differs from its twin"),
    (lambda rows: rows[0].update(original="x"), 1, "original", "exactly one span"),
    (lambda rows: rows[1].update(twin="lighthouse-year"), 2, "twin", "is the case itself"),
    (lambda rows: rows[1].update(question=None), 2, "question", "must be a string for QA"),
    (lambda rows: rows[2].update(id=rows[1]["id"]), 3, "id", "duplicate id"),
    (lambda rows: rows[1].update(kind=" "), 2, "kind", "must not be empty"),
])
def test_bad_input_exits_2_with_one_line_naming_line_and_field(tmp_path, capsys, change, line, field, message):
    rows = _by_id("lighthouse-copy", "lighthouse-year", "lighthouse-added-attribution")
    change(rows)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    assert bench_obvious.main(["--model", "numbers", "--data", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"error: {bad}:{line}, field '{field}'") and message in err, err


def test_an_insertion_restores_its_twin_less_one_space_and_a_missing_twin_is_allowed(tmp_path):
    rows = _by_id("lighthouse-copy", "lighthouse-added-attribution", "ferry-count")
    assert rows[1]["original"] == "" and rows[1]["response"].endswith("in 1871 by the engineer Thomas Aldine.")
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")  # ferry-count's twin absent
    assert [case.id for case in bench_obvious.read_cases(data)] == [row["id"] for row in rows]
    result = bench_obvious.bench("absent-words", data)
    assert result["overall"]["caught"] == 2 and result["by_kind"]["added-attribution"]["pair_order"] == 1.0
    assert result["by_kind"]["count"]["pair_order"] is None  # no twin in the file: no pair


@pytest.mark.slow
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


def test_check_validates_and_counts_without_a_detector(tmp_path, capsys):
    assert bench_obvious.main(["--check"]) == 0
    printed = capsys.readouterr().out
    rows = _rows()
    assert f"{len(rows)} cases" in printed and "groups without a faithful case: none" in printed
    found = bench_obvious.census(bench_obvious.read_cases(CASES))
    assert found["by_kind"]["faithful-copy"] == {"edited": 0, "faithful": Counter(r["kind"] for r in rows)[
        "faithful-copy"]}
    assert sum(row["edited"] for row in found["by_length"].values()) == found["edited"]
    only_edits = tmp_path / "edits.jsonl"
    only_edits.write_text("".join(json.dumps(row) + "\n" for row in _by_id("lighthouse-year", "ferry-count")))
    assert bench_obvious.census(bench_obvious.read_cases(only_edits))["groups_without_faithful"] == [
        "ferry", "lighthouse"]
    with pytest.raises(SystemExit) as exit_:
        bench_obvious.main([])
    assert exit_.value.code == 2 and "--model is required (or --check)" in capsys.readouterr().err
