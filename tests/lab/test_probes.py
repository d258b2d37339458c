"""The lab's probes (``lab/probes/``) are code too: each runs here at tiny scale, in its own process as a user runs
it. The ones that train a model are ``slow``. ``subset_by_source.py`` has its own file (test_subset_by_source.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragtruth_spans.core.jsonl import read_records, write_records
from ragtruth_spans.data.prepare import prepare
from ragtruth_spans.data.ragtruth import sample_data_dir

REPO = Path(__file__).resolve().parents[2]
PROBES = REPO / "lab" / "probes"
COVERED_ELSEWHERE = {"subset_by_source.py"}


def run_script(name: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python lab/probes/<name> ARGS`` with this checkout first on the path; a failure shows its output."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, str(PROBES / name), *args], capture_output=True, text=True,
                            timeout=timeout, cwd=cwd, env=env)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded sample prepared (train/dev/test.jsonl), and ``small.jsonl``: six of its test responses."""
    out = tmp_path_factory.mktemp("prepared")
    prepare(sample_data_dir(), out, dev_per_task=1)
    write_records(out / "small.jsonl", read_records(out / "test.jsonl")[:6])
    return out


def test_every_probe_has_a_test() -> None:
    import re

    text = Path(__file__).read_text(encoding="utf-8")
    tested = set(re.findall(r'run_script\("([^"]+)"', text))
    missing = {p.name for p in PROBES.iterdir() if p.suffix in (".py", ".sh")} - tested - COVERED_ELSEWHERE
    assert not missing, f"probes without a test: {sorted(missing)}"


@pytest.mark.slow
def test_bench_token_labels(tmp_path: Path) -> None:
    result = run_script("bench_token_labels.py", "--data", str(sample_data_dir()), "--markdown", cwd=tmp_path)
    assert "all-MiniLM-L6-v2" in result.stdout or "MiniLM" in result.stdout


def test_bench_similarity_one_measurement(prepared: Path, tmp_path: Path) -> None:
    result = run_script("bench_similarity.py", "--data", str(prepared / "small.jsonl"), "--one", "sim-overlap",
                        cwd=tmp_path)
    row = json.loads(result.stdout.strip().splitlines()[-1])
    assert row["name"] == "sim-overlap" and row["responses"] == 6 and row["seconds"] >= 0


def test_tier1_report(prepared: Path, tmp_path: Path) -> None:
    out = tmp_path / "tier1.json"
    result = run_script("tier1_report.py", str(prepared / "train.jsonl"), str(prepared / "dev.jsonl"), "--json",
                        str(out), cwd=tmp_path)
    assert "|" in result.stdout and out.is_file()
