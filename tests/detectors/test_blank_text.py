"""One rule for a blank text (empty, or only whitespace and invisible characters: ``core.fields.is_blank``) at
every entry point and in every detector family: a blank context or response is refused — exit 2 naming file, line
and field on the command line, 422 over HTTP, :class:`InputError` (a ``ValueError``) from the Python API — before
any family reads it, so a lone ``" "`` can no longer crash a detector whose batch has no other response."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
import unicodedata
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

import ragtruth_spans.detectors
from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.fields import check_text, is_blank
from ragtruth_spans.core.types import Record
from ragtruth_spans.detectors.base import DetectItem, Detector
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.serving.app import create_app

BLANKS = ["", " ", "\n", "\t \r\n", "\u00a0", "\u2028", "\u2029", "\u3000", "\u200b", "\ufeff", "\u2060",
          "\u00a0\u200b \u3000\x00"]
"""Blank: whitespace (``str.isspace``) and invisible characters (format and control: U+200B, U+FEFF, NUL)."""
VISIBLE = ["a", ".", "1", "\u0301", "\u3164", "\u2800", " x "]
"""Not blank: a combining mark, a Hangul filler and a braille blank are characters a reader can be given."""
CONTEXT = "The Grand Hotel opened in 1999 and has 120 rooms."
GOOD = {"context": CONTEXT, "response": "It opened in 1998.", "task": "Summary"}


# --- the rule ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", BLANKS)
def test_blank_texts_are_blank_and_refused_naming_file_line_and_field(text):
    assert is_blank(text)
    with pytest.raises(InputError, match="empty or blank") as error:
        check_text(text, field="response", path="in.jsonl", line=7, nonempty=True)
    assert (error.value.path, error.value.line, error.value.field) == ("in.jsonl", 7, "response")


@pytest.mark.parametrize("text", VISIBLE)
def test_visible_texts_are_not_blank(text):
    assert not is_blank(text)
    assert check_text(text, field="response", nonempty=True) == text


def test_normalisation_never_changes_whether_a_text_is_blank():
    """The rule holds before and after NFC (detectors read NFC): checked on every code point."""
    moved = [chr(cp) for cp in range(sys.maxunicode + 1)
             if not 0xD800 <= cp <= 0xDFFF and not unicodedata.is_normalized("NFC", chr(cp))]
    assert "\u2000" in moved  # en quad → en space: whitespace both ways
    assert [c for c in moved if is_blank(c) != is_blank(unicodedata.normalize("NFC", c))] == []


# --- every detector family --------------------------------------------------------------------------------------

def _detector_classes() -> list[type[Detector]]:
    for module in pkgutil.walk_packages(ragtruth_spans.detectors.__path__, "ragtruth_spans.detectors."):
        importlib.import_module(module.name)
    found, todo = [], list(Detector.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("ragtruth_spans.detectors.") and not inspect.isabstract(cls):
            found.append(cls)
    return sorted(set(found), key=lambda c: (c.kind, c.__name__))


CLASSES = _detector_classes()


def test_every_family_is_covered():
    from ragtruth_spans.detectors.family import BUILTIN_FAMILIES

    assert set(BUILTIN_FAMILIES) <= {cls.kind for cls in CLASSES}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.kind}:{c.__name__}")
@pytest.mark.parametrize("blank", ["\u00a0", "\u3000\u200b"])
def test_no_family_reads_a_blank_item(cls, blank):
    """The detector is not even set up (no model, no endpoint): a blank item is refused before any of the
    family's code runs, alone or beside a good item, as a mapping, a record or through ``detect``."""
    detector = object.__new__(cls)
    record = Record(id="r", source_id="s", task_type="Summary", model="m", split="test", quality="good",
                    response=blank, context=CONTEXT)
    for items in ([GOOD | {"response": blank}], [GOOD, GOOD | {"response": blank}], [record],
                  [GOOD | {"context": blank}]):
        with pytest.raises(InputError, match="empty or blank"):
            detector.detect_batch(items)
    with pytest.raises(ValueError, match="field 'response': is empty or blank"):
        detector.detect(context=CONTEXT, response=blank, task="Summary")


def test_a_detect_item_cannot_be_made_blank():
    with pytest.raises(InputError, match="field 'context'"):
        DetectItem(context="\u2028", response="It opened.", task="QA")


