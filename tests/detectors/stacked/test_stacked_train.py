"""The stacked family end to end at tiny scale: decide() on crafted probabilities, then train (features + a named
member + a trained tiny-BERT member, out of fold) → run directory → load_detector → detections, predict and
evaluate through the CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import synthetic_records
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.stacked.combiner import decide, source_folds
from ragtruth_spans.detectors.train import train


def test_decide_merges_flagged_words_across_small_gaps():
    spans = [(0, 2), (3, 5), (6, 8), (9, 11), (12, 14)]
    probs = np.array([0.9, 0.1, 0.8, 0.0, 0.7])
    assert [(s.start, s.end) for s in decide(spans, probs, 0.5, 0)] == [(0, 2), (6, 8), (12, 14)]
    assert [(s.start, s.end) for s in decide(spans, probs, 0.5, 1)] == [(0, 14)]
    merged = decide(spans, probs, 0.5, 1)[0]
    assert merged.score == pytest.approx(0.8)
    assert decide(spans, probs, 0.95, 2) == []


def test_source_folds_keep_a_source_in_one_fold_and_are_seeded():
    groups = [f"src-{i % 7}" for i in range(40)]
    folds = source_folds(groups, 3, seed=0)
    assert set(folds.tolist()) == {0, 1, 2}
    assert all(len({f for g, f in zip(groups, folds) if g == source}) == 1 for source in set(groups))
    assert folds.tolist() == source_folds(list(reversed(groups)), 3, seed=0)[::-1].tolist()  # row order is free
    ranks = np.random.default_rng(0).permutation(7) % 3  # the sorted sources take the permutation in order
    assert [folds[groups.index(f"src-{i}")] for i in range(7)] == ranks.tolist()


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stacked-data")
    write_records(root / "train.jsonl", synthetic_records(16, 0, "train"))
    write_records(root / "dev.jsonl", synthetic_records(6, 1, "dev"))
    write_records(root / "test.jsonl", synthetic_records(6, 2, "test"))
    return root


def stacked_recipe(prepared: Path, out: Path, members: list | None = None) -> dict:
    return {"kind": "stacked", "features": {"encoder": None}, "members": members or [],
            "combiner": {"min_data_in_leaf": 5, "num_leaves": 7, "max_rounds": 60, "early_stopping_rounds": 20,
                         "oof_folds": 2},
            "decision": {"grid": [0.1, 0.3, 0.5, 0.7], "max_word_gap": [0, 1]},
            "response": {"min_data_in_leaf": 2, "num_leaves": 3, "folds": 2, "learning_rate": 0.2},
            "data": {"prepared_dir": str(prepared), "eval_split": "dev"}, "output_dir": str(out)}


def test_train_save_load_detect_round_trip(prepared, tmp_path):
    out = tmp_path / "run"
    train(validate_recipe(stacked_recipe(prepared, out, [{"name": "numbers", "detector": "numbers"}])))
    info = json.loads((out / "run_info.json").read_text())
    assert info["kind"] == "stacked" and info["rounds"] >= 1
    stages = ["members", "columns", "boosting", "out_of_fold", "decision", "response"]
    assert list(info["seconds"]) == list(info["peak_rss_mb"]) == stages
    peaks = [info["peak_rss_mb"][s] for s in stages]
    assert peaks == sorted(peaks)  # a high-water mark
    assert info["columns"][-3:] == ["numbers_word", "numbers_mean_3", "numbers_mean_8"]
    assert (out / "combiner.txt").read_text().startswith("tree")  # LightGBM's text format, no pickle
    detector = load_detector(out)
    test = synthetic_records(6, 2, "test")
    detections = detector.detect_batch(test)
    for record, detection in zip(test, detections):
        found = {record.response[s.start:s.end] for s in detection.spans}
        assert found == {s.text for s in record.spans}, (record.response, found)
        assert 0.0 <= detection.score <= 1.0
    bad = [d.score for r, d in zip(test, detections) if r.spans]
    good = [d.score for r, d in zip(test, detections) if not r.spans]
    assert min(bad) > max(good)
    again = load_detector(out).detect_batch(test)
    assert [d.to_dict() for d in again] == [d.to_dict() for d in detections]


def test_a_named_members_options_reach_its_loader_and_only_named_members_take_them(prepared, tmp_path):
    member = {"name": "numbers", "detector": "numbers", "options": {"threshold": 0.5}}
    with pytest.raises(InputError, match="threshold do not apply to a rule-based detector"):
        train(validate_recipe(stacked_recipe(prepared, tmp_path / "run", [member])))
    trained_here = {"name": "tok", "recipe": "all-minilm-l6-v2/token-cls", "options": {"threshold": 0.5}}
    with pytest.raises(InputError, match="a member trained here takes overrides"):
        validate_recipe(stacked_recipe(prepared, tmp_path / "other", [trained_here]))


@pytest.mark.slow
def test_a_trained_member_is_fitted_out_of_fold_and_reloaded(prepared, tmp_path):
    member_recipe = tmp_path / "tiny-token-cls.yaml"
    member_recipe.write_text(yaml.safe_dump({
        "kind": "token-classification", "model": {"name_or_path": "tiny", "tiny": {"architecture": "bert"}},
        "data": {"prepared_dir": "unused", "max_length": 128},
        "windows": {"min_context_tokens": 16, "response_overlap": 4},
        "training": {"max_steps": 4, "learning_rate": 3e-3, "per_device_batch_size": 8, "bf16": False,
                     "gradient_checkpointing": False, "save_steps": 4, "eval_steps": 4, "logging_steps": 2},
        "output_dir": "unused"}))
    out = tmp_path / "run"
    train(validate_recipe(stacked_recipe(prepared, out, [{"name": "tok", "recipe": str(member_recipe),
                                                          "folds": 2}])))
    for part in ("fold-0", "fold-1", "full"):
        assert json.loads((out / "members" / "tok" / part / "run_info.json").read_text())["kind"] == \
            "token-classification"
    info = json.loads((out / "run_info.json").read_text())
    assert info["members"]["tok"]["path"] == "members/tok/full"
    detector = load_detector(out)
    assert list(detector.builder.members) == ["tok"]
    assert len(detector.detect_batch(synthetic_records(2, 3, "test"))) == 4

    # refit: false — no full model; the eval split and detection use the mean of the fold models
    again = tmp_path / "no-refit"
    train(validate_recipe(stacked_recipe(prepared, again, [{"name": "tok", "recipe": str(member_recipe),
                                                            "folds": 2, "refit": False}])))
    assert not (again / "members" / "tok" / "full").exists()
    info = json.loads((again / "run_info.json").read_text())
    assert info["members"]["tok"]["fold_paths"] == ["members/tok/fold-0", "members/tok/fold-1"]
    mean = load_detector(again).builder.members["tok"]
    folds = [load_detector(again / "members" / "tok" / f"fold-{k}") for k in range(2)]
    items = [DetectItem.of(r) for r in synthetic_records(1, 3, "test")]
    expected = np.mean([folds[k].character_scores(items)[0][0] for k in range(2)], axis=0)
    np.testing.assert_allclose(mean.character_scores(items)[0][0], expected, rtol=1e-6)


def test_predict_and_evaluate_through_the_cli(prepared, tmp_path):
    out = tmp_path / "run"
    train(validate_recipe(stacked_recipe(prepared, out)))
    runner = CliRunner()
    pred = tmp_path / "pred.jsonl"
    result = runner.invoke(app, ["predict", "--model", str(out), "--data", str(prepared / "test.jsonl"),
                                 "--out", str(pred)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["evaluate", "--gold", str(prepared / "test.jsonl"), "--pred", str(pred),
                                 "--json", str(tmp_path / "report.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["overall"]["span"]["f1"] == pytest.approx(1.0)


def test_quiet_train_prints_only_its_result_and_normal_train_logs_its_steps(prepared, tmp_path):
    """``--quiet train``: no step line, no progress, on either stream; the one-line result on stdout. Without
    ``--quiet`` the steps are records on stderr, never on stdout."""
    runner = CliRunner()
    for flags, name in (["--quiet"], "quiet"), ([], "normal"):
        recipe = tmp_path / f"{name}.yaml"
        recipe.write_text(yaml.safe_dump(stacked_recipe(prepared, tmp_path / name,
                                                        [{"name": "numbers", "detector": "numbers"}])))
        result = runner.invoke(app, [*flags, "train", str(recipe)])
        assert result.exit_code == 0, result.output
        [line] = result.stdout.splitlines()
        assert line.startswith("done: ") and "boosting rounds" in line and str(tmp_path / name) in line
        if name == "quiet":
            assert result.stderr == ""
        else:
            steps = result.stderr.splitlines()
            assert any(s.startswith("stacked: ") for s in steps) and all("stacked: " not in s for s in [line])
    result = runner.invoke(app, ["--quiet", "train", str(tmp_path / "quiet.yaml")])  # a finished run: refused
    assert result.exit_code == 2 and result.stdout == "" and result.stderr.startswith("error: ")
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output


def test_recipe_needs_an_eval_split_and_one_member_source(prepared, tmp_path):
    recipe = stacked_recipe(prepared, tmp_path / "run")
    recipe["data"]["eval_split"] = None
    with pytest.raises(InputError, match="eval_split"):
        validate_recipe(recipe)
    recipe = stacked_recipe(prepared, tmp_path / "run", [{"name": "m", "recipe": "x", "detector": "numbers"}])
    with pytest.raises(InputError, match="exactly one of recipe"):
        validate_recipe(recipe)


def test_the_tuning_figures_are_the_evaluators():
    from ragtruth_spans.detectors.stacked.combiner import Decision, TuningInputs
    from ragtruth_spans.detectors.stacked.text import words
    from ragtruth_spans.evaluation import evaluate

    records = synthetic_records(5, 7, "dev")
    rng = np.random.default_rng(0)
    spans = [words(r.response) for r in records]
    probs = [rng.random(len(w)) for w in spans]
    scores = [float(p.max()) for p in probs]
    conflicts = [np.arange(len(w)) == 3 for w in spans]
    inputs = TuningInputs(records, spans, probs, scores, conflicts)
    for threshold, gap, gate, rule in [(0.3, 0, 0.0, False), (0.5, 1, 0.0, False), (0.8, 2, 0.0, False),
                                       (0.3, 0, 0.97, False), (0.3, 0, 0.97, True)]:
        decision = Decision({"*": threshold, "Summary": threshold}, gap, gate, conflict_rule=rule)
        predictions = {r.id: decision.spans(w, p, r.task_type, s, c)
                       for r, w, p, s, c in zip(records, spans, probs, scores, conflicts)}
        overall = evaluate(records, predictions).overall
        figures = inputs.figures(range(len(records)), decision)
        assert (figures["span"]["f1"], figures["response"]["f1"]) == pytest.approx(
            (overall["span"]["f1"], overall["response"]["f1"]))
    gated = Decision({"*": 0.3}, 0, 0.97)
    assert any(p.max() < 0.97 for p in probs) and sum(bool(gated.spans(w, p, "Summary")) for w, p in
                                                     zip(spans, probs)) < len(records)


def test_the_gate_is_the_best_response_f1_within_the_span_f1_tolerance():
    from ragtruth_spans.detectors.stacked.combiner import TuningInputs, tune, tune_gate
    from ragtruth_spans.detectors.stacked.recipe import DecisionSection
    from ragtruth_spans.detectors.stacked.text import words

    records = synthetic_records(8, 3, "dev")
    spans = [words(r.response) for r in records]
    rng = np.random.default_rng(1)
    # hallucinated words score high, others low; clean responses get a low response score
    probs = [np.array([0.9 if any(g.start <= a < g.end for g in r.spans) else rng.uniform(0, 0.6) for a, _ in w])
             for r, w in zip(records, spans)]
    scores = [0.9 if r.spans else 0.2 for r in records]
    settings = DecisionSection(grid=[0.3, 0.5, 0.7, 0.95], max_word_gap=[0], fill=[None], gate_span_f1_tolerance=0.0)
    decision, table = tune(records, spans, probs, settings)
    gated = tune_gate(records, spans, probs, scores, decision, settings, table)
    inputs = TuningInputs(records, spans, probs, scores)
    base = inputs.figures(range(len(records)), decision)
    after = inputs.figures(range(len(records)), gated)
    assert after["span"]["f1"] >= base["span"]["f1"] and after["response"]["f1"] >= base["response"]["f1"]
    best = max(row["response_f1"] for row in table if "response_f1" in row
               and row["span_f1"] >= round(base["span"]["f1"], 6) - 1e-6)
    assert after["response"]["f1"] == pytest.approx(best, abs=1e-6)


def test_each_gate_row_is_what_the_gated_decision_scores_directly():
    from ragtruth_spans.detectors.stacked.combiner import Decision, TuningInputs, tune_gate
    from ragtruth_spans.detectors.stacked.recipe import DecisionSection
    from ragtruth_spans.detectors.stacked.text import words
    from ragtruth_spans.training.tuning import tuning_figures

    records = synthetic_records(10, 4, "dev")
    spans = [words(r.response) for r in records]
    rng = np.random.default_rng(3)
    probs = [rng.uniform(0, 1, len(w)) for w in spans]
    scores = rng.uniform(0, 1, len(records)).tolist()
    conflicts = [rng.uniform(0, 1, len(w)) < 0.1 for w in spans]
    settings = DecisionSection(grid=[0.3, 0.6, 0.9], max_word_gap=[1], fill=[None, 0.7], conflict_rule=True,
                               gate_threshold_scales=[1.0, 0.5])
    table: list[dict] = []
    tune_gate(records, spans, probs, scores, Decision({"*": 0.6}, 1), settings, table, conflicts)
    inputs = TuningInputs(records, spans, probs, scores, conflicts)
    everyone = list(range(len(records)))
    assert len(table) == 2 * 2 * 4
    for row in table:
        figures = tuning_figures(records, inputs.spans(everyone, Decision.from_dict(row)))
        assert (row["span_f1"], row["response_f1"]) == (round(figures["span_f1"], 6),
                                                         round(figures["response_f1"], 6))
    assert len({(row["span_f1"], row["response_f1"]) for row in table}) > 4  # the gates, fills and scales differ


@pytest.mark.parametrize("per_task", [True, False])
def test_tune_chooses_what_scoring_every_candidate_directly_chooses(per_task: bool):
    from ragtruth_spans.detectors.stacked.combiner import Decision, TuningInputs, tune
    from ragtruth_spans.detectors.stacked.recipe import DecisionSection
    from ragtruth_spans.detectors.stacked.text import words
    from ragtruth_spans.training.tuning import choose_best

    records = [dataclasses.replace(r, task_type=("QA", "Summary", "Data2txt")[k % 3])
               for k, r in enumerate(synthetic_records(12, 4, "dev"))]
    spans = [words(r.response) for r in records]
    rng = np.random.default_rng(5)
    probs = [rng.uniform(0, 1, len(w)) ** 2 for w in spans]
    settings = DecisionSection(grid=[0.2, 0.4, 0.6, 0.8], max_word_gap=[0, 2], per_task=per_task)
    decision, table = tune(records, spans, probs, settings)
    inputs, everyone = TuningInputs(records, spans, probs), list(range(len(records)))

    def best(subset: list[int], gap: int) -> float:
        return choose_best([records[i] for i in subset], [{"*": t} for t in settings.grid],
                           lambda t: inputs.spans(subset, Decision(t, gap))).best["*"]

    candidates = []
    for gap in settings.max_word_gap:
        single = best(everyone, gap)
        candidates.append(Decision({"*": single}, gap))
        if per_task:
            candidates.append(Decision({"*": single, **{task: best([i for i in everyone if records[i].task_type
                                                                     == task], gap)
                                                        for task in ("QA", "Summary", "Data2txt")}}, gap))
    direct = choose_best(records, candidates, lambda c: inputs.spans(everyone, c))
    assert decision == direct.best
    assert [row["span_f1"] for row in table] == [round(row["span_f1"], 6) for row in direct.figures]
    assert [Decision.from_dict(row) for row in table] == candidates
    assert len({row["span_f1"] for row in table}) > 1  # the candidates differ


def test_detect_benchmark_and_serve_use_a_stacked_run(prepared, tmp_path):
    from fastapi.testclient import TestClient

    from ragtruth_spans.serving.app import create_app

    out = tmp_path / "run"
    train(validate_recipe(stacked_recipe(prepared, out)))
    record = synthetic_records(1, 5, "test")[1]  # the response with a changed year
    runner = CliRunner()
    result = runner.invoke(app, ["detect", "--model", str(out), "--context", record.context, "--response",
                                 record.response, "--task", "Summary", "--output", "json"])
    assert result.exit_code == 0, result.output
    line = json.loads(result.stdout.strip().splitlines()[-1])
    assert [record.response[s["start"]:s["end"]] for s in line["spans"]] == [record.spans[0].text]
    board = tmp_path / "board"
    result = runner.invoke(app, ["benchmark", "--gold", str(prepared / "test.jsonl"), "--detectors",
                                 f"{out},numbers", "--out", str(board)])
    assert result.exit_code == 0, result.output
    entries = json.loads((board / "leaderboard.json").read_text())["detectors"]
    assert entries[0]["report"]["overall"]["span"]["f1"] == pytest.approx(1.0)
    with TestClient(create_app(load_detector(out)), base_url="http://localhost") as client:
        answer = client.post("/v1/detect", json={"context": record.context, "response": record.response,
                                                 "task": "Summary"})
    assert answer.status_code == 200
    assert [(s["start"], s["end"]) for s in answer.json()["spans"]] == [(record.spans[0].start, record.spans[0].end)]


def test_an_unfinished_or_foreign_run_is_refused(prepared, tmp_path):
    import shutil

    out = tmp_path / "run"
    train(validate_recipe(stacked_recipe(prepared, out)))
    unfinished = tmp_path / "unfinished"
    shutil.copytree(out, unfinished)
    info = json.loads((unfinished / "run_info.json").read_text())
    del info["decision"]
    (unfinished / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="run_info.json: edited after the run was written"):
        load_detector(unfinished)  # the manifest's fingerprint notices first
    del info["files_sha256"]  # as a run written before manifests: the family's own checks
    (unfinished / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="not a finished stacked run"), pytest.warns(UserWarning):
        load_detector(unfinished)
    edited = tmp_path / "edited"
    shutil.copytree(out, edited)
    info = json.loads((edited / "run_info.json").read_text())
    info["columns"] = info["columns"][:-1]
    del info["files_sha256"]
    (edited / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="columns .* differ from the combiner's"), pytest.warns(UserWarning):
        load_detector(edited)  # fewer columns than the combiner reads
    info["columns"] = [*info["columns"][:-1], "no_such_column"]
    (edited / "run_info.json").write_text(json.dumps(info))
    with pytest.raises(InputError, match="not columns this version computes"), pytest.warns(UserWarning):
        load_detector(edited)


def test_extra_training_sources_are_weighted_rows_never_tuned_on(prepared, tmp_path):
    extra = tmp_path / "extra"
    other = [r.__class__(**{**r.__dict__, "id": f"other-{r.id}"}) for r in synthetic_records(8, 5, "train")]
    write_records(extra / "train.jsonl", other)  # other ids and contexts: data.extra may not overlap the run's
    out = tmp_path / "run"
    recipe = stacked_recipe(prepared, out)
    recipe["data"]["extra"] = [{"dir": str(extra), "weight": 0.5}]
    train(validate_recipe(recipe))
    info = json.loads((out / "run_info.json").read_text())
    assert info["data"]["counts"]["extra"][0]["kept"] == 16 and info["data"]["counts"]["extra"][0]["weight"] == 0.5
    assert info["tuning"]["responses"] == 32 + 12          # the real training and eval responses, no extra one
    assert (info["response"] or info["response_head_dropped"])["responses"] == 32 + 12
    assert info["words"]["train"] > 0 and load_detector(out).detect_batch(synthetic_records(1, 2, "test"))
    assert (info["response"] or info["response_head_dropped"])["fitted_on"] == {"augmented": 0, "real": 32}
    recipe["response"]["extra"] = True  # the head learns from the extra responses too, still tuned on real ones
    train(validate_recipe({**recipe, "output_dir": str(tmp_path / "run-extra")}))
    info = json.loads((tmp_path / "run-extra" / "run_info.json").read_text())
    head = info["response"] or info["response_head_dropped"]
    assert head["fitted_on"] == {"augmented": 0, "extra": 16, "real": 32} and head["responses"] == 32 + 12


def test_generated_records_join_training_and_the_eval_split_and_are_tuned_on(prepared, tmp_path):
    out = tmp_path / "run"
    recipe = stacked_recipe(prepared, out)
    recipe["data"]["synth"] = {"count": 30, "eval_count": 12, "seed": 3}
    train(validate_recipe(recipe))
    info = json.loads((out / "run_info.json").read_text())
    counts = info["data"]["counts"]["synth"]
    assert counts["records"] == 30 and sum(counts["made"].values()) == 30
    assert info["data"]["eval"]["counts"]["synth"]["records"] == 12
    eval_real = info["data"]["eval"]["counts"]["records"]
    assert info["tuning"]["eval"] == eval_real + 12  # the generated held-out records are tuned on
    assert load_detector(out).detect_batch(synthetic_records(2, 1, "test"))


def test_an_ensemble_of_seeds_averages_its_boosters_and_needs_every_file(prepared, tmp_path):
    from ragtruth_spans.detectors.stacked import combiner

    out = tmp_path / "run"
    recipe = stacked_recipe(prepared, out)
    recipe["combiner"]["seeds"] = 3
    train(validate_recipe(recipe))
    info = json.loads((out / "run_info.json").read_text())
    assert len(info["rounds"]) == 3 and {"combiner-1.txt", "combiner-2.txt"} <= set(info["files_sha256"])
    ensemble = combiner.load(out, 3)
    x = np.random.default_rng(0).random((5, ensemble.num_feature()))
    single = [b.predict(x, num_iteration=combiner.rounds_of(b)) for b in ensemble.boosters]
    assert np.allclose(ensemble.predict(x), np.mean(single, axis=0))
    records = synthetic_records(2, 2, "test")
    assert len(load_detector(out).detect_batch(records)) == len(records)
    combiner.save(combiner.Ensemble(ensemble.boosters[:1]), out)  # a later one-booster try: the others go
    assert not list(out.glob("combiner-*.txt"))
    with pytest.raises(InputError, match="no combiner-1.txt"):
        combiner.load(out, 3)


def test_every_word_of_a_labelled_phrase_is_labelled_and_weighs_the_same(tmp_path):
    from ragtruth_spans.core.types import Record, Span
    from ragtruth_spans.detectors.stacked.columns import ItemColumns
    from ragtruth_spans.detectors.stacked.features import BASE_FEATURES
    from ragtruth_spans.detectors.stacked.train import word_matrix

    response = "It was built in 1240 by King Edward"
    record = Record("r1", "s1", "QA", "m", "train", "good", response, "It was built in 1240 by a king.",
                    spans=[Span(21, 35, "Evident Baseless Info")])  # "by King Edward"
    words = [(0, 2), (3, 6), (7, 12), (13, 15), (16, 20), (21, 23), (24, 28), (29, 35)]
    matrix = np.zeros((len(words), len(BASE_FEATURES)), dtype=np.float32)
    held = BASE_FEATURES.index("stem_in_context")
    matrix[:7, held] = 1.0  # every word but "Edward" is in the context ("king" by its stem)
    columns = [ItemColumns(words, matrix)]
    recipe = stacked_recipe(tmp_path, tmp_path / "run")
    plain = word_matrix(validate_recipe(recipe), [record], columns, [record], columns)
    assert plain.weight is None and plain.y.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]  # copied words too


def test_an_unlocated_extra_record_teaches_words_as_its_source_says(tmp_path):
    from ragtruth_spans.core.types import Record
    from ragtruth_spans.detectors.stacked.columns import ItemColumns
    from ragtruth_spans.detectors.stacked.features import BASE_FEATURES
    from ragtruth_spans.detectors.stacked.train import word_matrix

    located = Record("r1", "s1", "QA", "m", "train", "good", "It opened in 1999", "It opened in 1999.")
    unlocated = Record("b1#extra-0", "extra-0:b", "QA", "m", "train", "good", "It opened in 1998", "It opened in "
                       "1999.", unlocated=True)
    words = [(0, 2), (3, 9), (10, 12), (13, 17)]
    matrix = np.zeros((len(words), len(BASE_FEATURES)), dtype=np.float32)
    matrix[:3, BASE_FEATURES.index("stem_in_context")] = 1.0  # "1998" is absent
    matrix[[0, 2], BASE_FEATURES.index("stop_word")] = 1.0
    absent = matrix.copy()
    absent[1, BASE_FEATURES.index("stem_in_context")] = 0.0  # "opened" absent too: a content word
    columns = [ItemColumns(words, matrix), ItemColumns(words, absent)]
    recipe = stacked_recipe(tmp_path, tmp_path / "run")
    recipe["data"]["extra"] = [{"dir": str(tmp_path / "begin")}]
    left_out = word_matrix(validate_recipe(recipe), [located, unlocated], columns, [located], columns[:1])
    assert left_out.y.tolist() == [0] * 8 and left_out.weight.tolist() == [1] * 4 + [0] * 4  # the head's only
    recipe["data"]["extra"][0]["unlocated_words"] = "absent"
    marked = word_matrix(validate_recipe(recipe), [located, unlocated], columns, [located], columns[:1])
    assert marked.y.tolist() == [0, 0, 0, 0, 0, 1, 0, 1] and marked.weight is None  # content words it lacks
    assert "unlocated_words" not in validate_recipe(stacked_recipe(tmp_path, tmp_path / "r")).model_dump()["data"]


def test_a_family_of_word_labels_only_leaves_unlocated_records_out(prepared, tmp_path):
    from ragtruth_spans.training.data import RecordStats
    from ragtruth_spans.training.skeleton import select_data

    extra = tmp_path / "extra"
    other = [dataclasses.replace(r, id=f"other-{r.id}", spans=[], unlocated=True)
             for r in synthetic_records(4, 5, "train")]
    write_records(extra / "train.jsonl", other)
    recipe = validate_recipe({**stacked_recipe(prepared, tmp_path / "run"),
                              "data": {"prepared_dir": str(prepared), "eval_split": "dev",
                                       "extra": [{"dir": str(extra)}]}})
    kept = select_data(recipe.data, RecordStats(), unlocated=True)
    assert sum(r.unlocated for r in kept.train) == 8
    stats = RecordStats()
    plain = select_data(recipe.data, stats)
    assert not any(r.unlocated for r in plain.train) and stats.unlocated_left_out == 8
    assert "less 8 unlocated" in plain.source


def test_a_members_scoring_shows_its_progress_in_a_log(prepared, tmp_path, caplog):
    """Off a terminal, a member's scores of the training and eval responses log how far they are, as the columns
    do (a member such as an NLI model may take minutes)."""
    with caplog.at_level("INFO", logger="ragtruth_spans.detectors.stacked"):  # its train and members modules
        train(validate_recipe(stacked_recipe(prepared, tmp_path / "run", [{"name": "numbers",
                                                                           "detector": "numbers"}])))
    lines = [r.getMessage() for r in caplog.records]
    for stage in ("member numbers (training)", "member numbers (eval)", "columns (training)"):
        assert any(line.startswith(f"stacked: {stage} ") and line.endswith(" responses") for line in lines), stage
