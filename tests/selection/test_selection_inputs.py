"""Select-best's candidates: a blank candidate (empty, whitespace or invisible characters only) and two candidates
of one id are refused (one line naming file, line and field, exit 2), as HTTP refuses them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.selection.select import Candidate, read_candidates, select_best


@pytest.mark.parametrize("response", ["", "   ", "\n\t ", "\u00a0", "\u2028", "\u3000", "\u200b"])
def test_an_empty_or_blank_candidate_is_refused(response):
    with pytest.raises(InputError, match="empty or blank") as error:
        select_best([Candidate("Paris.", spans=()), {"response": response, "spans": []}])
    assert error.value.field == "candidates[1].response"


def test_duplicate_candidate_ids_are_refused():
    with pytest.raises(InputError, match="duplicate candidate id 'x'"):
        select_best([{"response": "a", "id": "x", "spans": []}, {"response": "b", "id": "x", "spans": []}])
    with pytest.raises(InputError, match="duplicate candidate id '1'"):  # a missing id is the index
        select_best([{"response": "a", "id": 1, "spans": []}, {"response": "b", "spans": []}])


@pytest.mark.parametrize(("lines", "line", "field", "message"), [
    ([{"response": "Paris."}, {"response": "  "}], 2, "response", "empty or blank"),
    ([{"response": "Paris."}, {"response": "\u3000\u200b"}], 2, "response", "empty or blank"),
    ([{"response": "Paris.", "id": "a"}, {"response": "Lyon.", "id": "a"}], 2, "id", "duplicate id 'a'"),
    ([{"response": "Paris.", "id": 2}, {"response": "Lyon."}], 2, "id", "duplicate id '2'"),
])
def test_select_best_command_refuses_bad_candidate_files_in_one_line(tmp_path, lines, line, field, message):
    path = tmp_path / "candidates.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    with pytest.raises(InputError, match=message) as error:
        read_candidates(path)
    assert (error.value.line, error.value.field) == (line, field)
    result = CliRunner().invoke(app, ["select-best", "--model", "numbers", "--context", "It opened in Paris.",
                                      "--task", "Summary", "--candidates", str(path)])
    assert result.exit_code == 2 and f"candidates.jsonl:{line}" in result.output
    assert "Traceback" not in result.output
