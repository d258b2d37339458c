"""``import begin``: BEGIN's TSV files read strictly (quotes are text, labels stripped, an unknown label or set is
one error naming file, line and field), response-level labels kept as ``unlocated`` records without spans,
generic responses and repeated lines skipped and counted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.data.begin import COLUMNS, read_begin

KNOWLEDGE = "The Eiffel Tower is 330 metres tall and was completed in 1889."


def _row(response: str, label: str, *, model: str = "t5", source: str = "wow", knowledge: str = KNOWLEDGE,
         message: str = "How tall is it?") -> str:
    return "\t".join([model, source, knowledge, message, response, label])


def _folder(tmp_path: Path, rows: list[str], name: str = "begin_dev_wow.tsv", sub: str = "wow") -> Path:
    (tmp_path / sub).mkdir(parents=True, exist_ok=True)
    (tmp_path / sub / name).write_text("\n".join(["\t".join(COLUMNS), *rows]) + "\n", encoding="utf-8")
    return tmp_path


def test_labels_become_response_level_records_without_spans(tmp_path):
    folder = _folder(tmp_path, [
        _row("it reaches 330 metres", "Fully attributable"),
        _row('it is "the iron lady", built by Gustave Eiffel', "Not fully attributable  "),  # stray spaces
        _row("i love that place!", " Generic"),
        _row("it reaches 330 metres", "Fully attributable", model="gpt2"),  # the same line again
        _row("it was finished in 1889", "Fully attributable", message=""),
    ])
    records, report = read_begin(folder)
    assert [(r.response, r.unlocated, r.spans) for r in records] == [
        ("it reaches 330 metres", False, []), ('it is "the iron lady", built by Gustave Eiffel', True, []),
        ("it was finished in 1889", False, [])]
    assert [r.hallucinated for r in records] == [False, True, False]
    assert {r.source_id for r in records} == {records[0].source_id}  # one snippet: one source
    assert records[0].task_type == "QA" and records[0].model == "begin/t5" and records[0].context == KNOWLEDGE
    assert records[0].question == "How tall is it?" and records[2].question is None
    assert report.input == 5 and sum(report.skipped.values()) == 2
    assert report.skipped["generic response (no claim to attribute)"] == 1
    assert report.defaulted["question (empty message)"] == 1
    assert report.details["labels"] == {"Fully attributable": 3, "Not fully attributable": 1, "Generic": 1}


def test_files_are_found_in_subfolders_in_path_order(tmp_path):
    _folder(tmp_path, [_row("it reaches 330 metres", "Fully attributable", source="cmu")], "begin_dev_cmu.tsv",
            "cmu-dog")
    _folder(tmp_path, [_row("it is 300 feet", "Not fully attributable", source="wow")], "begin_test_wow.tsv")
    records, report = read_begin(tmp_path)
    assert [r.id for r in records] == ["begin-dev-cmu-2", "begin-test-wow-2"]
    assert set(report.details["files"]) == {"cmu-dog/begin_dev_cmu.tsv", "wow/begin_test_wow.tsv"}


@pytest.mark.parametrize(("row", "field", "message"), [
    (_row("it is tall", "Partly attributable"), "begin_label", "unknown BEGIN label 'Partly attributable'"),
    (_row("it is tall", "Fully attributable", source="reddit"), "data_source", "unknown data source 'reddit'"),
    (_row("it is tall", "Fully attributable", model=" "), "model_name", "empty model name"),
    (_row("it is\ttall", "Fully attributable"), None, "7 fields where the header has 6"),
])
def test_a_bad_line_is_one_error_naming_file_line_and_field(tmp_path, row, field, message):
    folder = _folder(tmp_path, [_row("it is 330 m", "Fully attributable"), row])
    with pytest.raises(InputError, match=message) as error:
        read_begin(folder)
    assert (error.value.path, error.value.line, error.value.field) == (
        str(folder / "wow" / "begin_dev_wow.tsv"), 3, field)


def test_no_file_and_a_misnamed_file_are_refused(tmp_path):
    with pytest.raises(InputError, match="no begin_"):
        read_begin(tmp_path)
    (tmp_path / "begin_wow.tsv").write_text("\t".join(COLUMNS) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="begin_<split>_<set>.tsv"):
        read_begin(tmp_path)


def test_unlocated_round_trips_and_is_absent_from_located_lines():
    record = Record("r", "s", "QA", "m", "train", "good", "It rained.", "Sunny.", unlocated=True)
    assert Record.from_dict(record.to_dict()) == record
    plain = Record("r", "s", "QA", "m", "train", "good", "It rained.", "Sunny.")
    assert "unlocated" not in plain.to_dict()  # the prepared format of every other record is unchanged
    with pytest.raises(InputError, match="true or false") as error:
        Record.from_dict(plain.to_dict() | {"unlocated": "yes"})
    assert error.value.field == "unlocated"
    located = Record("r", "s", "QA", "m", "train", "good", "It rained.", "Sunny.", spans=[Span(3, 9)])
    with pytest.raises(InputError, match="located"):
        Record.from_dict(located.to_dict() | {"unlocated": True})


def test_cli_writes_counted_prepared_files(tmp_path):
    rows = [_row(f"it is {i} metres", "Not fully attributable" if i % 2 else "Fully attributable",
                 knowledge=f"Tower {i} is {i} metres tall.") for i in range(20)]
    folder = _folder(tmp_path / "in", [*rows, _row("nice!", "Generic")])
    result = CliRunner().invoke(app, ["import", "begin", "--in", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    stats = json.loads((tmp_path / "out" / "stats.json").read_text(encoding="utf-8"))
    assert (stats["input"], stats["written"], stats["skipped"]) == (
        21, 20, {"generic response (no claim to attribute)": 1})
    written = [r for split in ("train", "dev", "test") for r in read_records(tmp_path / "out" / f"{split}.jsonl")]
    assert sum(r.unlocated for r in written) == 10 and not any(r.spans for r in written)
    assert sum(s["hallucinated_responses"] for s in stats["splits"].values()) == 10


def test_cli_bad_label_is_one_line_exit_2(tmp_path):
    folder = _folder(tmp_path / "in", [_row("it is tall", "Maybe")])
    result = CliRunner().invoke(app, ["import", "begin", "--in", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "begin_dev_wow.tsv:2" in result.output and "begin_label" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_unlocated_records_are_hallucinated_responses_to_the_evaluator():
    from ragtruth_spans.evaluation.evaluator import evaluate

    gold = [Record("a", "s", "QA", "m", "dev", "good", "It rained all day.", "Sunny.", unlocated=True),
            Record("b", "s", "QA", "m", "dev", "good", "It was sunny.", "Sunny.")]
    report = evaluate(gold, {"a": [Span(3, 9, score=0.9)], "b": []}, response_scores={"a": 0.9, "b": 0.2})
    assert report.overall["response"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert report.to_dict()["auroc"] == 1.0


@pytest.mark.parametrize("blank", ["   ", "\u00a0", "\u3000", "\u200b", "\ufeff\u2028"])
def test_a_blank_response_or_snippet_is_skipped_so_the_split_reads_back(tmp_path, blank):
    """The one blank rule (``core.fields.is_blank``): what the importer writes, every reader reads."""
    folder = _folder(tmp_path / "in", [_row(blank, "Fully attributable"),
                                       _row("it reaches 330 metres", "Fully attributable", knowledge=blank),
                                       _row("it reaches 330 metres", "Fully attributable")])
    records, report = read_begin(folder)
    assert [r.response for r in records] == ["it reaches 330 metres"]
    assert report.skipped["empty knowledge or response"] == 2
