"""Strict importers: a stray quote, a short row, bytes that are not UTF-8, a field over the csv limit and
fields of the wrong type or value are one-line errors naming file, line and field (never a garbled record or a
traceback); records of one context without a source_id stay in one source."""

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
from ragtruth_spans.data.summedits import read_summedits
from ragtruth_spans.data.xsum_hallucinations import CSV_NAME, read_xsum_hallucinations

HEADER = "bbcid,system,summary,hallucination_type,hallucinated_span,hallucinated_span_start," \
         "hallucinated_span_end,worker_id\n"
CONTEXT = "The museum opened in 1999 in Lyon. It holds 300 paintings."


def _row(i: int, summary: str = "the museum opened in 1998.", kind: str = "intrinsic") -> str:
    return f"11,S{i},{summary},{kind},1998,22,26,wid_{i}\n"


def _xsum_folder(tmp_path: Path, body: str | bytes) -> Path:
    raw = HEADER.encode() + (body if isinstance(body, bytes) else body.encode("utf-8"))
    (tmp_path / CSV_NAME).write_bytes(raw)
    (tmp_path / "articles").mkdir()
    (tmp_path / "articles" / "11.json").write_text(json.dumps({"article": CONTEXT}), encoding="utf-8")
    return tmp_path


def test_xsum_well_formed_rows_are_read(tmp_path):
    records, report = read_xsum_hallucinations(_xsum_folder(tmp_path, "".join(_row(i) for i in range(20))),
                                               min_votes=1)
    assert len(records) == 20 and report.input == 20


@pytest.mark.parametrize(("body", "line", "field", "message"), [
    (_row(0) + _row(1, summary='"the museum opened in 1998.') + "".join(_row(i) for i in range(2, 20)), 3, None,
     "stray"),
    (_row(0) + "11,S1,the museum\n", 3, None, "3 fields where the header has 8"),
    ((_row(0) + _row(1)).encode() + b"11,S2,caf\xe9,intrinsic,x,1,2,w\n", 4, None, "not valid UTF-8"),
    (_row(0) + _row(1, kind="intrnsic"), 3, "hallucination_type", "unknown hallucination type 'intrnsic'"),
    (_row(0) + "11,S1,the museum opened in 1998.,intrinsic,1998,twenty,26,wid_1\n", 3, "hallucinated_span_start",
     "integer"),
    (_row(0) + "11,,the museum opened in 1998.,intrinsic,1998,22,26,wid_1\n", 3, "system", "empty"),
])
def test_xsum_malformed_csv_is_one_error_naming_the_line(tmp_path, body, line, field, message):
    folder = _xsum_folder(tmp_path, body)
    with pytest.raises(InputError, match=message) as error:
        read_xsum_hallucinations(folder)
    assert (error.value.path, error.value.line, error.value.field) == (str(folder / CSV_NAME), line, field)


def test_xsum_a_field_over_the_csv_limit_is_one_line_through_the_cli(tmp_path):
    huge = "x" * (csv.field_size_limit() + 10)
    (tmp_path / "in").mkdir()
    folder = _xsum_folder(tmp_path / "in", _row(0) + f'11,S1,"{huge}",intrinsic,1998,22,26,wid_1\n')
    result = CliRunner().invoke(app, ["import", "xsum-hallucinations", "--in", str(folder), "--out",
                                      str(tmp_path / "out")])  # beside the input: never inside it
    assert result.exit_code == 2, result.output
    assert f"{CSV_NAME}:3" in result.output and "limit" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