@pytest.mark.parametrize("name", ["numbers", "flag-all", "flag-none", "overlap", "keywords"])
@pytest.mark.parametrize("response", VISIBLE)
def test_cheap_families_judge_a_barely_visible_response(name, response):
    """The edge of the rule: a one-character response is judged, alone in its batch, without a crash."""
    from ragtruth_spans.detectors.similarity.detector import SimilarityDetector

    detector = SimilarityDetector(name) if name in ("overlap", "keywords") else load_detector(name)
    [detection] = detector.detect_batch([GOOD | {"response": response}])
    assert all(0 <= s.start < s.end <= len(response) for s in detection.spans)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["auto", "torch"])
def test_the_shipped_detector_refuses_blank_and_judges_the_barely_visible(runtime):
    """The detector of the report (ONNX path; ``IndexError`` with torch) crashed on a lone blank response."""
    detector = load_detector(None, runtime=runtime)
    for blank in BLANKS:
        with pytest.raises(InputError):
            detector.detect_batch([GOOD | {"response": blank}])
    found = detector.detect_batch([GOOD | {"response": text} for text in VISIBLE])
    assert len(found) == len(VISIBLE) and all(d.ok for d in found)
    [alone] = detector.detect_batch([GOOD | {"response": "."}])
    assert alone.ok


@pytest.mark.slow
@pytest.mark.parametrize("runtime", ["auto", "torch"])
def test_the_sentence_encoder_encodes_no_text_on_either_runtime(runtime):
    """The root of the crash: a response with no sentence gave the encoder an empty batch."""
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

    encoder = SentenceEncoder(runtime=runtime)
    sentences, tokens = encoder.encode_with_tokens([])
    assert sentences.shape == (0, encoder.dimension()) and tokens == []
    assert encoder.token_embeddings([]) == [] and encoder.encode([]).shape == (0, encoder.dimension())


# --- every entry point ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("blank", ["   ", "\u00a0", "\u2028", "\u3000", "\u200b"])
def test_detect_stdin_and_arguments_exit_2(blank):
    runner = CliRunner()
    lines = json.dumps(GOOD) + "\n" + json.dumps(GOOD | {"response": blank}) + "\n"
    result = runner.invoke(app, ["detect", "--model", "numbers", "--output", "json"], input=lines)
    assert result.exit_code == 2, result.output
    assert "<stdin>:2, field 'response': is empty or blank" in " ".join(result.output.split())
    assert "Traceback" not in result.output and '"spans"' not in result.output  # nothing detected, nothing printed
    result = runner.invoke(app, ["detect", "--model", "numbers", "--context", CONTEXT, "--response", blank])
    assert result.exit_code == 2 and "field '--response': is empty or blank" in " ".join(result.output.split())


def test_predict_exits_2_naming_the_line(tmp_path: Path):
    good = Record(id="a", source_id="s", task_type="Summary", model="m", split="test", quality="good",
                  response="It opened in 1998.", context=CONTEXT).to_dict()
    data = tmp_path / "test.jsonl"
    data.write_text(json.dumps(good) + "\n" + json.dumps(good | {"id": "b", "response": "\u3000"}) + "\n",
                    encoding="utf-8")
    out = tmp_path / "pred.jsonl"
    result = CliRunner().invoke(app, ["predict", "--model", "numbers", "--data", str(data), "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "test.jsonl:2, field 'response': is empty or blank" in " ".join(result.output.split())
    assert not out.exists()


@pytest.mark.parametrize("blank", ["", " ", "\u00a0", "\u2028", "\u3000", "\u200b"])
def test_serve_answers_422_for_one_item_and_for_a_list(blank):
    with TestClient(create_app(load_detector("numbers")), base_url="http://localhost") as client:
        for body in (GOOD | {"response": blank}, [GOOD | {"response": blank}], [GOOD, GOOD | {"response": blank}],
                     GOOD | {"context": blank}):
            answer = client.post("/v1/detect", json=body)
            assert answer.status_code == 422, (body, answer.text)
            assert "response" in answer.text or "context" in answer.text
        selected = client.post("/v1/select", json={"context": CONTEXT, "task": "Summary",
                                                   "candidates": ["It opened in 1999.", blank]})
        assert selected.status_code == 422, selected.text
        assert client.post("/v1/detect", json=GOOD).status_code == 200  # the service goes on
