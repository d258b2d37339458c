"""Pairs from a task's own labels (``import nli-sentences``): each response sentence against exactly the windows the
detector judges it by, labelled from the gold spans' types; train → train, dev → dev, a test split never read;
extras' train splits only; a replay sample copied; strict and atomic on the command line.

The sentence encoder is the real all-MiniLM-L6-v2 (torch), as in the detector's tests; no NLI model is needed.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import write_nli_dir

pytest.importorskip("torch")

CONTEXT = ("The museum in the old town is red. It opened in 1950 beside the river. The garden behind it has two "
           "fountains. Visitors can climb the tower on weekends.")
RESPONSE = "The museum is red. It opened in 1962. The garden has a small cafe. Visitors climb the tower."
#           0                  19                   38                          66
FAITHFUL = "Visitors can climb the tower on weekends. The garden has two fountains."


def _record(rid: str, split: str, spans: list[dict], response: str = RESPONSE, **extra) -> dict:
    return {"id": rid, "source_id": f"s{rid}", "task_type": "Summary", "model": "m", "split": split,
            "quality": "good", "response": response, "context": CONTEXT, "question": None, "spans": spans, **extra}


def _span(start: int, end: int, kind: str) -> dict:
    return {"start": start, "end": end, "type": kind, "text": RESPONSE[start:end]}


def _write(folder: Path, splits: dict[str, list[dict] | str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in splits.items():
        text = rows if isinstance(rows, str) else "".join(json.dumps(r) + "\n" for r in rows)
        (folder / f"{split}.jsonl").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture()
def prepared(tmp_path: Path) -> Path:
    """Train: one response with a Conflict span inside sentence 2 (a partial overlap) and a Baseless span over part
    of sentence 3; dev: a faithful one of two sentences; test: a broken file (never read)."""
    train = [_record("1", "train", [_span(32, 36, "Evident Conflict"), _span(51, 65, "Subtle Baseless Info")])]
    return _write(tmp_path / "prepared", {"train": train, "dev": [_record("2", "dev", [], response=FAITHFUL)],
                                           "test": "{broken\n"})


@pytest.fixture(scope="module")
def detector():
    from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe
    from ragtruth_spans.detectors.entailment.task_pairs import pair_detector
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder

    recipe = EntailmentRecipe.model_validate({"stages": [{"data": ["nli"]}], "model": {"max_length": 128},
                                              "detection": {"windows": 2, "window_sentences": 1},
                                              "output_dir": "runs/x"})
    found = pair_detector(recipe)
    found._encoder = SentenceEncoder(runtime="torch")
    return found


def test_labels_and_premises_are_the_detectors(prepared: Path, detector) -> None:
    from ragtruth_spans.core.jsonl import read_records
    from ragtruth_spans.detectors.base import DetectItem
    from ragtruth_spans.detectors.entailment.task_pairs import build_task_pairs

    pairs, stats = build_task_pairs(prepared, detector)
    train = [p for p in pairs if p.split == "train"]
    by_sentence: dict[str, list] = {}
    for p in train:
        by_sentence.setdefault(p.hypothesis, []).append(p)
    assert [(h, [p.label for p in ps]) for h, ps in by_sentence.items()] == [
        ("The museum is red.", ["entailment"]),
        ("It opened in 1962.", ["contradiction", "not_entailment"]),
        ("The garden has a small cafe.", ["neutral", "neutral"]),
        ("Visitors climb the tower.", ["entailment"])]
    assert all(p.binary == (p.label == "not_entailment") for p in train)
    # the premises are the detector's own choice, best window first
    item = DetectItem.of(read_records(prepared / "train.jsonl")[0])
    windows, sentences, choices = detector.judged_windows([item])
    for (a, b), (order, _) in zip(sentences[0], choices[0]):
        premises = [p.premise for p in by_sentence[item.response[a:b]]]
        assert premises == [windows[0][w].premise for w in order][:len(premises)]
    assert by_sentence["The museum is red."][0].premise == "The museum in the old town is red."
    assert [p.label for p in pairs if p.split == "dev"] == ["entailment"] * 2
    assert stats["splits"] == {"train": 6, "dev": 2, "test": 0}
    assert stats["counts"]["ragtruth"]["train"] == {"entailment": 2, "neutral": 2, "contradiction": 1,
                                                   "not_entailment": 1}


def test_extras_train_only_unlocated_and_replay(tmp_path: Path, prepared: Path, detector) -> None:
    from ragtruth_spans.detectors.entailment.task_pairs import UNLOCATED_SKIP, build_task_pairs

    one = "The museum has a cafe."
    extra = _write(tmp_path / "begin", {"train": [_record("b1", "train", [], response=one, unlocated=True),
                                                  _record("b2", "train", [], unlocated=True),
                                                  _record("b3", "train", [], response="It opened beside the river.")],
                                        "dev": "{broken\n", "test": "{broken\n"})
    nli = write_nli_dir(tmp_path / "nli", {"train": 40, "dev": 4, "test": 4})
    pairs, stats = build_task_pairs(prepared, detector, extras={"begin": extra}, replay=nli, replay_pairs=10,
                                    seed=3)
    begin = [p for p in pairs if p.source == "begin"]
    # b1 (one sentence, unsupported): both windows not_entailment; b2 (four sentences) skipped; b3 entailed
    assert [(p.id.split("-")[2], p.label, p.binary) for p in begin] == [
        ("b1", "not_entailment", True), ("b1", "not_entailment", True), ("b3", "entailment", False)]
    assert {p.split for p in begin} == {"train"}
    assert stats["sentences"]["begin"]["train"]["skipped"] == {UNLOCATED_SKIP: 4}
    replayed = [p for p in pairs if p.source in ("snli", "fever_rte")]
    assert len(replayed) == 10 and {p.split for p in replayed} == {"train"}
    again, _ = build_task_pairs(prepared, detector, extras={"begin": extra}, replay=nli, replay_pairs=10, seed=3)
    assert again == pairs


def test_repeated_pairs_kept_once_conflicts_dropped_dev_wins(tmp_path: Path, detector) -> None:
    from ragtruth_spans.detectors.entailment.task_pairs import build_task_pairs

    folder = _write(tmp_path / "p", {"train": [_record("1", "train", []), _record("2", "train", []),
                                               _record("3", "train", [_span(0, 18, "Evident Baseless Info")])],
                                     "dev": [_record("4", "dev", [], response="Visitors climb the tower.")]})
    pairs, stats = build_task_pairs(folder, detector)
    labels = Counter((p.hypothesis, p.label) for p in pairs)
    # the best window's pair is entailment in two responses, neutral in a third: dropped; the second window's stays
    assert labels[("The museum is red.", "entailment")] == 0 and labels[("The museum is red.", "neutral")] == 1
    assert labels[("It opened in 1962.", "entailment")] == 1  # the same pair in three responses: kept once
    assert [p.split for p in pairs if p.hypothesis == "Visitors climb the tower."] == ["dev"]  # never trained on
    assert stats["duplicates"] == stats["input"] - stats["written"] > 0


def _cli(*args: str):
    from typer.testing import CliRunner

    from ragtruth_spans.cli import app

    return CliRunner().invoke(app, ["import", "nli-sentences", *args])


def test_cli_writes_a_prepared_nli_directory_the_trainer_reads(tmp_path: Path, prepared: Path, monkeypatch,
                                                              detector) -> None:
    from ragtruth_spans.detectors.entailment import task_pairs
    from ragtruth_spans.detectors.entailment.pairs import load_split

    monkeypatch.setattr(task_pairs, "pair_detector", lambda recipe: detector)
    out = tmp_path / "out"
    result = _cli("--prepared", str(prepared), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert {p.name for p in out.iterdir()} == {"train.jsonl", "dev.jsonl", "test.jsonl", "stats.json"}
    assert (out / "test.jsonl").read_text() == ""
    assert len(load_split([out], "train")) == 6 and len(load_split([out], "dev")) == 2
    assert json.loads((out / "stats.json").read_text())["files"].keys() == {
        str(prepared / "train.jsonl"), str(prepared / "dev.jsonl")}


def test_cli_bad_input_is_one_line_exit_2_and_keeps_the_output(tmp_path: Path, prepared: Path, monkeypatch,
                                                              detector) -> None:
    from ragtruth_spans.detectors.entailment import task_pairs

    monkeypatch.setattr(task_pairs, "pair_detector", lambda recipe: detector)
    out = tmp_path / "out"
    assert _cli("--prepared", str(prepared), "--out", str(out)).exit_code == 0
    before = (out / "train.jsonl").read_text()
    (prepared / "dev.jsonl").write_text(json.dumps(_record("9", "dev", [])) + "\n" + '{"id": 3}\n')
    result = _cli("--prepared", str(prepared), "--out", str(out))
    assert result.exit_code == 2
    assert "dev.jsonl:2" in result.output and "Traceback" not in result.output
    assert (out / "train.jsonl").read_text() == before
    for bad in (["--extra", "nodir"], ["--replay-pairs", "5"], ["--recipe", "tiny-cpu"]):
        result = _cli("--prepared", str(prepared), "--out", str(tmp_path / "o2"), *bad)
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
