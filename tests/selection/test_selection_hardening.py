"""Selection: a detector failure is never a clean candidate, and when nothing could be judged nothing is
chosen (no index a gate could mistake for a real pick)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_jsonl, write_records
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.selection.corpus import evaluate_selection
from ragtruth_spans.selection.select import Candidate, as_candidate, select_best

MODELS = ["model-a", "model-b"]


def _records() -> list[Record]:
    """Two sources; model-a is hallucinated in both, model-b clean in both."""
    out = []
    for source in ("s1", "s2"):
        for model in MODELS:
            response = f"Answer of {model} for {source}."
            spans = [Span(0, 6, type="Evident Conflict", text=response[:6])] if model == "model-a" else []
            out.append(Record(id=f"{source}-{model}", source_id=source, task_type="QA", model=model, split="test",
                              quality="good", response=response, context="ctx", question="q?", spans=spans))
    return out


def test_no_candidate_judged_gives_no_judgement_not_an_index() -> None:
    selection = select_best([Candidate("a", spans=(), error="timeout"), Candidate("b", spans=(), error="timeout")])
    assert selection.no_judgement and selection.index is None and selection.candidate is None
    payload = selection.to_dict()
    assert payload["no_judgement"] is True and payload["index"] is None and payload["scores"] == [None, None]
    judged = select_best([Candidate("a", spans=(), error="timeout"), Candidate("b", spans=(Span(0, 1),))])
    assert judged.index == 1 and not judged.no_judgement and judged.detection_failed == [0]


def test_corpus_selection_never_counts_a_detector_failure_as_clean() -> None:
    records = _records()
    predictions = {r.id: [] for r in records}  # the failed model-a lines carry no spans: "clean" if believed
    errors = {"s1-model-a": "endpoint failed", "s2-model-a": "endpoint failed"}
    report = evaluate_selection(records, predictions, MODELS, "fewest-spans", bootstrap=0, tie_break="first",
                                errors=errors).to_dict()
    assert report["selected"]["chosen_by_model"] == {"model-a": 0, "model-b": 2}
    assert report["selected"]["hallucination_rate"] == 0.0 and report["selected"]["detector_errors"] == 2
    believed = evaluate_selection(records, predictions, MODELS, "fewest-spans", bootstrap=0,
                                  tie_break="first").to_dict()
    assert believed["selected"]["chosen_by_model"] == {"model-a": 2, "model-b": 0}  # what happened before


def test_a_source_with_no_judged_candidate_is_skipped_and_counted() -> None:
    records = _records()
    errors = {r.id: "failed" for r in records if r.source_id == "s1"}
    report = evaluate_selection(records, {r.id: [] for r in records}, MODELS, bootstrap=0, errors=errors).to_dict()
    assert report["sources"]["used"] == 1 and report["sources"]["skipped"] == 1
    assert report["sources"]["skipped_reasons"] == {"no candidate could be judged (detector errors)": 1}


def test_select_cli_prints_the_detector_errors_at_run_time(tmp_path: Path) -> None:
    records = _records()
    data, pred = tmp_path / "data.jsonl", tmp_path / "pred.jsonl"
    write_records(data, records)
    write_jsonl(pred, [{"id": r.id, "spans": []} | ({"error": "endpoint failed"} if r.model == "model-a" else {})
                       for r in records])
    result = CliRunner().invoke(app, ["select", "--gold", str(data), "--pred", str(pred), "--models",
                                      ",".join(MODELS), "--bootstrap", "0", "--json", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    assert "2 candidate(s) in the sources used were detector errors" in result.output
    assert json.loads((tmp_path / "s.json").read_text())["selected"]["hallucination_rate"] == 0.0


@pytest.mark.parametrize(("item", "message"), [
    ({"response": "r", "score": 7.5}, "candidates\\[0\\].score': must be in \\[0, 1\\]"),
    ({"response": "r", "score": -3}, "must be in \\[0, 1\\]"),
    ({"response": "r\ud800"}, "candidates\\[0\\].response': not valid Unicode"),
    ({"response": "r", "id": True}, "must be a string or an integer"),
    ({"response": "r", "spans": [{"start": 0, "end": 1, "implicit_true": "false"}]}, "must be true or false"),
])
def test_candidates_have_strict_types(item: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        as_candidate(item)


def test_candidate_files_refuse_unknown_keys_and_surrogates(tmp_path: Path) -> None:
    from ragtruth_spans.selection.select import read_candidates

    path = tmp_path / "c.jsonl"
    path.write_text('{"response": "a"}\n{"response": "b", "idd": 1}\n', encoding="utf-8")
    with pytest.raises(InputError, match="c.jsonl:2, field 'idd': unknown field"):
        read_candidates(path)
    path.write_text('{"response": "a\\ud800"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="c.jsonl:1, field 'response': not valid Unicode"):
        read_candidates(path)
