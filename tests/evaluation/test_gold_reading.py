"""Gold files are read as strictly as docs/DATA.md says, by one reader for every command: a record whose ``spans``
is missing or null is refused (file, line, field; exit 2), never scored as a faithful response, and so is a blank
response or context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import read_records, write_records
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.evaluation import load_gold

LINE = {"id": "r1", "source_id": "s1", "task_type": "Summary", "model": "m", "split": "test", "quality": "good",
        "response": "The museum opened in 1998.", "context": "The museum opened in 1999."}

BAD_LINES = [
    ({k: v for k, v in LINE.items()}, "spans", "missing required field"),   # spans left out
    (LINE | {"spans": None}, "spans", "must be a list of spans"),            # spans: null
    (LINE | {"spans": {}}, "spans", "must be a list of spans"),
    (LINE | {"spans": [], "response": " "}, "response", "empty or blank"),
    (LINE | {"spans": [], "response": "\u00a0\u2028\u3000\u200b"}, "response", "empty or blank"),
    (LINE | {"spans": [], "context": "\n"}, "context", "empty or blank"),
]


def _gold(tmp_path: Path, bad: dict) -> Path:
    """Two good hallucinated records, then ``bad`` on line 3."""
    good = [Record(id=f"g{i}", source_id="s", task_type="Summary", model="m", split="test", quality="good",
                   response="It opened in 1998.", context="It opened in 1999.", spans=[Span(13, 17)])
            for i in range(2)]
    path = tmp_path / "gold.jsonl"
    write_records(path, good)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(bad) + "\n")
    return path


@pytest.mark.parametrize(("bad", "field", "message"), BAD_LINES)
def test_the_one_record_reader_refuses_what_the_docs_require(tmp_path, bad, field, message):
    path = _gold(tmp_path, bad)
    for read in (read_records, load_gold):
        with pytest.raises(InputError, match=message) as error:
            read(path)
        assert (error.value.path, error.value.line, error.value.field) == (str(path), 3, field)


@pytest.mark.parametrize(("bad", "field", "message"), BAD_LINES[:2])
@pytest.mark.parametrize("command", ["evaluate", "report", "select"])
def test_every_gold_command_stops_with_one_line(tmp_path, bad, field, message, command):
    """A labelled hallucination without ``spans`` used to be scored as clean (a perfect detector read response
    precision 0.5); now the command stops before scoring."""
    gold = _gold(tmp_path, bad)
    pred = tmp_path / "pred.jsonl"
    pred.write_text("".join(json.dumps({"id": rid, "spans": [{"start": 13, "end": 17}]}) + "\n"
                            for rid in ("g0", "g1", "r1")), encoding="utf-8")
    args = {"evaluate": ["evaluate", "--gold", str(gold), "--pred", str(pred)],
            "report": ["report", "--gold", str(gold), "--pred", str(pred), "--out", str(tmp_path / "r.html")],
            "select": ["select", "--gold", str(gold), "--pred", str(pred), "--models", "m"]}[command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    flat = " ".join(result.output.split())
    assert "gold.jsonl:3" in flat and f"field '{field}'" in flat and message in flat
    assert "Traceback" not in result.output and not (tmp_path / "r.html").exists()


def _round_trip(folder: Path, out: Path) -> None:
    from ragtruth_spans.data.ragtruth import load_ragtruth

    records = load_ragtruth(folder, keep_quality=None)
    write_records(out, records)
    assert records and read_records(out) == records


def test_the_embedded_sample_still_reads(tmp_path):
    from ragtruth_spans.data.ragtruth import sample_data_dir

    _round_trip(sample_data_dir(), tmp_path / "sample.jsonl")


def test_the_shared_ragtruth_data_still_reads(tmp_path, shared_sample_dir):
    for folder in (shared_sample_dir, shared_sample_dir.parent / "ragtruth_pool"):
        _round_trip(folder, tmp_path / f"{folder.name}.jsonl")
