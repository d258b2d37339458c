"""scripts/bench_transfer.py measures named detectors on prepared files and on generated held-out cases, in process:
figures from the project's evaluator, per-kind caught / flagged rates, the files' hashes, bad input exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import load_script, make_record

from ragtruth_spans.core.jsonl import write_records

REPO = Path(__file__).resolve().parents[2]


bench_transfer = load_script("bench_transfer")
CONTEXT = ("The Harlow Street Bridge opened in 1932 and carries 40,000 cars a day. Engineers found corrosion in two "
           "steel supports in March. Repairs will cost 4.2 million pounds and take eight months.")


def test_sets_and_generated_cases_are_measured(tmp_path, capsys):
    records = [make_record("a", "Summary", CONTEXT, "The bridge opened in 1923.", [("1923", "Evident Conflict")]),
               make_record("b", "Summary", CONTEXT, "The bridge opened in 1932.", [])]
    write_records(tmp_path / "set.jsonl", records)
    out = tmp_path / "out"
    code = bench_transfer.main(["--model", "numbers", "--model", "flag-all", "--set", f"demo={tmp_path / 'set.jsonl'}",
                                "--generated", "40", "--generated-from", str(tmp_path / "set.jsonl"),
                                "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "transfer.json").read_text())
    numbers = summary["results"]["numbers"]
    assert numbers["demo"]["span"]["f1"] == 1.0 and numbers["demo"]["auroc"] is not None
    lo, hi = numbers["generated"]["ci"]["auroc"]  # 1,000 resamples of the set's responses by default
    assert lo <= numbers["generated"]["auroc"] <= hi
    kinds = summary["results"]["flag-all"]["generated"]["kinds"]
    assert sum(k["cases"] for k in kinds.values()) == 40
    assert all(k["rate"] == 1.0 for k in kinds.values())  # flag-all catches every edit and flags every faithful one
    assert summary["files"]["demo"] and (out / "generated.jsonl").is_file()
    printed = capsys.readouterr().out
    assert "| numbers | 1.000 /" in printed and "| kind (caught; faithful: flagged) |" in printed


def test_a_bad_set_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"id": "x"}\n')
    assert bench_transfer.main(["--model", "numbers", "--set", f"bad={tmp_path / 'bad.jsonl'}",
                                "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
