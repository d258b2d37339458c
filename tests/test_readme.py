"""The README a newcomer reads first: both commands (quickstart, tests) within its first 40 lines, the
recommended detector used throughout its RAGTruth section, and the own-data example valid."""

from __future__ import annotations

import json
from pathlib import Path

from ragtruth_spans.data.imported import ImportReport
from ragtruth_spans.data.own_jsonl import _record

README = Path(__file__).resolve().parents[1] / "README.md"
TEST_CMD = ("python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 -e '.[all,dev]' && "
            "python -m pytest -q")


def test_the_two_commands_come_first() -> None:
    head = README.read_text(encoding="utf-8").splitlines()[:40]
    assert any(TEST_CMD in line for line in head)
    assert any(line.rstrip().endswith("&& ragtruth-spans quickstart") for line in head)


def test_the_ragtruth_section_uses_the_recommended_detector() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use it on RAGTruth", 1)[1].split("\n## ", 1)[0]
    for command in ("predict --model", "benchmark"):
        assert command in section
    assert "runs/all-minilm-l6-v2-token-cls" not in section and section.count("runs/recommended-cpu") >= 2


def test_the_own_data_example_is_valid() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Use it on your own data", 1)[1].split("\n## ", 1)[0]
    line = next(x for x in section.splitlines() if x.startswith('{"context"'))
    record = _record(json.loads(line), Path("README.md"), 1, ImportReport("jsonl", "README.md"))
    assert [record.response[s.start:s.end] for s in record.spans] == ["1998"]
