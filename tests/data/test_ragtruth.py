"""Reading official RAGTruth files: conversion, label checking/repair, duplicates/overlaps, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragtruth_spans import sample_data_dir
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import HALLUCINATION_TYPES, TASK_TYPES
from ragtruth_spans.data.hf_dataset import to_dataset
from ragtruth_spans.data.ragtruth import (
    REPAIR_WINDOW,
    check_label,
    convert_ragtruth,
    load_ragtruth,
    normalize_quality,
)

RESPONSE = "The café opened in 1998 and offers free parking."


def qa_source(source_id: str = "s1") -> dict:
    return {"source_id": source_id, "task_type": "QA", "source": "MARCO", "prompt": "p",
            "source_info": {"question": "when did it open?", "passages": "passage 1:The café opened in 1999."}}


def response_line(rid: str = "r1", labels: list[dict] | None = None, **changes) -> dict:
    obj = {"id": rid, "source_id": "s1", "model": "gpt-4-0613", "temperature": 0.7, "labels": labels or [],
           "split": "train", "quality": "good", "response": RESPONSE}
    obj.update(changes)
    return obj


def label(text: str, start: int | None = None, end: int | None = None, label_type: str = "Evident Conflict",
          response: str = RESPONSE, **flags) -> dict:
    start = response.find(text) if start is None else start
    end = start + len(text) if end is None else end
    return {"start": start, "end": end, "text": text, "meta": "", "label_type": label_type,
            "implicit_true": False, "due_to_null": False, **flags}


def write_dir(root: Path, responses: list, sources: list | None = None) -> Path:
    """A RAGTruth directory; list items that are str are written verbatim (for bad JSON)."""
    root.mkdir(parents=True, exist_ok=True)
    for name, rows in (("response.jsonl", responses), ("source_info.jsonl", sources or [qa_source()])):
        text = "".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows)
        (root / name).write_text(text, encoding="utf-8")
    return root


# --- the embedded sample ---------------------------------------------------------------------------------------

def test_embedded_sample_converts_with_every_span_matching():
    records, report = convert_ragtruth(sample_data_dir())
    assert len(records) == 76 and len({r.id for r in records}) == 76
    assert {r.task_type for r in records} == set(TASK_TYPES)
    assert {r.split for r in records} == {"train", "test"}
    spans = [s for r in records for s in r.spans]
    for r in records:
        for s in r.spans:
            assert r.response[s.start:s.end] == s.text
        assert r.spans == sorted(r.spans)
    assert {s.type for s in spans} == set(HALLUCINATION_TYPES)
    assert any(s.implicit_true for s in spans) and any(s.due_to_null for s in spans)
    # counts add up: 57 labels, one deliberately shifted label repaired, nothing dropped
    assert report.labels == 57 == report.exact + len(report.repaired) + len(report.unrepairable)
    assert (report.exact, len(report.repaired), len(report.unrepairable), len(report.duplicates)) == (56, 1, 0, 0)
    assert report.spans == len(spans) == 57
    fixed = report.repaired[0]
    assert fixed["id"] == "5045" and (fixed["new_start"], fixed["new_end"]) == (fixed["start"] - 2, fixed["end"] - 2)


def test_embedded_sample_repeated_phrase_and_unicode():
    records = {r.id: r for r in load_ragtruth(sample_data_dir(), keep_quality=None)}
    mona = records["5012"]
    assert mona.response.count("in 1503") == 2
    assert [s.start for s in mona.spans if s.text == "in 1503"] == [mona.response.rfind("in 1503")]
    # emoji outside the BMP before a label: offsets are code points
    night = next(r for r in records.values() if "🧋," in r.response and r.spans)
    assert all(night.response[s.start:s.end] == s.text for s in night.spans)
    assert any(ord(ch) > 0xFFFF for ch in night.response[:night.spans[0].start])


def test_context_fields_per_task():
    records = load_ragtruth(sample_data_dir(), keep_quality=None)
    lines = [json.loads(x) for x in (sample_data_dir() / "source_info.jsonl").read_text("utf-8").splitlines()]
    info = {s["source_id"]: s["source_info"] for s in lines}
    for r in records:
        if r.task_type == "QA":
            assert r.question == info[r.source_id]["question"] and r.context == info[r.source_id]["passages"]
        elif r.task_type == "Summary":
            assert r.question is None and r.context == info[r.source_id]
        else:
            assert r.question is None and json.loads(r.context) == info[r.source_id]
            assert r.context == json.dumps(info[r.source_id], ensure_ascii=False)
    golden = next(r for r in records if r.context.startswith('{"name": "Golden Dragon"'))
    assert '"hours": null' in golden.context and "虾饺" in golden.context


def test_load_filters_split_and_quality():
    d = sample_data_dir()
    assert len(load_ragtruth(d)) == 73  # default keeps quality "good"
    assert len(load_ragtruth(d, keep_quality=None)) == 76
    assert len(load_ragtruth(d, keep_quality=["all"])) == 76
    assert {r.quality for r in load_ragtruth(d, keep_quality=["truncated"])} == {"truncated"}
    test = load_ragtruth(d, split="test")
    assert len(test) == 22 and {r.split for r in test} == {"test"}
    with pytest.raises(InputError, match="unknown split 'dev'"):
        load_ragtruth(d, split="dev")


def test_normalize_quality():
    assert normalize_quality(["good, truncated", "good"]) == ("good", "truncated")
    assert normalize_quality("all") is None and normalize_quality(None) is None
    with pytest.raises(InputError, match="keep_quality"):
        normalize_quality([" , "])


def test_accepts_a_ragtruth_clone_root(tmp_path):
    write_dir(tmp_path / "RAGTruth" / "dataset", [response_line()])
    assert [r.id for r in load_ragtruth(tmp_path / "RAGTruth")] == ["r1"]


def test_shared_real_sample(shared_sample_dir):
    records, report = convert_ragtruth(shared_sample_dir)
    assert len(records) == 142 and {r.split for r in records} == {"test"}
    assert report.labels == report.exact == report.spans == sum(len(r.spans) for r in records)
    for r in records:
        assert all(r.response[s.start:s.end] == s.text for s in r.spans)
    assert sum(r.task_type == "Data2txt" for r in records) == 48


def test_to_dataset_round_trip():
    records = load_ragtruth(sample_data_dir())
    ds = to_dataset(records)
    assert len(ds) == len(records)
    assert set(ds.column_names) == {"id", "source_id", "task_type", "model", "split", "quality", "response",
                                    "context", "question", "spans"}
    row = ds[[r.id for r in records].index("5001")]
    assert row["spans"][0] == {"start": 47, "end": 57, "type": "Evident Conflict", "text": "15 minutes",
                               "implicit_true": False, "due_to_null": False}
    assert ds[0]["spans"] == []


# --- label checking and repair ---------------------------------------------------------------------------------

def test_check_label_exact_and_repaired():
    start = RESPONSE.find("1998")
    assert check_label(RESPONSE, start, start + 4, "1998").status == "exact"
    shifted = check_label(RESPONSE, start + 3, start + 7, "1998")
    assert (shifted.status, shifted.start, shifted.end, shifted.text) == ("repaired", start, start + 4, "1998")
    # only the end was wrong
    assert check_label(RESPONSE, start, start + 9, "1998").start == start


def test_check_label_whitespace_stripped():
    start = RESPONSE.find("free parking")
    result = check_label(RESPONSE, start, start + 13, " free parking\n")
    assert (result.status, result.start, result.end, result.text) == ("repaired", start, start + 12,
                                                                      "free parking")


def test_check_label_ambiguous_not_found_and_far():
    text = "the cat saw the cat."
    ambiguous = check_label(text, 1, 8, "the cat")
    assert ambiguous.status == "unrepairable" and "ambiguous: 2 occurrences" in ambiguous.reason
    assert check_label("aaaa", 0, 1, "aa").status == "unrepairable"  # overlapping occurrences count too
    missing = check_label(RESPONSE, 0, 4, "1999")
    assert missing.status == "unrepairable" and "not found" in missing.reason
    far = "x" * (REPAIR_WINDOW + 10) + "needle"
    assert check_label(far, 0, 6, "needle").status == "unrepairable"
    near = "x" * REPAIR_WINDOW + "needle"
    assert check_label(near, 0, 6, "needle").status == "repaired"
    assert check_label(RESPONSE, 3, 3, "").reason == "empty label text"


def test_unrepairable_labels_are_dropped_and_listed(tmp_path):
    d = write_dir(tmp_path, [response_line(labels=[label("1999", 19, 23), label("1998")])])
    records, report = convert_ragtruth(d)
    assert [s.text for s in records[0].spans] == ["1998"]
    assert report.unrepairable == [{"id": "r1", "label_index": 0, "start": 19, "end": 23, "text": "1999",
                                    "type": "Evident Conflict",
                                    "reason": f"text not found within {REPAIR_WINDOW} characters of start"}]


def test_duplicates_removed_and_overlaps_kept(tmp_path):
    labels = [label("free parking"), label("free parking"),  # exact duplicate
              label("free parking", label_type="Evident Baseless Info"),  # same range, other type
              label("offers free"),  # overlaps both
              label("1998", implicit_true=True)]
    records, report = convert_ragtruth(write_dir(tmp_path, [response_line(labels=labels)]))
    spans = records[0].spans
    assert len(spans) == 4 and len(report.duplicates) == 1 and report.duplicates[0]["label_index"] == 1
    assert len(report.overlaps) == 3  # offers free x2 + the two types of "free parking"
    assert spans[0].text == "1998" and spans[0].implicit_true
    assert report.spans == 4 == report.exact - len(report.duplicates)


# --- malformed input: each error names file, line and field ---------------------------------------------------

BAD_RESPONSES = [
    ("bad JSON", ['{"id": "r1", ', ], 1, None, "invalid JSON"),
    ("missing field", [response_line(), {k: v for k, v in response_line("r2").items() if k != "response"}],
     2, "response", "missing required field"),
    ("missing label field", [response_line(labels=[{"start": 0, "end": 3, "text": "The"}])],
     1, "labels[0].label_type", "missing required field"),
    ("unknown label type", [response_line(labels=[label("1998", label_type="Evident Confict")])],
     1, "labels[0].label_type", "unknown label type 'Evident Confict'"),
    ("no source", [response_line(source_id="s9")], 1, "source_id", "source_id 's9' has no source"),
    ("end out of range", [response_line(labels=[label("parking.x", 41, 50)])], 1, "labels[0].end",
     "out of range for a response of 48 characters"),
    ("start out of range", [response_line(labels=[label("The", -200, 3)])], 1, "labels[0].start",
     "out of range"),
    ("offset not int", [response_line(labels=[label("1998") | {"start": "19"}])], 1, "labels[0].start",
     "must be an integer"),
    ("duplicate id", [response_line(), response_line()], 2, "id", "duplicate response id 'r1'"),
    ("unknown split", [response_line(split="validation")], 1, "split", "unknown split 'validation'"),
    ("flag not bool", [response_line(labels=[label("1998", due_to_null="no")])], 1, "labels[0].due_to_null",
     "must be true or false"),
]


@pytest.mark.parametrize("case,rows,line,field,message", BAD_RESPONSES, ids=[c[0] for c in BAD_RESPONSES])
def test_bad_response_file(tmp_path, case, rows, line, field, message):
    d = write_dir(tmp_path, rows)
    with pytest.raises(InputError) as info:
        convert_ragtruth(d)
    text = str(info.value)
    assert f"{d / 'response.jsonl'}:{line}" in text and message in text
    assert info.value.line == line and info.value.field == field
    if field:
        assert f"field '{field}'" in text


BAD_SOURCES = [
    ("bad JSON", [qa_source(), "{not json"], 2, None, "invalid JSON"),
    ("unknown task type", [qa_source() | {"task_type": "Dialogue"}], 1, "task_type",
     "unknown task type 'Dialogue'"),
    ("missing source_info", [{k: v for k, v in qa_source().items() if k != "source_info"}], 1, "source_info",
     "missing required field"),
    ("QA without passages", [qa_source() | {"source_info": {"question": "q"}}], 1, "source_info.passages",
     "missing required field"),
    ("Summary not a string", [qa_source() | {"task_type": "Summary"}], 1, "source_info", "must be the article"),
    ("Data2txt not an object", [qa_source() | {"task_type": "Data2txt", "source_info": "x"}], 1, "source_info",
     "business JSON object"),
    ("duplicate source", [qa_source(), qa_source()], 2, "source_id", "duplicate source_id 's1'"),
]


@pytest.mark.parametrize("case,rows,line,field,message", BAD_SOURCES, ids=[c[0] for c in BAD_SOURCES])
def test_bad_source_file(tmp_path, case, rows, line, field, message):
    d = write_dir(tmp_path, [response_line()], rows)
    with pytest.raises(InputError) as info:
        convert_ragtruth(d)
    text = str(info.value)
    assert f"{d / 'source_info.jsonl'}:{line}" in text and message in text
    assert info.value.field == field


def test_missing_files(tmp_path):
    with pytest.raises(InputError, match="RAGTruth directory not found"):
        load_ragtruth(tmp_path / "nope")
    with pytest.raises(InputError, match="expected response.jsonl and source_info.jsonl"):
        load_ragtruth(tmp_path)


def test_out_of_range_offsets_repaired_when_text_is_nearby(tmp_path):
    # end beyond the response, but the text sits unambiguously close: repaired and counted, not an error
    response = "Short answer: 42."
    d = write_dir(tmp_path, [response_line(response=response, labels=[label("42", 15, 17, response=response)])])
    records, report = convert_ragtruth(d)
    assert records[0].spans[0].start == 14 and len(report.repaired) == 1


def test_checked_in_sample_matches_its_generator():
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "make_sample.py"
    result = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
