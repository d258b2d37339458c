"""The detector shipped inside the package: its files are what their manifest and build.json say, the package
data ships them, every way of asking for "the default" loads it, and it flags a changed number."""

from __future__ import annotations

import json
from fnmatch import fnmatch
from pathlib import Path

import pytest
import yaml

import ragtruth_spans
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.shipped import BUILD_FILE, DEFAULT_DIR, DEFAULT_NAME, is_default, resolve_detector
from ragtruth_spans.runs.manifest import METADATA_FILES, run_files, verify_run
from ragtruth_spans.runs.run_dir import run_fingerprint
from ragtruth_spans.runs.run_info import FINGERPRINT_FILE, RUN_INFO_FILE, read_run_info

REPO = Path(__file__).resolve().parents[2]
CONTEXT = "Passage 1: The Grand Hotel opened in 1999 and has 120 rooms."
QUESTION = "When did the Grand Hotel open?"
CHANGED = "The Grand Hotel opened in 1998 and has 120 rooms."
FAITHFUL = "The Grand Hotel opened in 1999 and has 120 rooms."


def test_the_shipped_files_match_their_manifest_and_build_record() -> None:
    info = verify_run(DEFAULT_DIR)  # every file's SHA-256 and run_info.json's fingerprint
    assert info["kind"] == "stacked" and info["created"] is None and "seconds" not in info
    on_disk = sorted(p.name for p in DEFAULT_DIR.iterdir())
    assert sorted(run_files(DEFAULT_DIR)) == sorted(set(on_disk) - set(METADATA_FILES))  # nothing unlisted
    assert {"combiner.txt", "recipe.yaml", BUILD_FILE, *METADATA_FILES} <= set(on_disk)
    build = json.loads((DEFAULT_DIR / BUILD_FILE).read_text(encoding="utf-8"))
    assert build["training_fingerprint"] == info["training_fingerprint"]
    assert build["recipe"] == "recommended-cpu" and yaml.safe_load((DEFAULT_DIR / "recipe.yaml").read_text())[
        "kind"] == "stacked"
    assert {f"{d}/{f}" for d in ("ragtruth_pool", "ragtruth_sample") for f in ("response.jsonl",
                                                                              "source_info.jsonl")} <= set(
        build["inputs_sha256"])  # and the external sets whose contexts data.synth read (external/...)
    assert all(k.startswith(("ragtruth_", "external/")) for k in build["inputs_sha256"])
    assert {"lightgbm", "numpy", "sentence-transformers", "torch", "python"} <= set(build["libraries"])
    assert build["command"][:2] == ["python", "scripts/build_default_detector.py"]
    train, held = build["data"]["train"], build["data"]["eval"]
    assert info["data"]["counts"]["records"] == train["responses"]  # what the run says it read
    assert sum(t["responses"] for t in train["by_task"].values()) == train["responses"]
    assert sum(m["responses"] for m in train["by_model"].values()) == train["responses"]
    generated = (info["data"]["eval"]["counts"].get("synth") or {}).get("records", 0)
    assert held["responses"] + generated == info["tuning"]["eval"]  # the eval split + data.synth's held-out


def test_the_shipped_files_are_what_this_code_would_train_from_their_recipe() -> None:
    """A recipe option added since the build changes the training fingerprint the code computes: the shipped files
    are then no longer what ``scripts/build_default_detector.py`` makes, and must be rebuilt (BENCHMARKS, "The
    shipped detector")."""
    text = (DEFAULT_DIR / "recipe.yaml").read_text()
    recipe = validate_recipe(yaml.safe_load(text), saved_run=True)
    saved = json.loads((DEFAULT_DIR / FINGERPRINT_FILE).read_text())
    assert recipe.to_yaml() == text
    assert run_fingerprint(recipe, [])["recipe"] == saved["recipe"]


def test_the_shipped_inputs_are_the_shared_data_when_present() -> None:
    """build.json's input hashes are those of ../shared/data (skipped on a clone without it)."""
    shared = REPO.parent / "shared" / "data"
    if not (shared / "ragtruth_pool" / "response.jsonl").is_file():
        pytest.skip("../shared/data is not present")
    build = json.loads((DEFAULT_DIR / BUILD_FILE).read_text(encoding="utf-8"))
    if build["split"]["subset"] is not None:
        pytest.fail("the shipped detector was built from a --subset: rebuild it from all the data")
    assert {name: file_sha256(shared / name) for name in build["inputs_sha256"]} == build["inputs_sha256"]


def test_pyproject_ships_every_file_as_package_data() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["ragtruth_spans"]
    package = Path(ragtruth_spans.__file__).parent
    for path in DEFAULT_DIR.iterdir():
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch(relative, pattern) for pattern in patterns), relative


def test_the_name_default_yields_to_a_directory_of_that_name(tmp_path: Path, monkeypatch) -> None:
    assert is_default(None) and resolve_detector(None) == DEFAULT_DIR
    assert resolve_detector(DEFAULT_NAME) == DEFAULT_DIR and resolve_detector("runs/x") == "runs/x"
    monkeypatch.chdir(tmp_path)
    (tmp_path / DEFAULT_NAME).mkdir()
    assert not is_default(DEFAULT_NAME) and resolve_detector(DEFAULT_NAME) == DEFAULT_NAME


