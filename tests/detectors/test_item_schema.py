"""One input schema for a detection item: stdin ``detect``, HTTP and ``DetectItem.of`` accept and refuse the same
items, with the same task rule (``task_type`` for ``task``; QA only when a question is given) and the same
blank-text rule (context and response must not be empty, nor only whitespace and invisible characters)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from ragtruth_spans.cli.detect import read_items
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.base import Detection, DetectItem, Detector
from ragtruth_spans.serving.schemas import DetectItemIn, SelectRequest

BASE = {"context": "The hotel opened in 2001.", "response": "It opened in 2001."}

CASES: list[tuple[dict[str, Any], str | None]] = [
    ({**BASE, "task": "Summary"}, "Summary"),
    ({**BASE, "task_type": "Data2txt"}, "Data2txt"),
    ({**BASE, "task": "QA", "task_type": "QA", "question": "When?"}, "QA"),
    ({**BASE, "question": "When did it open?"}, "QA"),          # no task: QA because of the question
    ({**BASE}, None),                                           # no task, no question: missing
    ({**BASE, "task": "QA", "task_type": "Summary"}, None),     # they disagree
    ({**BASE, "task": "Poem"}, None),
    ({**BASE, "task": "QA", "response": ""}, None),             # empty response
    ({**BASE, "task": "QA", "context": ""}, None),              # empty context
    ({**BASE, "task": "QA", "response": " \n"}, None),          # blank: whitespace ...
    ({**BASE, "task": "QA", "response": "\u00a0\u2028"}, None),
    ({**BASE, "task": "QA", "response": "\u200b"}, None),       # ... or invisible characters
    ({**BASE, "task": "QA", "context": "\u3000"}, None),
    ({**BASE, "task": "QA", "response": "\u0301"}, "QA"),      # a combining mark alone is text
    ({**BASE, "task": "QA", "response": 3}, None),
]


def python_api(obj: dict[str, Any]) -> str | None:
    try:
        return DetectItem.of(obj).task
    except InputError:
        return None


def stdin(obj: dict[str, Any]) -> str | None:
    try:
        [(_, item)] = read_items([json.dumps(obj)])
    except InputError:
        return None
    return item.task


def http(obj: dict[str, Any]) -> str | None:
    try:
        return DetectItemIn.model_validate(obj).task
    except ValidationError:
        return None


@pytest.mark.parametrize(("obj", "task"), CASES)
def test_stdin_http_and_python_agree(obj: dict[str, Any], task: str | None) -> None:
    assert (python_api(obj), stdin(obj), http(obj)) == (task, task, task)


def test_select_requests_follow_the_same_task_rule() -> None:
    body = {"context": "c", "question": "q?", "candidates": ["a", "b"]}
    assert SelectRequest.model_validate(body).task == "QA"
    assert SelectRequest.model_validate({**body, "task_type": "Summary"}).task == "Summary"
    with pytest.raises(ValidationError):
        SelectRequest.model_validate({"context": "c", "candidates": ["a"]})


def test_missing_task_error_names_the_rule() -> None:
    with pytest.raises(InputError, match="field 'task'.*QA is assumed only when a question is given"):
        DetectItem.of(BASE)


class _EchoTask(Detector):
    """Reports the task each item reached ``detect_batch`` with."""

    kind = "echo-task"

    def detect_batch(self, items: Any) -> list[Detection]:
        return [Detection(spans=[], diagnostics={"task": DetectItem.of(item).task}) for item in items]


@pytest.mark.parametrize(("obj", "task"), [(obj, task) for obj, task in CASES if "task_type" not in obj])
def test_detect_decides_the_task_as_detect_batch_does(obj: dict[str, Any], task: str | None) -> None:
    detector = _EchoTask()

    def one(call: Any) -> str | None:
        try:
            return call().diagnostics["task"]
        except InputError:
            return None

    assert one(lambda: detector.detect(**obj)) == one(lambda: detector.detect_batch([obj])[0]) == task