def _summedits(tmp_path: Path, **change) -> Path:
    item = {"id": "d1_0", "doc": CONTEXT, "summary": "The museum opened in 1998.", "label": "0",
            "original_summary": "The museum opened in 1999.", "edit_types": ["entity_modification"]} | change
    (tmp_path / "summedits_news.json").write_text(json.dumps([item]), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("change", "field", "message"), [
    ({"label": True}, "item 0.label", "integer 0 or 1"),
    ({"label": 1.0}, "item 0.label", "integer 0 or 1"),
    ({"label": 2}, "item 0.label", "integer 0 or 1"),
    ({"label": "true"}, "item 0.label", "integer 0 or 1"),
    ({"id": ["d", 1]}, "item 0.id", "string or an integer"),
    ({"edit_types": "entity_modification"}, "item 0.edit_types", "list of edit type names"),
    ({"edit_types": [{"kind": "x"}]}, "item 0.edit_types", "list of edit type names"),
    ({"edit_types": ["entity_swap"]}, "item 0.edit_types", "unknown edit type 'entity_swap'"),
    ({"summary": 3}, "item 0.summary", "must be a string"),
])
def test_summedits_fields_are_type_checked(tmp_path, change, field, message):
    with pytest.raises(InputError, match=message) as error:
        read_summedits(_summedits(tmp_path, **change))
    assert error.value.field == field


def test_summedits_integer_ids_are_their_digits_and_labels_are_0_or_1(tmp_path):
    records, _ = read_summedits(_summedits(tmp_path, id=7))
    assert records[0].id == "summedits-news-7" and records[0].spans  # "0": inconsistent
    for label in (1, "1"):
        records, _ = read_summedits(_summedits(tmp_path, label=label))
        assert records[0].spans == []


def _expertqa(tmp_path: Path, claims) -> Path:
    answer = {"answer_string": "The museum opened in 1999. It has 900 paintings.", "claims": claims}
    row = {"question": "When did the museum open?", "answers": {"gpt4": answer}}
    (tmp_path / "rand_test.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(("claims", "field", "message"), [
    ("one claim", "answers.gpt4.claims", "list of claims"),
    (["a claim"], "answers.gpt4.claims[0]", "must be an object"),
    ([{"claim_string": 5, "evidence": [], "support": "Complete"}], "answers.gpt4.claims[0].claim_string",
     "must be a string"),
    ([{"claim_string": "c", "evidence": "passage", "support": "Complete"}], "answers.gpt4.claims[0].evidence",
     "list of passages"),
    ([{"claim_string": "c", "evidence": [3], "support": "Complete"}], "answers.gpt4.claims[0].evidence[0]",
     "must be a string"),
    ([{"claim_string": "c", "evidence": [], "support": "Mostly"}], "answers.gpt4.claims[0].support",
     "unknown support judgement"),
])
def test_expertqa_claims_and_evidence_are_type_checked(tmp_path, claims, field, message):
    folder = _expertqa(tmp_path, claims)
    with pytest.raises(InputError, match=message) as error:
        read_expertqa(folder)
    assert (error.value.line, error.value.field) == (1, field)


def test_import_jsonl_keeps_identical_contexts_in_one_source(tmp_path):
    contexts = [f"{CONTEXT} Wing {c}." for c in range(10)]
    rows = [{"context": contexts[i % 10], "response": f"It opened in {1990 + i}.", "spans": []} for i in range(30)]
    rows.append({"context": contexts[0], "response": "It opened in 1999.", "spans": [], "source_id": "given"})
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    records, report = read_own_jsonl(path)
    assert len({r.source_id for r in records}) == 10
    assert {r.source_id for r in records if r.context == contexts[0]} == {"given"}
    assert report.repaired["records without source_id given the source of an identical context"] == 21
    write_prepared(tmp_path / "out", records, report, seed=0)
    split_of: dict[str, set[str]] = {}
    for name in ("train", "dev", "test"):
        for record in read_records(tmp_path / "out" / f"{name}.jsonl"):
            split_of.setdefault(record.context, set()).add(name)
    assert all(len(names) == 1 for names in split_of.values()), split_of


@pytest.mark.parametrize("field", ["response", "context"])
@pytest.mark.parametrize("blank", [" ", "\u00a0", "\u2028", "\u3000", "\u200b"])
def test_import_jsonl_refuses_a_blank_response_or_context(tmp_path, field, blank):
    good = {"context": "The museum opened in 1999.", "response": "It opened in 1998.", "spans": []}
    path = tmp_path / "mine.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good | {field: blank}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="is empty or blank") as error:
        read_own_jsonl(path)
    assert (error.value.line, error.value.field) == (2, field)
