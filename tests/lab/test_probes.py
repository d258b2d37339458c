"""The lab's probes (``lab/probes/``) are code too: each runs here at tiny scale, in its own process as a user runs
it. The ones that train a model are ``slow``. ``subset_by_source.py`` has its own file (test_subset_by_source.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_repo_script

from ragtruth_spans.data.ragtruth import sample_data_dir

REPO = Path(__file__).resolve().parents[2]
PROBES = REPO / "lab" / "probes"
COVERED_ELSEWHERE = {"subset_by_source.py"}


def run_script(name: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python lab/probes/<name> ARGS`` (:func:`conftest.run_repo_script`)."""
    return run_repo_script(PROBES / name, *args, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def prepared(prepared_sample: Path) -> Path:
    return prepared_sample


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
