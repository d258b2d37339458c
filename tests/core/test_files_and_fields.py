"""The shared core: atomic files, one writer per output, output paths checked first, one strict JSON
parser and one strict rule per kind of field (text, id, flag, score)."""

from __future__ import annotations

import json
import multiprocessing
import re
from pathlib import Path

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import check_bool, check_id, check_score, check_text, is_finite_number
from ragtruth_spans.core.files import (
    atomic_write_json,
    atomic_write_text,
    atomic_writer,
    check_output_path,
    exclusive_output,
    lock_path,
)
from ragtruth_spans.core.jsonl import iter_jsonl, loads_json, read_records

RECORD = {"id": "r1", "source_id": "s1", "task_type": "QA", "model": "m", "split": "test", "quality": "good",
          "response": "It opened in 1998.", "context": "Opened in 1999.", "question": "When?",
          "spans": [{"start": 13, "end": 17, "type": "Evident Conflict", "text": "1998", "implicit_true": False,
                     "due_to_null": False}]}


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "timing.json"
    atomic_write_json(target, {"seconds": 1.5})
    assert json.loads(target.read_text()) == {"seconds": 1.5}
    with pytest.raises(RuntimeError), atomic_writer(target) as fh:
        fh.write('{"seconds": ')  # a crash mid-write ...
        raise RuntimeError("killed")
    assert json.loads(target.read_text()) == {"seconds": 1.5}  # ... leaves the old file, not a torn one
    assert sorted(p.name for p in target.parent.iterdir()) == ["timing.json"]  # no temporary file left
    with pytest.raises(InputError, match="lone surrogate"):
        atomic_write_text(target, "bad \ud800")
    assert json.loads(target.read_text()) == {"seconds": 1.5}


def test_unwritable_outputs_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(InputError, match="is a folder, not a file"):
        check_output_path(tmp_path, field="--json")
    with pytest.raises(InputError, match="a_file is a file, not a folder"):
        check_output_path(tmp_path / "a_file" / "out.json", field="--json")
    with pytest.raises(InputError, match="cannot write"):
        atomic_write_text(tmp_path / "a_file" / "out.json", "{}")
    assert check_output_path(tmp_path / "new" / "deeper" / "out.json") == tmp_path / "new" / "deeper" / "out.json"


def _hold(path: str, ready, release) -> None:  # a second process holding the lock
    with exclusive_output(path):
        ready.set()
        release.wait(30)


def test_one_writer_per_output(tmp_path: Path) -> None:
    out = tmp_path / "pred.jsonl"
    with exclusive_output(out):
        assert lock_path(out).exists()
        with pytest.raises(InputError, match="another process is writing this file"), exclusive_output(out):
            pass
    assert not lock_path(out).exists()
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(out), ready, release))
    holder.start()
    try:
        assert ready.wait(30)
        with pytest.raises(InputError, match="pred.jsonl: another process is writing"), exclusive_output(out):
            pass
    finally:
        release.set()
        holder.join(30)
    with exclusive_output(out):  # free again once the other writer is gone
        pass


@pytest.mark.parametrize(("raw", "message"), [
    ("1" * 4301, "Exceeds the limit"),
    ("[" * 100_000, "nested too deeply"),
    ('{"a": NaN}', "NaN is not JSON"),
    ('{"a": Infinity}', "Infinity is not JSON"),
    ('{"a": ', "invalid JSON"),
])
def test_json_refused_late_by_python_is_one_input_error(raw: str, message: str) -> None:
    with pytest.raises(InputError, match=f"f.jsonl:3: .*{message}"):
        loads_json(raw, "f.jsonl", 3)


def test_every_jsonl_reader_shares_the_safe_parser(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text('{"a": 1}\n{"a": ' + "9" * 5000 + "}\n")
    with pytest.raises(InputError, match="f.jsonl:2: invalid JSON: Exceeds the limit"):
        list(iter_jsonl(path))


def test_field_rules() -> None:
    assert check_text("ok", field="f") == "ok" and check_text(None, field="f", optional=True) is None
    for bad, message in ((5, "must be a string, got an integer"), ({"a": 1}, "got an object"),
                         ("x\ud800y", "lone surrogate U\\+D800 at character 1")):
        with pytest.raises(InputError, match=message):
            check_text(bad, field="context")
    assert check_id(7) == 7 and check_id("a") == "a"
    for bad in (True, 1.5, None, ["a"]):
        with pytest.raises(InputError, match="must be a string or an integer"):
            check_id(bad)
    assert check_bool(None, field="f") is False and check_bool(True, field="f") is True
    for bad in ("false", 0, "true", 1):
        with pytest.raises(InputError, match="must be true or false"):
            check_bool(bad, field="implicit_true")
    assert check_score(0) == 0.0 and check_score(1) == 1.0 and check_score(None) is None
    for bad, message in ((7.5, "must be in \\[0, 1\\], got 7.5"), (-3, "got -3"), (42, "got 42"),
                         (10 ** 400, "an integer of 401 digits"), (True, "finite number"), ("0.5", "finite")):
        with pytest.raises(InputError, match=message):
            check_score(bad)
    assert not is_finite_number(10 ** 400) and not is_finite_number(float("nan")) and is_finite_number(3)


def _write_record(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "gold.jsonl"
    record = {**RECORD, **changes}
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def _span(**changes) -> list[dict]:
    return [{**RECORD["spans"][0], **changes}]


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"spans": _span(implicit_true="false")}, "spans[0].implicit_true", "must be true or false, got a string"),
    ({"spans": _span(due_to_null=1)}, "spans[0].due_to_null", "must be true or false"),
    ({"spans": _span(type=["Evident Conflict"])}, "spans[0].type", "must be a string or null, got a list"),
    ({"spans": _span(score=7.5)}, "spans[0].score", "must be in \\[0, 1\\]"),
    ({"spans": _span(implicit_ture=True)}, "spans[0]", "unknown field 'implicit_ture'"),
    ({"spans": {"start": 0}}, "spans", "must be a list"),
    ({"question": 5}, "question", "must be a string or null, got an integer"),
    ({"context": {"name": "x"}}, "context", "must be a string, got an object"),
    ({"model": ["m"]}, "model", "must be a string"),
    ({"id": True}, "id", "must be a string or an integer"),
    ({"response": "bad \ud800"}, "response", "not valid Unicode text: a lone surrogate"),
])
def test_prepared_records_have_strict_types(tmp_path: Path, changes: dict, field: str, message: str) -> None:
    path = _write_record(tmp_path, **changes)
    with pytest.raises(InputError, match=f"gold.jsonl:1, field '{re.escape(field)}': {message}"):
        read_records(path)


def test_a_valid_record_still_reads(tmp_path: Path) -> None:
    [record] = read_records(_write_record(tmp_path, id=12))
    assert record.id == "12" and record.spans[0].type == "Evident Conflict" and not record.spans[0].implicit_true


def test_the_parser_refuses_a_lone_surrogate_anywhere_naming_its_field() -> None:
    assert loads_json('{"a": "\\ud83d\\ude00"}') == {"a": "😀"}  # a valid surrogate pair is text
    with pytest.raises(InputError, match=r"f:1, field 'a\[1\].b': not valid Unicode text: a lone surrogate U\+DC00"):
        loads_json('{"a": [1, {"b": "x\\udc00"}]}', "f", 1)
    with pytest.raises(InputError, match="field '<key>'"):
        loads_json('{"\\ud800": 1}', "f", 1)  # a diagnostic key would reach a console or a file later
    assert loads_json('{"a": "\\ud800"}', allow_surrogates=True) == {"a": "\ud800"}  # callers that check fields