def test_a_missing_shipped_detector_is_one_clear_error(tmp_path: Path, monkeypatch) -> None:
    from ragtruth_spans.detectors import loader

    monkeypatch.setattr(loader, "DEFAULT_DIR", tmp_path / "gone")
    with pytest.raises(InputError, match="shipped detector is missing.*build_default_detector"):
        loader.load_detector()


def test_a_changed_shipped_file_is_refused(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(DEFAULT_DIR, copy)
    (copy / BUILD_FILE).write_text("{}\n", encoding="utf-8")
    with pytest.raises(InputError, match="changed since the run was written"):
        verify_run(copy)


@pytest.fixture(scope="module")
def shipped():
    from ragtruth_spans.detectors.quick_detect import shipped_detector

    return shipped_detector()


def test_load_detector_without_an_argument_is_the_shipped_one(shipped) -> None:
    from ragtruth_spans.detectors.loader import load_detector

    fingerprint = read_run_info(DEFAULT_DIR)["fingerprint"]
    assert shipped.describe()["fingerprint"] == fingerprint and shipped.kind == "stacked"
    assert load_detector(DEFAULT_NAME, threshold=0.5).describe()["fingerprint"] == fingerprint


def test_the_gate_is_an_option_and_a_bad_one_is_refused(shipped) -> None:
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.detectors.loader import load_detector

    added = "The castle was built in 1240 by King Edward I."
    item = {"context": "The castle was built in 1240 by the town.", "response": added, "task": "Summary"}
    found = shipped.detect_batch([item])[0]
    closed = load_detector(DEFAULT_NAME, gate=1.0).detect_batch([item])[0]
    assert found.spans and found.score < 1.0 and not closed.spans  # the addition has no contradicted word
    assert load_detector(DEFAULT_NAME, gate=0.4).decision.response_threshold == 0.4
    for bad in (1.5, "high", True):
        with pytest.raises(InputError, match="gate"):
            load_detector(DEFAULT_NAME, gate=bad)


def test_one_call_detect_flags_a_changed_number(shipped) -> None:
    found = ragtruth_spans.detect(CONTEXT, CHANGED, question=QUESTION)
    assert [CHANGED[s.start:s.end] for s in found.spans] == ["1998"]
    assert found.spans[0].score is not None and 0.0 < found.spans[0].score <= 1.0
    assert found.score is not None and found.score >= shipped.decision.response_threshold
    clean = ragtruth_spans.detect(CONTEXT, FAITHFUL, question=QUESTION)
    assert clean.spans == [] and clean.score < found.score
    summary = ragtruth_spans.detect(CONTEXT, CHANGED, task="Summary")  # no question: a task of your choice
    assert [CHANGED[s.start:s.end] for s in summary.spans] == ["1998"]


def test_one_call_detect_loads_once_and_checks_its_input(shipped) -> None:
    from ragtruth_spans.detectors.quick_detect import shipped_detector

    assert shipped_detector() is shipped  # cached per process
    with pytest.raises(InputError, match="response"):
        ragtruth_spans.detect(CONTEXT, "")
    with pytest.raises(InputError, match="task"):
        ragtruth_spans.detect(CONTEXT, CHANGED, task="Poetry")
    assert "detect" in ragtruth_spans.__all__ and ragtruth_spans.detect.__doc__.count(">>>") >= 3


def test_run_info_is_not_in_its_own_manifest() -> None:
    assert RUN_INFO_FILE not in read_run_info(DEFAULT_DIR)["files_sha256"]


def test_the_shipped_run_records_what_it_trained_on() -> None:
    """The overlap guard knows the shipped detector's training data (trained_on.json, in its manifest)."""
    from ragtruth_spans.pipeline.trained_on import model_training_data

    training = model_training_data(DEFAULT_NAME)
    assert training.status == "known" and training.trained_on is not None
    build = json.loads((DEFAULT_DIR / BUILD_FILE).read_text(encoding="utf-8"))
    synth = yaml.safe_load((DEFAULT_DIR / "recipe.yaml").read_text(encoding="utf-8"))["data"].get("synth") or {}
    # the eval split holds the generated held-out records too; training, the augmented and generated ones
    assert training.trained_on.records["eval"] == build["data"]["eval"]["responses"] + synth.get("eval_count", 0)
    assert training.trained_on.records["train"] >= build["data"]["train"]["responses"] + synth.get("count", 0)
    assert "trained_on.json" in read_run_info(DEFAULT_DIR)["files_sha256"]


def test_the_shipped_run_overlaps_all_of_the_shared_pool() -> None:
    """Evaluated on ../shared/data's RAGTruth responses, every one is counted as seen (skipped without it)."""
    from ragtruth_spans.data.ragtruth import load_ragtruth
    from ragtruth_spans.evaluation.overlap import count_overlap
    from ragtruth_spans.pipeline.trained_on import model_training_data

    pool = REPO.parent / "shared" / "data" / "ragtruth_pool"
    if not (pool / "response.jsonl").is_file():
        pytest.skip("../shared/data is not present")
    gold = load_ragtruth(pool)
    overlap = count_overlap(gold, model_training_data(DEFAULT_NAME))
    assert overlap.status == "known" and len(overlap.ids) == len(gold) == overlap.shared_source
