"""The importers (own JSONL, SummEdits, XSum hallucinations, ExpertQA) on small files crafted in each original
format: exact spans, every skip / repair / default counted, a prepared directory that ``train`` reads."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.data.expertqa import read_expertqa
from ragtruth_spans.data.imported import write_prepared
from ragtruth_spans.data.own_jsonl import read_own_jsonl
from ragtruth_spans.data.summedits import diff_regions, read_summedits
from ragtruth_spans.data.xsum_hallucinations import read_xsum_hallucinations

CONTEXT = "The museum opened in 1999 in Lyon. It holds 300 paintings."


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --- own JSONL --------------------------------------------------------------------------------------------------

def test_own_jsonl_minimal_records_get_counted_defaults(tmp_path):
    rows = [{"context": f"{CONTEXT} Room {i}.", "response": f"It opened in {1990 + i}.",
             "spans": [{"start": 13, "end": 17}]} for i in range(10)]
    rows.append({"context": CONTEXT, "response": "It opened in 1999.", "spans": [],
                 "question": "When did it open?", "id": 7, "model": "gpt", "source_id": "museum"})
    records, report = read_own_jsonl(_jsonl(tmp_path / "mine.jsonl", rows))
    assert [r.id for r in records[:2]] == ["mine-1", "mine-2"] and records[-1].id == "7"
    assert records[0].source_id == "mine-1" and records[-1].source_id == "museum"
    assert records[0].task_type == "Summary" and records[-1].task_type == "QA"
    assert records[0].spans[0].text == "1990" and records[0].spans[0].type is None
    assert report.defaulted == {"id": 10, "source_id": 10, "model": 10, "split": 11, "question": 10,
                                "task (Summary)": 10, "task (QA)": 1}
    stats = write_prepared(tmp_path / "out", records, report, seed=3)
    assert stats["written"] == 11 and not stats["split_given"]
    splits = {name: read_records(tmp_path / "out" / f"{name}.jsonl") for name in ("train", "dev", "test")}
    assert sum(map(len, splits.values())) == 11 and all(splits.values())
    assert not {r.source_id for r in splits["train"]} & {r.source_id for r in splits["test"]}
    again = write_prepared(tmp_path / "again", *read_own_jsonl(tmp_path / "mine.jsonl"), seed=3)
    assert again["splits"] == stats["splits"]  # seeded


@pytest.mark.parametrize(("row", "field", "message"), [
    ({"response": "x", "spans": []}, "context", "missing required field"),
    ({"context": "c", "response": "x"}, "spans", "missing required field"),
    ({"context": "c", "response": "abc", "spans": [{"start": 1, "end": 9}]}, "spans[0]", "not a non-empty span"),
    ({"context": "c", "response": "abc", "spans": [{"start": 0, "end": 2, "text": "bc"}]}, "spans[0].text",
     "differs"),
    ({"context": "c", "response": "abc", "spans": [{"start": 0, "end": 2, "type": "wrong"}]}, "spans[0].type",
     "unknown span type"),
    ({"context": "c", "response": "abc", "spans": [], "task": "Chat"}, "task", "unknown task"),
    ({"context": "c", "response": "abc", "spans": [], "label": 1}, "label", "unknown field"),
    ({"context": "c", "response": "abc", "spans": [{"start": "0", "end": 2}]}, "spans[0].start", "integer"),
    ({"context": "c", "response": "abc", "spans": [], "id": "a#aug-x"}, "id", "may not contain"),
])
def test_own_jsonl_bad_input_names_file_line_and_field(tmp_path, row, field, message):
    path = _jsonl(tmp_path / "bad.jsonl", [{"context": "c", "response": "ok", "spans": []}, row])
    with pytest.raises(InputError, match=message) as error:
        read_own_jsonl(path)
    assert (error.value.path, error.value.line, error.value.field) == (str(path), 2, field)


def test_own_jsonl_split_on_all_or_none_and_duplicate_ids(tmp_path):
    base = {"context": "c", "response": "abc", "spans": []}
    with pytest.raises(InputError, match="every record or on none") as error:
        read_own_jsonl(_jsonl(tmp_path / "a.jsonl", [base | {"split": "train"}, base]))
    assert error.value.line == 2
    with pytest.raises(InputError, match="duplicate id"):
        read_own_jsonl(_jsonl(tmp_path / "b.jsonl", [base | {"id": "x"}, base | {"id": "x"}]))
    records, report = read_own_jsonl(_jsonl(tmp_path / "c.jsonl", [
        base | {"split": "train", "spans": [{"start": 0, "end": 1}, {"start": 0, "end": 1}]},
        base | {"split": "test"}]))
    assert report.repaired == {"duplicate span merged": 1, "records without source_id given the source of an "
                               "identical context": 1} and len(records[0].spans) == 1
    stats = write_prepared(tmp_path / "out", records, report)
    assert stats["split_given"] and stats["splits"]["train"]["responses"] == 1
    assert any("no records" in w for w in stats["warnings"])  # dev is empty: said, not an error
    with pytest.raises(InputError, match="carry their own split"):
        write_prepared(tmp_path / "out2", records, report, split_spec={"train": 1.0})


def test_the_import_command_prints_the_counts_and_fails_in_one_line(tmp_path):
    path = _jsonl(tmp_path / "mine.jsonl", [{"context": CONTEXT, "response": "It opened in 1998.",
                                             "spans": [{"start": 13, "end": 17}]}] * 1)
    result = CliRunner().invoke(app, ["import", "jsonl", "--in", str(path), "--out", str(tmp_path / "out"),
                                      "--split-by-source", "train=1"])
    assert result.exit_code == 0, result.output
    assert "defaulted (field absent)" in result.output and (tmp_path / "out" / "stats.json").is_file()
    bad = _jsonl(tmp_path / "bad.jsonl", [{"context": CONTEXT, "response": "x"}])
    result = CliRunner().invoke(app, ["import", "jsonl", "--in", str(bad), "--out", str(tmp_path / "o2")])
    assert result.exit_code == 2 and "bad.jsonl:1, field 'spans': missing required field" in result.output
    assert "Traceback" not in result.output


# --- SummEdits ---------------------------------------------------------------------------------------------------

def test_summedits_spans_are_the_edited_words(tmp_path):
    original = "The museum opened in 1999 in Lyon."
    items = [
        {"id": "d1_og", "doc": CONTEXT, "summary": original, "label": 1, "original_summary": original,
         "edit_types": [], "split": "test"},
        {"id": "d1_0", "doc": CONTEXT, "summary": "The museum opened in 1998 in Paris.", "label": 0,
         "original_summary": original, "edit_types": ["entity_modification"], "split": "test"},
        {"id": "d1_1", "doc": CONTEXT, "summary": "The museum opened in 1999.", "label": 0,
         "original_summary": original, "edit_types": [], "split": "test"},  # deletion only: skipped
        {"id": "d1_2", "doc": CONTEXT, "summary": original, "label": 0, "original_summary": original,
         "edit_types": [], "split": "test"},  # identical, inconsistent: skipped
        {"id": "d1_3", "doc": CONTEXT, "summary": "The large museum opened in 1999 in Lyon.", "label": 0,
         "original_summary": original, "edit_types": ["hallucinated_fact_insertion", "antonym_swap"],
         "split": "test"},
    ]
    (tmp_path / "summedits_news.json").write_text(json.dumps(items), encoding="utf-8")
    records, report = read_summedits(tmp_path)
    assert [r.id for r in records] == ["summedits-news-d1_og", "summedits-news-d1_0", "summedits-news-d1_3"]
    assert records[0].spans == [] and len({r.source_id for r in records}) == 1
    assert [(s.text, s.type) for s in records[1].spans] == [("1998", "Evident Conflict"),
                                                            ("Paris", "Evident Conflict")]
    assert [(s.text, s.type) for s in records[2].spans] == [("large", None)]
    assert report.input == 5 and report.skipped == {"inconsistent by deletion only (nothing to mark)": 1,
                                                    "inconsistent, identical to original_summary": 1}
    assert report.repaired["inconsistent, type unknown (no or several edit_types): spans untyped"] == 1
    assert diff_regions("a b c", "a x c d") == ([(2, 3), (6, 7)], 0)


# --- XSum hallucinations -----------------------------------------------------------------------------------------

def _xsum(tmp_path: Path, rows: list[tuple]) -> Path:
    with (tmp_path / "hallucination_annotations_xsum_summaries.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["bbcid", "system", "summary", "hallucination_type", "hallucinated_span",
                         "hallucinated_span_start", "hallucinated_span_end", "worker_id"])
        writer.writerows(rows)
    (tmp_path / "articles").mkdir()
    (tmp_path / "articles" / "11.json").write_text(json.dumps({"article": CONTEXT}), encoding="utf-8")
    return tmp_path


def test_xsum_majority_of_annotators_escaped_apostrophes_and_missing_articles(tmp_path):
    summary = "lyon\\'s museum opened in 1998 with 500 works."
    clean = summary.replace("\\'", "'")
    a, b = clean.index("1998"), clean.index("1998") + 4
    rows = [
        ("11", "BERTS2S", summary, "intrinsic", "1998", a + 1, b + 1, "wid_0"),
        ("11", "BERTS2S", summary, "intrinsic", "1998", a, b, "wid_1"),  # 0-based: located by its text
        ("11", "BERTS2S", summary, "extrinsic", "500 works", 1, 2, "wid_0"),  # only one vote: not marked
        ("11", "BERTS2S", summary, "extrinsic", "not there", 1, 9, "wid_2"),
        ("11", "Gold", "the museum opened in 1999.", "NULL", "NULL", -1, -1, "wid_0"),
        ("11", "Gold", "the museum opened in 1999.", "NULL", "NULL", -1, -1, "wid_1"),
        ("22", "Gold", "no article for this one.", "NULL", "NULL", -1, -1, "wid_0"),
    ]
    records, report = read_xsum_hallucinations(_xsum(tmp_path, rows))
    assert [r.id for r in records] == ["xsum-11-BERTS2S", "xsum-11-Gold"]
    assert records[0].response == clean
    assert [(s.start, s.end, s.type) for s in records[0].spans] == [(a, b, "Evident Conflict")]
    assert records[1].spans == [] and records[0].source_id == records[1].source_id == "xsum-11"
    assert report.input == 3 and report.skipped == {"article not in articles/": 1}
    assert report.repaired == {"annotated span offsets off, located by its text": 2,
                               "annotated span text not in the summary (that vote dropped)": 1}
    records, _ = read_xsum_hallucinations(tmp_path, min_votes=1)
    assert [s.text for s in records[0].spans] == ["1998", "500 works"]


# --- ExpertQA ----------------------------------------------------------------------------------------------------

def test_expertqa_unsupported_claims_become_spans(tmp_path):
    evidence = "[1] https://example.org\n\n" + CONTEXT + " " + "More text about the museum. " * 8
    answer = "The museum opened in 1999 [1]. It has 900 paintings [1].  Entry is  free."
    claims = [{"claim_string": "The museum opened in 1999 [1].", "evidence": [evidence], "support": "Complete"},
              {"claim_string": "It has 900 paintings [1].", "evidence": [evidence], "support": "Missing"},
              {"claim_string": "Entry is free.", "evidence": [], "support": "Partial"}]
    rows = [{"question": "When did the museum open?", "answers": {"gpt4": {"answer_string": answer,
                                                                           "claims": claims}}},
            {"question": "Short?", "answers": {"gpt4": {"answer_string": "Yes.", "claims": [
                {"claim_string": "Yes.", "evidence": ["tiny"], "support": "Missing"}]}}},
            {"question": "Only links?", "answers": {"gpt4": {"answer_string": "Yes [1][2].", "claims": [
                {"claim_string": "Yes [1][2].", "support": "Missing", "evidence": [
                    f"[{i}] https://www.example.org/a-long-address-of-a-page-{i}.html" for i in range(1, 6)]}]}}},
            {"question": "When did the museum open?", "answers": {"gpt4": {"answer_string": answer,
                                                                           "claims": claims}}}]
    _jsonl(tmp_path / "rand_val.jsonl", rows)
    records, report = read_expertqa(tmp_path)
    assert len(records) == 1 and records[0].question == "When did the museum open?"
    assert records[0].context.startswith("[1] https://example.org")
    assert [(s.text, s.type) for s in records[0].spans] == [("It has 900 paintings [1].", "Evident Baseless Info"),
                                                            ("Entry is  free.", "Subtle Baseless Info")]
    # the third answer cites 300 characters of links and nothing else: no evidence to judge it by
    skipped = "cited evidence shorter than 200 characters without citation marks and links"
    assert report.input == 4 and report.skipped == {skipped: 2, "duplicate (same question, system and answer)": 1}
    assert report.repaired == {"claim located with whitespace normalised": 1}
    records, _ = read_expertqa(tmp_path, partial=False)
    assert [s.type for s in records[0].spans] == ["Evident Baseless Info"]
    kept, report = read_expertqa(tmp_path, keep_link_only=True)  # as before: only the raw length counts
    assert [r.question for r in kept] == ["When did the museum open?", "Only links?"]
    assert report.details["link_only_kept"] == 1
    assert report.skipped == {"cited evidence shorter than 200 characters": 1,
                              "duplicate (same question, system and answer)": 1}
