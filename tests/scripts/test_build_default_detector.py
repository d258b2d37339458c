"""``scripts/build_default_detector.py``: the only way the shipped detector is made. Two builds of the same data
give byte-identical files that load and detect; a missing input is one line and exit status 2.

The data is the embedded sample split by source into a "pool" and a "sample" folder in RAGTruth's format (the
script's input layout), so the test needs no ../shared.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import load_script

from ragtruth_spans.data.ragtruth import sample_data_dir

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "build_default_detector.py"
SMALL_SYNTH = "data.synth={count: 40, eval_count: 8}"
"""Generated data from the training contexts only (no external documents in these inputs), a few records."""


def run_build(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env=env)


def write_inputs(root: Path) -> Path:
    """``root/ragtruth_pool`` and ``root/ragtruth_sample`` from the embedded sample: per task, the first source
    (sorted) is the "sample", the other nine the "pool" (enough for its 0.7/0.1/0.2 re-split to have a dev part)."""
    rows = {name: [json.loads(line) for line in (sample_data_dir() / name).read_text(encoding="utf-8").splitlines()]
            for name in ("response.jsonl", "source_info.jsonl")}
    first = {min(s["source_id"] for s in rows["source_info.jsonl"] if s["task_type"] == task)
             for task in ("QA", "Summary", "Data2txt")}
    for folder, in_sample in (("ragtruth_pool", False), ("ragtruth_sample", True)):
        (root / folder).mkdir(parents=True)
        for name, items in rows.items():
            kept = [row for row in items if (row["source_id"] in first) == in_sample]
            (root / folder / name).write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return root


def test_a_missing_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = run_build("--data-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and "ragtruth_pool/response.jsonl" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_the_recorded_command_holds_no_absolute_path_of_the_machine(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(data_dir=tmp_path.parent / "shared" / "data", subset=None, hold_out_test=True,
                              overrides=["data.synth=null"], threads=2)
    assert load_script("build_default_detector").command(args) == [
        "python", "scripts/build_default_detector.py", "--data-dir", os.path.join("..", "shared", "data"),
        "--hold-out-test", "--set", "data.synth=null", "--threads", "2"]


@pytest.mark.slow
def test_two_builds_give_identical_files_that_load_and_detect(tmp_path: Path) -> None:
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.runs.manifest import verify_run

    data = write_inputs(tmp_path / "data")
    outs = [tmp_path / "first", tmp_path / "second"]
    for out in outs:
        result = run_build("--data-dir", str(data), "--out", str(out), "--subset", "36", "--set",
                           "features.encoder=null", "--set", SMALL_SYNTH, "--set", "data.extra=[]", "--threads", "1",
                           cwd=tmp_path)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        assert "built " in result.stdout
    first, second = ({p.name: p.read_bytes() for p in out.iterdir()} for out in outs)
    assert {"build.json", "combiner.txt", "fingerprint.json", "recipe.yaml", "run_info.json"} <= set(first)
    assert first == second  # byte for byte, build.json included
    info = verify_run(outs[0])
    build = json.loads(first["build.json"])
    assert build["training_fingerprint"] == info["training_fingerprint"] and build["split"]["subset"] == 36
    assert build["data"]["train"]["responses"] >= 36 and build["data"]["eval"]["responses"] >= 1  # the dev part: 7
    assert "--out" not in build["command"]
    assert build["overrides"][0].startswith("data.extra=")  # the script's own (its DEFAULT_OVERRIDES), then ours:
    assert build["overrides"][1:] == ["features.precision=int8", "features.encoder=null", SMALL_SYNTH,
                                      "data.extra=[]"]
    assert info["data"]["counts"]["synth"]["records"] == 40  # generated from the training contexts alone
    assert build["command"][2:4] == ["--data-dir", "data"]  # relative to the folder it ran in; no path of this machine
    assert not any(str(tmp_path) in text.decode() for text in first.values())
    context = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms."
    answer = "The Grand Hotel opened in 1998 and has 120 rooms."
    found = load_detector(outs[0]).detect(context=context, response=answer, question="When?", task="QA")
    at = answer.index("1998")  # the conflict rule flags it even at this size (its span may run on: tiny data)
    assert any(s.start <= at and at + 4 <= s.end for s in found.spans) and found.diagnostics["contradicted_words"]
