"""lab/probes/subset_by_source.py: whole sources, the asked number per task, the same subset for the same seed."""

from __future__ import annotations

import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from ragtruth_spans.core.jsonl import read_records
from ragtruth_spans.data.prepare import prepare
from ragtruth_spans.data.ragtruth import sample_data_dir

REPO = Path(__file__).resolve().parents[2]


def _subset(data: Path, out: Path, per_task: int, seed: int) -> list:
    result = subprocess.run([sys.executable, str(REPO / "lab" / "probes" / "subset_by_source.py"), str(data),
                             "--per-task", str(per_task), "--seed", str(seed), "--out", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return read_records(out)


def test_subset_keeps_whole_sources_per_task_and_is_seeded(tmp_path: Path) -> None:
    prepare(sample_data_dir(), tmp_path / "data", dev_per_task=1)
    data = tmp_path / "data" / "train.jsonl"
    records = read_records(data)
    subset = _subset(data, tmp_path / "a.jsonl", 1, 0)
    by_source: dict[tuple[str, str], int] = defaultdict(int)
    for record in records:
        by_source[(record.task_type, record.source_id)] += 1
    chosen = {(r.task_type, r.source_id) for r in subset}
    assert sorted(t for t, _ in chosen) == sorted({r.task_type for r in records})  # one source per task
    assert len(subset) == sum(by_source[key] for key in chosen)  # every response of each chosen source
    assert [r.id for r in _subset(data, tmp_path / "b.jsonl", 1, 0)] == [r.id for r in subset]
