"""``predict --engine ray`` on a small local Ray cluster (2 CPUs, no dashboard), started once for the module: the
same lines as ``predict`` (rules, an encoder-free stacked run, a token classifier), exactly one line per id when a
worker dies mid-batch, a record that kills its worker or makes the detector raise fails only itself, a run
killed mid-way resumes, and the one-line errors of a missing extra or an unreachable address."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO_ROOT, make_record
from typer.testing import CliRunner

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.base import Detection, Detector
from ragtruth_spans.pipeline.predict import predict_file
from ragtruth_spans.pipeline.ray_cluster import check_reachable
from ragtruth_spans.pipeline.ray_engine import RaySettings, RaySummary, _Writer, predict_ray

pytestmark = pytest.mark.slow  # a local Ray cluster per module: minutes on 2 cores

ray = pytest.importorskip("ray", reason="the [ray] extra is not installed")

CITIES = ["Leeds", "Paris", "Oslo", "Rome", "Lima", "Kyoto", "Cairo", "Perth"]


def hotel_records(n: int, split: str = "test") -> list:
    """Per source a faithful response and one whose year is changed (deterministic)."""
    records = []
    for s in range(n):
        city, year, rooms = CITIES[s % len(CITIES)], 1900 + 7 * s, 10 + 13 * s
        context = f"The hotel in {city} opened in {year}. It has {rooms} rooms and a small garden."
        records.append(make_record(f"{split}-{s}-ok", "Summary", context,
                                   f"The hotel in {city} opened in {year} and has {rooms} rooms.", [], split=split))
        records.append(make_record(f"{split}-{s}-bad", "Summary", context,
                                   f"The hotel in {city} opened in {year + 3} and has {rooms} rooms.",
                                   [(str(year + 3), "Evident Conflict")], split=split))
    for record in records:
        object.__setattr__(record, "source_id", f"{split}-src-{record.id.split('-')[1]}")
    return records


class Numbers(Detector):
    """The ``numbers`` rule detector behind a factory, with the failures a test needs: raise on ``bad_id``, kill
    the worker process on ``kill_id`` (once, leaving ``marker``; every time without one), sleep per record."""

    kind = "test-numbers"

    def __init__(self, *, bad_id: str | None = None, kill_id: str | None = None, marker: str | None = None,
                 sleep: float = 0.0) -> None:
        from ragtruth_spans.detectors.loader import load_detector

        self.inner = load_detector("numbers")
        self.bad_id, self.kill_id, self.marker, self.sleep = bad_id, kill_id, marker, sleep

    def detect_batch(self, items: Any) -> list[Detection]:
        ids = [getattr(item, "id", None) for item in items]
        if self.kill_id in ids and (self.marker is None or not Path(self.marker).exists()):
            if self.marker is not None:
                Path(self.marker).touch()
            os._exit(1)
        if self.bad_id in ids:
            raise ValueError("this record breaks the detector")
        time.sleep(self.sleep * len(items))
        return self.inner.detect_batch(items)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}


class Factory:
    """A picklable detector factory (this module is pickled by value, so the actors need no import of it)."""

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __call__(self) -> Detector:
        return Numbers(**self.kwargs)


@pytest.fixture(scope="module")
def cluster() -> str:
    """One local cluster for the module: 2 CPUs, no dashboard; its GCS address (for subprocesses)."""
    from ray import cloudpickle  # Ray's own copy

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=150 * 1024**2, log_to_driver=False,
             logging_level="ERROR")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "test.jsonl"
    write_records(path, hotel_records(8))
    return path


def lines_by_id(path: Path) -> dict[str, str]:
    """Every line of a predictions file by id; an id twice fails the test."""
    lines = path.read_text(encoding="utf-8").splitlines()
    by_id = {json.loads(line)["id"]: line for line in lines}
    assert len(by_id) == len(lines), "an id was written twice"
    return by_id


def meta(path: Path) -> dict:
    return json.loads(Path(str(path) + ".meta.json").read_text())


def test_rules_and_cli_give_the_lines_of_predict(cluster, data, tmp_path):
    from ragtruth_spans.cli import app
    from ragtruth_spans.evidence import EvidenceFinder

    predict_file("numbers", data, tmp_path / "local.jsonl", progress=False, evidence=EvidenceFinder("lexical"))
    result = CliRunner().invoke(app, ["predict", "--engine", "ray", "--model", "numbers", "--data", str(data),
                                      "--out", str(tmp_path / "ray.jsonl"), "--workers", "2", "--chunk-size", "3",
                                      "--evidence"])
    assert result.exit_code == 0, result.output
    assert "ray: 2 worker(s)" in result.output and "duplicate lines dropped: 0" in result.output
    assert lines_by_id(tmp_path / "ray.jsonl") == lines_by_id(tmp_path / "local.jsonl")
    assert any('"verdict"' in line for line in lines_by_id(tmp_path / "ray.jsonl").values())
    assert meta(tmp_path / "ray.jsonl") == meta(tmp_path / "local.jsonl")
    again = predict_ray("numbers", data, tmp_path / "ray.jsonl", progress=False,  # all done: checked, nothing run
                        evidence=EvidenceFinder("lexical"))
    assert again.skipped_done == 16 and again.predicted == 0
    with pytest.raises(InputError, match="differs in: evidence"):  # other settings on the same file: refused
        predict_ray("numbers", data, tmp_path / "ray.jsonl", progress=False)
    with pytest.raises(InputError, match="differs in: name"):  # another detector
        predict_ray("flag-all", data, tmp_path / "ray.jsonl", progress=False, evidence=EvidenceFinder("lexical"))
    with pytest.raises(InputError, match=r"^option\(s\) foo do not apply to a rule-based detector"):
        predict_ray("numbers", data, tmp_path / "new.jsonl", detector_options={"foo": 1}, progress=False)
    assert not (tmp_path / "new.jsonl").exists() or not (tmp_path / "new.jsonl").read_text()


def test_stacked_run_gives_the_lines_of_predict(cluster, tmp_path):
    from ragtruth_spans.detectors.recipes import validate_recipe
    from ragtruth_spans.detectors.train import train

    for split, n in (("train", 10), ("dev", 4), ("test", 6)):
        write_records(tmp_path / f"{split}.jsonl", hotel_records(n, split))
    run = tmp_path / "run"
    train(validate_recipe({
        "kind": "stacked", "features": {"encoder": None}, "members": [{"name": "numbers", "detector": "numbers"}],
        "combiner": {"min_data_in_leaf": 5, "num_leaves": 7, "max_rounds": 40, "early_stopping_rounds": 10,
                     "oof_folds": 2},
        "decision": {"grid": [0.1, 0.3, 0.5], "max_word_gap": [0, 1]},
        "response": {"min_data_in_leaf": 2, "num_leaves": 3, "folds": 2, "learning_rate": 0.2},  # tiny data
        "data": {"prepared_dir": str(tmp_path), "eval_split": "dev"}, "output_dir": str(run)}))
    local = predict_file(run, tmp_path / "test.jsonl", tmp_path / "local.jsonl", progress=False)
    summary = predict_ray(run, tmp_path / "test.jsonl", tmp_path / "ray.jsonl", progress=False,
                          settings=RaySettings(workers=2, batch_size=4))
    assert lines_by_id(tmp_path / "ray.jsonl") == lines_by_id(tmp_path / "local.jsonl")
    assert meta(tmp_path / "ray.jsonl") == meta(tmp_path / "local.jsonl")
    assert (summary.predicted, summary.spans, summary.counters) == (local.predicted, local.spans, local.counters)
    assert summary.workers == 2 and 1 <= len(summary.worker_peak_rss_mb) <= 2  # one may do all 3 batches
    assert all(mb > 50 for mb in summary.worker_peak_rss_mb.values())


class TokenClassifierFactory:
    """A tiny random BERT token classifier (seeded; one window per forward pass, so batching cannot change a
    float), built the same way in this process and in every actor."""

    def __init__(self, tokenizer_dir: str) -> None:
        self.tokenizer_dir = tokenizer_dir

    def __call__(self) -> Detector:
        import torch
        from transformers import AutoTokenizer, BertConfig, BertForTokenClassification

        from ragtruth_spans.detectors.token_classification.detector import TokenClassificationDetector
        from ragtruth_spans.detectors.token_classification.windows import WindowSettings

        tokenizer = AutoTokenizer.from_pretrained(self.tokenizer_dir)
        torch.manual_seed(0)
        model = BertForTokenClassification(BertConfig(
            vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=64, num_labels=2, pad_token_id=tokenizer.pad_token_id)).eval()
        return TokenClassificationDetector(model, tokenizer, scheme="binary", batch_size=1, threshold=0.5,
                                           windows=WindowSettings(max_length=48, min_context_tokens=16,
                                                                  response_overlap=4))


def test_token_classifier_gives_the_lines_of_predict(cluster, data, tmp_path):
    pytest.importorskip("torch")
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    records = hotel_records(8)
    tokenizer = train_bert_tokenizer([r.context + " " + r.response for r in records], vocab_size=200)
    tokenizer.save_pretrained(tmp_path / "tok")
    factory = TokenClassifierFactory(str(tmp_path / "tok"))
    predict_file(None, data, tmp_path / "local.jsonl", detector=factory(), progress=False)
    summary = predict_ray(None, data, tmp_path / "ray.jsonl", detector_factory=factory, progress=False,
                          settings=RaySettings(workers=1, batch_size=5))
    assert summary.predicted == 16
    assert lines_by_id(tmp_path / "ray.jsonl") == lines_by_id(tmp_path / "local.jsonl")


def test_a_worker_killed_mid_batch_is_retried_and_every_id_written_once(cluster, data, tmp_path):
    factory = Factory(kill_id="test-3-bad", marker=str(tmp_path / "killed-once"))
    summary = predict_ray(None, data, tmp_path / "ray.jsonl", detector_factory=factory, progress=False,
                          settings=RaySettings(workers=2, batch_size=4))
    assert (tmp_path / "killed-once").exists()  # the worker did die
    predict_file(None, data, tmp_path / "local.jsonl", detector=Numbers(), progress=False)
    assert lines_by_id(tmp_path / "ray.jsonl") == lines_by_id(tmp_path / "local.jsonl")
    assert summary.predicted == 16 and summary.errors == 0 and summary.retried_alone == 0


def test_a_record_that_always_kills_its_worker_fails_alone(cluster, data, tmp_path):
    summary = predict_ray(None, data, tmp_path / "ray.jsonl", detector_factory=Factory(kill_id="test-5-ok"),
                          progress=False, settings=RaySettings(workers=2, batch_size=4, max_retries=0))
    lines = {k: json.loads(v) for k, v in lines_by_id(tmp_path / "ray.jsonl").items()}
    assert len(lines) == 16 and summary.errors == 1 and summary.counters["worker_died"] == 1
    assert lines["test-5-ok"]["error"] == "the worker process died each time it ran this record (1 attempt(s))"
    assert summary.retried_alone >= 1  # the rest of its batch was run again, one record per batch
    assert all("error" not in line for rid, line in lines.items() if rid != "test-5-ok")


def test_a_record_that_breaks_the_detector_fails_alone_as_in_predict(cluster, data, tmp_path):
    summary = predict_ray(None, data, tmp_path / "ray.jsonl", detector_factory=Factory(bad_id="test-2-bad"),
                          progress=False, settings=RaySettings(workers=2, batch_size=4))
    local = predict_file(None, data, tmp_path / "local.jsonl", detector=Numbers(bad_id="test-2-bad"),
                         progress=False)
    assert lines_by_id(tmp_path / "ray.jsonl") == lines_by_id(tmp_path / "local.jsonl")
    bad = json.loads(lines_by_id(tmp_path / "ray.jsonl")["test-2-bad"])
    assert bad["spans"] == [] and bad["error"].startswith("the detector failed on this record: ValueError")
    assert summary.errors == local.errors == 1 and summary.counters["detector_exception"] == 1


def test_a_killed_run_resumes_without_redoing_finished_ids(cluster, data, tmp_path):
    out = tmp_path / "ray.jsonl"
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import time
        from ragtruth_spans.detectors.base import Detector
        from ragtruth_spans.detectors.loader import load_detector
        from ragtruth_spans.pipeline.ray_engine import RaySettings, predict_ray

        class Slow(Detector):
            kind = "test-numbers"
            def __init__(self):
                self.inner = load_detector("numbers")
            def detect_batch(self, items):
                time.sleep(0.5 * len(items))
                return self.inner.detect_batch(items)
            def describe(self):
                return {{"kind": self.kind}}

        predict_ray(None, {str(data)!r}, {str(out)!r}, detector_factory=Slow, progress=False,
                    settings=RaySettings(address={cluster!r}, workers=1, batch_size=1))
    """))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen([sys.executable, str(script)], env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if out.is_file() and len(out.read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    done = len(out.read_text().splitlines())
    assert 3 <= done < 16
    with out.open("a") as fh:
        fh.write('{"id": "test-7-o')  # a line cut by the kill
    summary = predict_ray(None, data, out, detector_factory=Factory(), progress=False,
                          settings=RaySettings(workers=2, batch_size=4))
    assert summary.repaired_last_line and summary.skipped_done == done and summary.predicted == 16 - done
    predict_file(None, data, tmp_path / "local.jsonl", detector=Numbers(), progress=False)
    assert lines_by_id(out) == lines_by_id(tmp_path / "local.jsonl")


def test_workers_no_node_can_place_are_one_line_before_any_work(cluster, data, tmp_path):
    """GPUs per worker without GPUs, more CPUs per worker than a node has, or more workers
    than the cluster holds: one line naming the option at once, instead of a run that prints nothing and never
    ends (the check itself: test_ray_placement.py)."""
    from ragtruth_spans.cli import app

    out = tmp_path / "pred.jsonl"
    started = time.monotonic()
    result = CliRunner().invoke(app, ["predict", "--engine", "ray", "--model", "numbers", "--data", str(data),
                                      "--out", str(out), "--gpus-per-worker", "1"])
    assert result.exit_code == 2 and "field '--gpus-per-worker'" in result.output, result.output
    assert result.output.count("error:") == 1 and "the cluster has no GPU" in result.output
    for settings, message in ((RaySettings(cpus_per_worker=3), "no node has 3 CPUs"),
                              (RaySettings(workers=5), r"at most 2 worker\(s\) of 1 CPU at once, not 5")):
        with pytest.raises(InputError, match=message):
            predict_ray("numbers", data, out, settings=settings, progress=False)
    assert time.monotonic() - started < 60 and not (out.exists() and out.read_text())


def test_the_writer_drops_a_batch_that_ray_ran_twice(tmp_path):
    out = tmp_path / "pred.jsonl"
    summary = RaySummary(responses=2, skipped_done=0, out_path=str(out))
    writer = _Writer(out, summary, set(), {"format": "f", "detector": {}, "data": "d", "data_sha256": "x"})
    batch = {"id": ["a", "b"], "line": ['{"id": "a", "spans": [], "score": 0.0}\n',
                                        '{"id": "b", "spans": [], "score": 1.0}\n'],
             "detector": ['{"kind": "k"}', ""], "fatal": ["", ""], "worker": [1, 1], "peak_rss_mb": [10.0, 10.0],
             "load_seconds": [0.5, 0.5]}
    assert writer.write_batch(batch) == 2
    assert writer.write_batch(batch) == 0  # the same lines again: a retried batch
    assert summary.duplicates_dropped == 2 and summary.predicted == 2
    assert out.read_text().count("\n") == 2 and meta(out)["detector"] == {"kind": "k"}


def test_missing_extra_is_one_line(monkeypatch, data, tmp_path):
    from ragtruth_spans.cli import app
    from ragtruth_spans.core import extras

    monkeypatch.setattr(extras, "find_spec", lambda name: None if name == "ray" else object())
    result = CliRunner().invoke(app, ["predict", "--engine", "ray", "--model", "numbers", "--data", str(data),
                                      "--out", str(tmp_path / "p.jsonl")])
    assert result.exit_code == 2
    assert "predict --engine ray needs the 'ray' extra (ray not installed): pip install 'ragtruth-spans[ray]'" \
        in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_unreachable_address_is_one_line(data, tmp_path):
    with pytest.raises(InputError, match=r"cannot reach the Ray cluster at 'ray://127.0.0.1:1': Connection refused"):
        check_reachable("ray://127.0.0.1:1")
    with pytest.raises(InputError, match="expected auto, HOST:PORT or ray://HOST:PORT"):
        check_reachable("head:port")
    address = "127.0.0.1:1"  # the command line, in a process where Ray is not started
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run([sys.executable, "-m", "ragtruth_spans", "predict", "--engine", "ray", "--address",
                             address, "--model", "numbers", "--data", str(data), "--out", str(tmp_path / "p.jsonl")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: field '--address': cannot reach the Ray cluster at '{address}': Connection refused")
    assert not (tmp_path / "p.jsonl").exists()
