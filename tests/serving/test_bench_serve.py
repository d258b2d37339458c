"""scripts/bench_serve.py at toy scale: it starts and stops its own server, sends exactly the requests asked for
and records that each was answered once."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_bench_serve_counts_every_request_once(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_serve.py"), "--model", "numbers",
                             "--requests", "12", "--concurrency", "1,4", "--max-wait-ms", "2", "--json", str(out),
                             "--select", "3", "--select-rounds", "2", "--gate", "--gate-requests", "2",
                             "--token-rate", "400",
                             "--server-log", str(tmp_path / "server.log")],
                            capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(out.read_text(encoding="utf-8"))
    assert [r["clients"] for r in report["rows"]] == [1, 4]
    for row in report["rows"]:
        assert row["requests"] == 12 and row["lost"] == 0 and row["answered_twice"] == 0 and row["failures"] == {}
        assert row["changed"] == 0 and row["p50_ms"] <= row["p99_ms"] and row["batches"] >= 1
    assert "throughput at 4 clients / at 1" in result.stdout
    assert report["select"]["candidates"] == 3 and report["select"]["ratio"] > 0
    assert [r["stream"] for r in report["gate"]] == [True, False]
    assert all(r["gate_last_ms"] > 0 and r["upstream_last_ms"] > 0 for r in report["gate"])


def test_select_candidates_are_different_texts() -> None:
    from conftest import load_script

    bench = load_script("bench_serve")
    group = [{"response": "A."}, {"response": "B."}, {"response": "A."}]
    items = [*group, {"response": "C."}, {"response": "D."}, {"response": "C."}]
    assert bench.distinct_candidates(group, items, 4, skip=0) == ["A.", "B.", "C.", "D."]
    assert bench.distinct_candidates(group, items, 4, skip=1) == ["A.", "B.", "D.", "C."]
    with pytest.raises(SystemExit, match="only 4 different"):
        bench.distinct_candidates(group, items, 5, skip=0)


def test_context_chars_is_min_dash_max_or_a_one_line_refusal(tmp_path: Path) -> None:
    from conftest import load_script

    assert load_script("bench_serve").char_range("1000-3000") == (1000, 3000)
    result = subprocess.run([sys.executable, str(REPO / "scripts" / "bench_serve.py"), "--model", "numbers",
                             "--context-chars", "3000-1000"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2 and "expected MIN-MAX" in result.stderr and "Traceback" not in result.stderr


def test_runtimes_table_has_one_row_per_runtime_with_its_own_figures() -> None:
    from conftest import load_script

    bench = load_script("bench_serve")
    row = {"p50_ms": 40.0, "p95_ms": 55.0, "requests_per_s": 20.0}
    results = {
        "onnx-fp32": ([row, {**row, "requests_per_s": 30.0}],
                      {"select": {"ratio": 1.5, "detect_ms": 90.0, "detect_p95_ms": 120.0, "seen_context_ms": 50.0,
                                  "seen_context_p95_ms": 70.0}, "gate": [{"stream": True, "added_last_ms": 12.0},
                                                          {"stream": False, "added_last_ms": 25.0}]}),
        "onnx-int8": ([{**row, "p50_ms": 20.0}], {}),
    }
    table = bench.runtimes_markdown(results).splitlines()
    assert len(table) == 4
    assert table[2] == "| onnx-fp32 | 40 / 55 | 50 / 70 | 90 / 120 | 30.0 | 1.50x | +12 | +25 |"
    assert table[3] == "| onnx-int8 | 20 / 55 | – | – | 20.0 | – | – | – |"


def test_a_fresh_answer_shares_no_sentence_with_the_original() -> None:
    from conftest import load_script

    from ragtruth_spans.detectors.shared.sentences import split_sentences
    from ragtruth_spans.detectors.stacked.context_index import sentences

    bench = load_script("bench_serve")
    answer = "The hotel opened in 1999. It has 120 rooms!\nGuests:\n- praise it. Others do not"
    fresh = bench.fresh_answer(answer, "r7")
    old = {answer[a:b] for a, b in split_sentences(answer)}
    new = [fresh[a:b] for a, b in split_sentences(fresh)]
    assert len(new) == len(old) and all(s.startswith("Refr7 ") and s not in old for s in new)
    assert len(sentences(fresh)) == len(sentences(answer))  # the stacked detector's own cut too
