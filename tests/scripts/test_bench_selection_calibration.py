"""scripts/bench_selection.py and scripts/bench_calibration.py on crafted labelled data: the figures they print
are the selection and reliability figures of those records."""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace
from pathlib import Path

from conftest import make_record

from ragtruth_spans.core.jsonl import write_records

REPO = Path(__file__).resolve().parents[2]


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def corpus(tmp_path: Path) -> tuple[Path, Path]:
    """Four sources, two models: model a hallucinates in sources 0 and 1, model b in source 2. The predicted
    response scores rank correctly in every source but source 3 (where both are clean)."""
    records, lines = [], []
    bad = {("a", 0), ("a", 1), ("b", 2)}
    for source in range(4):
        for model in ("a", "b"):
            hallucinated = (model, source) in bad
            response = "It opened in 1998." if hallucinated else "It opened in 1999."
            record = make_record(f"{model}{source}", "QA", "It opened in 1999.", response,
                                 [("1998", "Evident Conflict")] if hallucinated else [], question="When?", split="test")
            records.append(replace(record, source_id=f"s{source}", model=model))
            lines.append({"id": record.id, "spans": [], "score": 0.9 if hallucinated else 0.2 + 0.1 * source / 4})
    write_records(tmp_path / "gold.jsonl", records)
    (tmp_path / "pred.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return tmp_path / "gold.jsonl", tmp_path / "pred.jsonl"


def test_every_strategy_with_random_each_model_and_the_oracle(tmp_path):
    gold, pred = corpus(tmp_path)
    table, reports = _script("bench_selection").run(gold, pred, None, bootstrap=50, seed=0)
    assert set(reports) == {"fewest-spans", "no-spans", "least-hallucinated-chars", "max-confidence"}
    best = reports["max-confidence"]
    assert best["selected"]["hallucination_rate"] == 0.0 and best["relative_reduction"] == 1.0
    assert best["random"]["hallucination_rate"] == 3 / 8
    assert "| `max-confidence` | 0.0 %" in table and "| always `b` | 25.0 % |" in table
    assert "| always `a` | 50.0 % |" in table and "| oracle | 0.0 %" in table


def test_the_reliability_table_of_the_response_scores(tmp_path):
    gold, pred = corpus(tmp_path)
    text = _script("bench_calibration").run(gold, pred)
    assert "| [0.9, 1.0) | 3 | 0.900 | 1.000 |" in text     # the three hallucinated responses
    assert "| [0.2, 0.3) | 5 | 0.245 | 0.000 |" in text     # the five clean ones
    assert "ECE 0.191 over 8 responses" in text              # 3/8 * 0.1 + 5/8 * 0.245
