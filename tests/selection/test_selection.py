"""Best-of-N selection: strategies, tie-breaks, corpus evaluation, CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_jsonl, write_records
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.data import ragtruth
from ragtruth_spans.detectors.base import Detection, Detector
from ragtruth_spans.reporting.console import selection_table
from ragtruth_spans.selection import corpus
from ragtruth_spans.selection.select import Candidate, candidate_score, read_candidates, select_best

MODELS = ["model-a", "model-b", "model-c"]


def evaluate_selection(*args, **kwargs) -> dict:
    """The corpus selection report as its JSON payload (what `select --json` writes)."""
    return corpus.evaluate_selection(*args, **kwargs).to_dict()


def sp(start: int, end: int, score: float | None = None) -> Span:
    return Span(start, end, type="Evident Conflict", score=score)


def cand(response: str, *spans: Span, id: str | None = None) -> Candidate:
    return Candidate(response=response, spans=tuple(spans), id=id)


# --- select_best on hand-made candidates -----------------------------------------------------------------


def test_fewest_spans_picks_the_candidate_with_fewest_spans():
    cands = [cand("aaaa bbbb", sp(0, 4), sp(5, 9)), cand("cccc dddd", sp(0, 2)), cand("ee", sp(0, 1), sp(1, 2))]
    chosen = select_best(cands, strategy="fewest-spans")
    assert chosen.index == 1
    assert chosen.scores == [2.0, 1.0, 2.0]
    assert chosen.tied == [1] and chosen.tie_break is None and not chosen.tie_broken
    assert not chosen.fallback
    assert chosen.candidate.response == "cccc dddd"


def test_fewest_spans_ignores_empty_spans():
    assert candidate_score(cand("abc", Span(1, 1), sp(0, 1)), "fewest-spans") == 1.0


def test_no_spans_takes_a_clean_candidate_or_falls_back_and_flags_it():
    clean = select_best([cand("xx", sp(0, 1)), cand("yy")], strategy="no-spans")
    assert clean.index == 1 and not clean.fallback
    dirty = select_best([cand("xx", sp(0, 1), sp(1, 2)), cand("yy", sp(0, 1))], strategy="no-spans")
    assert dirty.index == 1 and dirty.fallback


def test_least_hallucinated_chars_uses_the_merged_share_of_the_response():
    # candidate 0: one span covering 50% of 10 chars; candidate 1: two overlapping spans covering 3 of 20 (15%)
    # (unmerged they would sum to 5 chars, 25%); candidate 2 has fewer spans but 80% hallucinated.
    cands = [cand("a" * 10, sp(0, 5)), cand("b" * 20, sp(0, 2), sp(0, 3)), cand("c" * 10, sp(0, 8))]
    chosen = select_best(cands, strategy="least-hallucinated-chars")
    assert chosen.scores == pytest.approx([0.5, 0.15, 0.8])
    assert chosen.index == 1
    assert candidate_score(cand(""), "least-hallucinated-chars") == 0.0


def test_max_confidence_prefers_the_least_confident_worst_span():
    cands = [cand("aaaa", sp(0, 1, 0.9)), cand("bbbb", sp(0, 1, 0.3), sp(2, 3, 0.6)), cand("cccc", sp(0, 1, 0.7))]
    chosen = select_best(cands, strategy="max-confidence")
    assert chosen.scores == [0.9, 0.6, 0.7] and chosen.index == 1
    # a candidate without spans scores 0 and wins
    assert select_best(cands + [cand("dd")], strategy="max-confidence").index == 3


def test_max_confidence_without_scores_is_an_error():
    with pytest.raises(InputError, match="needs span scores.*'b'.*\\[0, 1\\)"):
        select_best([cand("aa", sp(0, 1, 0.5), id="a"), cand("bb", sp(0, 1), id="b")], strategy="max-confidence")


def test_random_tie_break_is_seeded_and_deterministic():
    cands = [cand(f"response {i}") for i in range(6)]
    picks = [select_best(cands, seed=s).index for s in range(40)]
    assert picks == [select_best(cands, seed=s).index for s in range(40)]
    assert len(set(picks)) > 1  # the seed matters: the paper's uniform choice among ties
    chosen = select_best(cands, seed=3)
    assert chosen.tied == list(range(6)) and chosen.tie_break == "random" and chosen.tie_broken
    # an explicit generator is used (and advanced) instead of the seed
    rng_a, rng_b = random.Random(7), random.Random(7)
    assert [select_best(cands, rng=rng_a).index for _ in range(5)] == \
        [select_best(cands, rng=rng_b).index for _ in range(5)]


def test_documented_tie_breaks():
    cands = [cand("a longer answer", sp(0, 1)), cand("longest answer of all"), cand("short"), cand("tiny")]
    assert select_best(cands, tie_break="first").index == 1
    assert select_best(cands, tie_break="shortest").index == 3
    same_length = [cand("bb"), cand("aa")]
    assert select_best(same_length, tie_break="shortest").index == 0  # equal lengths: lowest index
    assert select_best(cands, tie_break="random", seed=0).index in {1, 2, 3}


def test_bad_arguments_are_clear_errors():
    with pytest.raises(InputError, match="unknown strategy 'best'.*fewest-spans"):
        select_best([cand("a")], strategy="best")
    with pytest.raises(InputError, match="unknown tie-break 'coin'"):
        select_best([cand("a")], tie_break="coin")
    with pytest.raises(InputError, match="at least one candidate"):
        select_best([])
    with pytest.raises(InputError, match="need a detector"):
        select_best(["no spans yet"])
    with pytest.raises(InputError, match="out of range"):
        select_best([cand("abc", sp(0, 4))])
    with pytest.raises(InputError, match=r"field 'candidates\[1\].response': must be a string"):
        select_best([{"response": "a", "spans": []}, {"spans": []}])


def test_mappings_with_span_dicts_are_accepted():
    chosen = select_best([{"response": "abc", "spans": [{"start": 0, "end": 2}], "id": "x"},
                          {"response": "def", "spans": []}])
    assert chosen.index == 1 and chosen.candidate.id == "1"
    assert chosen.to_dict()["candidates"][0]["spans"] == [{"start": 0, "end": 2}]


class KeywordDetector(Detector):
    """Flags every occurrence of a keyword; records the items it is asked about."""

    kind = "keyword"

    def __init__(self, keyword: str) -> None:
        self.keyword = keyword
        self.calls: list[dict] = []
        self.batches: list[int] = []

    def spans(self, response: str) -> list[Span]:
        spans, start = [], response.find(self.keyword)
        while start >= 0:
            spans.append(Span(start, start + len(self.keyword), type="Evident Baseless Info"))
            start = response.find(self.keyword, start + 1)
        return spans

    def detect_batch(self, items):
        self.batches.append(len(items))
        self.calls.extend({"context": i.context, "response": i.response, "task": i.task, "question": i.question}
                          for i in items)
        return [Detection(spans=self.spans(i.response)) for i in items]


def test_select_best_runs_the_detector_on_candidates_without_spans():
    detector = KeywordDetector("moon")
    chosen = select_best(["The moon is cheese, the moon is near.", "It opened in 1998.", "Visit the moon."],
                         detector=detector, context="It opened in 1998.", task="QA", question="When?")
    assert chosen.index == 1 and chosen.scores == [2.0, 0.0, 1.0]
    assert [len(c.spans) for c in chosen.candidates] == [2, 0, 1]
    assert chosen.candidates[0].spans[1] == Span(24, 28, type="Evident Baseless Info")
    assert len(detector.calls) == 3 and detector.calls[0]["task"] == "QA" and detector.calls[0]["question"] == "When?"
    # candidates that already carry spans are not re-detected
    select_best([cand("moon"), "moon"], detector=detector, context="c", task="Summary")
    assert len(detector.calls) == 4
    with pytest.raises(InputError, match="context and the task"):
        select_best(["moon"], detector=detector)


# --- corpus evaluation -------------------------------------------------------------------------------------


def make_records(gold: dict[str, dict[str, bool]]) -> list[Record]:
    """Records for ``{source_id: {model: hallucinated}}``; a hallucinated response gets one gold span."""
    records = []
    for source_id, by_model in gold.items():
        for model, hallucinated in by_model.items():
            response = f"Answer of {model} for source {source_id}."
            spans = [Span(0, 6, type="Evident Conflict", text=response[:6])] if hallucinated else []
            records.append(Record(id=f"{source_id}-{model}", source_id=source_id, task_type="QA", model=model,
                                  split="test", quality="good", response=response, context="ctx",
                                  question="q?", spans=spans))
    return records


def random_gold(n_sources: int, seed: int, p: float = 0.5) -> dict[str, dict[str, bool]]:
    rng = random.Random(seed)
    return {f"s{i:03d}": {m: rng.random() < p for m in MODELS} for i in range(n_sources)}


def gold_predictions(records: list[Record]) -> dict[str, list[Span]]:
    return {r.id: list(r.spans) for r in records}


def empty_predictions(records: list[Record]) -> dict[str, list[Span]]:
    return {r.id: [] for r in records}


def test_oracle_predictions_with_no_spans_reach_the_lowest_achievable_rate():
    records = make_records(random_gold(60, seed=1))
    report = evaluate_selection(records, gold_predictions(records), MODELS, "no-spans", seed=0, bootstrap=0)
    assert report["selected"]["hallucination_rate"] == report["oracle"]["hallucination_rate"]
    # the oracle is really lower than random and than every model here
    assert report["oracle"]["hallucination_rate"] < report["random"]["hallucination_rate"]
    assert all(report["oracle"]["hallucination_rate"] < v["hallucination_rate"] for v in report["by_model"].values())
    # fallbacks happen exactly where every candidate is hallucinated
    assert report["selected"]["fallbacks"] == report["oracle"]["hallucinated"]
    assert report["relative_reduction"] > 0


def test_empty_predictions_equal_random_selection():
    records = make_records(random_gold(60, seed=2))
    report = evaluate_selection(records, empty_predictions(records), MODELS, "fewest-spans", seed=5, bootstrap=0)
    # every source ties: the seeded tie-break is the seeded random pick
    assert report["selected"]["hallucination_rate"] == report["random"]["sampled_hallucination_rate"]
    assert report["selected"]["ties_broken"] == report["sources"]["used"] == 60
    # and over seeds it averages to the exact expected random rate
    rates = [evaluate_selection(records, empty_predictions(records), MODELS, seed=s, bootstrap=0)
             ["selected"]["hallucination_rate"] for s in range(200)]
    assert sum(rates) / len(rates) == pytest.approx(report["random"]["hallucination_rate"], abs=0.01)
    # with the "first" tie-break, empty predictions select the first model's answer
    first = evaluate_selection(records, empty_predictions(records), MODELS, seed=5, bootstrap=0, tie_break="first")
    assert first["selected"]["hallucination_rate"] == first["by_model"]["model-a"]["hallucination_rate"]
    assert first["selected"]["chosen_by_model"] == {"model-a": 60, "model-b": 0, "model-c": 0}


def test_rates_on_a_hand_computed_corpus():
    gold = {"s1": {"model-a": True, "model-b": False},
            "s2": {"model-a": True, "model-b": True},
            "s3": {"model-a": False, "model-b": True},
            "s4": {"model-a": False, "model-b": False}}
    records = make_records(gold)
    preds = gold_predictions(records)
    preds["s3-model-a"] = [Span(0, 3)]  # the detector is wrong on s3: it flags the clean answer of model-a...
    preds["s3-model-b"] = [Span(0, 1), Span(2, 3)]  # ...but flags model-b more, so model-a is still chosen
    report = evaluate_selection(records, preds, ["model-a", "model-b"], "fewest-spans", seed=0, bootstrap=0)
    assert report["by_model"]["model-a"]["hallucination_rate"] == 0.5
    assert report["by_model"]["model-b"]["hallucination_rate"] == 0.5
    assert report["random"]["hallucination_rate"] == pytest.approx((0.5 + 1 + 0.5 + 0) / 4)
    assert report["oracle"]["hallucination_rate"] == 0.25
    assert report["selected"]["hallucination_rate"] == 0.25  # s2 only
    assert report["relative_reduction"] == pytest.approx((0.5 - 0.25) / 0.5)
    assert report["selected"]["chosen_by_model"]["model-b"] == 1  # s1
    assert report["ci"] is None
    # least-hallucinated-chars: s3 model-a 3 chars vs model-b 2 chars (of equal-length responses) -> model-b
    chars = evaluate_selection(records, preds, ["model-a", "model-b"], "least-hallucinated-chars", bootstrap=0)
    assert chars["selected"]["hallucination_rate"] == 0.5


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    records = make_records(random_gold(80, seed=3))
    preds = gold_predictions(records)
    a = evaluate_selection(records, preds, MODELS, "fewest-spans", seed=1, bootstrap=300)
    b = evaluate_selection(records, preds, MODELS, "fewest-spans", seed=1, bootstrap=300)
    assert a == b
    ci = a["ci"]
    assert ci["level"] == 0.95 and ci["resamples"] == 300
    lo, hi = ci["selected"]
    assert lo <= a["selected"]["hallucination_rate"] <= hi and lo < hi
    lo, hi = ci["relative_reduction"]
    assert lo <= a["relative_reduction"] <= hi
    assert ci["random"][0] <= a["random"]["hallucination_rate"] <= ci["random"][1]


def test_sources_missing_a_model_response_or_prediction_are_skipped_and_counted():
    gold = random_gold(10, seed=4)
    del gold["s003"]["model-b"]
    del gold["s007"]["model-b"]
    del gold["s007"]["model-c"]
    records = make_records(gold)
    preds = gold_predictions(records)
    del preds["s005-model-a"]
    report = evaluate_selection(records, preds, MODELS, "no-spans", bootstrap=0)
    assert report["sources"] == {
        "total": 10, "used": 7, "skipped": 3,
        "skipped_reasons": {"missing prediction: model-a": 1, "missing response: model-b": 2,
                            "missing response: model-c": 1}}
    # the pair without model-c uses s003 only if model-b is not named: s007 still lacks model-b
    pair = evaluate_selection(records, preds, ["model-a", "model-c"], bootstrap=0)
    assert pair["sources"]["used"] == 8 and pair["sources"]["skipped"] == 2


def test_model_and_input_errors():
    records = make_records(random_gold(5, seed=5))
    preds = gold_predictions(records)
    with pytest.raises(InputError, match="not in the data: gpt-9; known models: model-a, model-b, model-c"):
        evaluate_selection(records, preds, ["model-a", "gpt-9"])
    with pytest.raises(InputError, match="at least two models"):
        evaluate_selection(records, preds, ["model-a"])
    with pytest.raises(InputError, match="named twice: model-a"):
        evaluate_selection(records, preds, ["model-a", "model-a"])
    with pytest.raises(InputError, match="no source has a response and a prediction.*missing prediction"):
        evaluate_selection(records, {}, MODELS)
    dup = records + [Record(id="extra", source_id="s000", task_type="QA", model="model-a", split="test",
                            quality="good", response="r", context="c")]
    with pytest.raises(InputError, match="source 's000' has two responses from 'model-a'"):
        evaluate_selection(dup, preds, MODELS)
    with pytest.raises(InputError, match="source 's00.*needs span scores"):  # gold spans carry no score
        evaluate_selection(records, preds, MODELS, "max-confidence")


def test_render_has_one_row_per_model_and_the_baselines():
    records = make_records(random_gold(30, seed=6))
    report = evaluate_selection(records, gold_predictions(records), MODELS, bootstrap=100)
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(selection_table(report))
    text = console.export_text()
    for label in MODELS + ["random selection (expected)", "selected by detector: fewest-spans", "oracle"]:
        assert label in text


def test_oracle_on_the_real_sample(shared_sample_dir: Path):
    records = ragtruth.load_ragtruth(shared_sample_dir)
    models = sorted({r.model for r in records})
    report = evaluate_selection(records, gold_predictions(records), models, "no-spans", bootstrap=200)
    assert report["sources"]["total"] == 24
    assert report["sources"]["used"] + report["sources"]["skipped"] == 24 and report["sources"]["skipped"] >= 1
    assert report["selected"]["hallucination_rate"] == report["oracle"]["hallucination_rate"]
    assert report["oracle"]["hallucination_rate"] <= report["random"]["hallucination_rate"]
    empty = evaluate_selection(records, empty_predictions(records), models, bootstrap=0)
    assert empty["selected"]["hallucination_rate"] == empty["random"]["sampled_hallucination_rate"]


# --- CLI ---------------------------------------------------------------------------------------------------


def flat(text: str) -> str:
    """CLI output with the console's line wrapping undone."""
    return " ".join(text.split())


@pytest.fixture()
def corpus_files(tmp_path: Path) -> tuple[Path, Path]:
    gold = random_gold(20, seed=7)
    del gold["s004"]["model-b"]
    records = make_records(gold)
    data, pred = tmp_path / "test.jsonl", tmp_path / "pred.jsonl"
    write_records(data, records)
    write_jsonl(pred, ({"id": r.id, "spans": [s.to_dict() for s in r.spans], "raw": "[]"} for r in records))
    return data, pred


def test_cli_corpus_mode_prints_the_table_and_writes_json(corpus_files, tmp_path: Path):
    data, pred = corpus_files
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["select", "--gold", str(data), "--pred", str(pred), "--models",
                                      "model-a,model-b,model-c", "--strategy", "no-spans", "--seed", "3",
                                      "--bootstrap", "50", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "oracle" in result.output and "model-b" in result.output
    report = json.loads(out.read_text())
    for key in ("strategy", "seed", "models", "relative_reduction", "ci"):
        assert key in report
    assert report["strategy"] == "no-spans" and report["seed"] == 3
    assert report["models"] == MODELS
    assert set(report["by_model"]) == set(MODELS)
    assert all("hallucination_rate" in v for v in report["by_model"].values())
    assert report["selected"]["hallucination_rate"] == report["oracle"]["hallucination_rate"]
    assert 0 <= report["random"]["hallucination_rate"] <= 1
    assert report["sources"]["used"] == 19 and report["sources"]["skipped"] == 1
    assert report["sources"]["skipped_reasons"] == {"missing response: model-b": 1}
    assert report["ci"]["resamples"] == 50


def test_cli_select_needs_its_options_and_known_models(corpus_files, tmp_path: Path):
    data, pred = corpus_files
    runner = CliRunner()
    partial = runner.invoke(app, ["select", "--gold", str(data), "--models", "model-a,model-b"])
    assert partial.exit_code == 2 and "--pred" in flat(partial.output)
    unknown = runner.invoke(app, ["select", "--gold", str(data), "--pred", str(pred), "--models", "model-a,gpt-9"])
    assert unknown.exit_code == 2 and "known models: model-a, model-b, model-c" in flat(unknown.output)


def test_read_candidates_names_file_line_and_field(tmp_path: Path):
    good = tmp_path / "c.jsonl"
    good.write_text('{"response": "one", "id": "x"}\n\n{"response": "two"}\n')
    assert read_candidates(good) == [Candidate("one", id="x"), Candidate("two", id="3")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": "one"}\n{"text": "two"}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:2, field 'response': missing"):
        read_candidates(bad)
    bad.write_text('{"response": 5}\n')
    with pytest.raises(InputError, match=r"bad.jsonl:1, field 'response': must be a string"):
        read_candidates(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match="no candidates"):
        read_candidates(empty)


def test_select_best_uses_detect_batch_once_when_available():
    detector = KeywordDetector("moon")
    chosen = select_best([cand("moon moon", sp(0, 4)), "a moon", "clean", "moon"], detector=detector,
                         context="ctx", task="Summary", tie_break="first")
    assert detector.batches == [3]  # only the three candidates without spans, in one call
    assert chosen.index == 2 and chosen.scores == [1.0, 1.0, 0.0, 1.0]
    assert [c["response"] for c in detector.calls] == ["a moon", "clean", "moon"]


class FlakyDetector(KeywordDetector):
    """It cannot judge responses containing "garbled" (no spans, ``error`` set)."""

    def detect_batch(self, items):
        results = super().detect_batch(items)
        for item, result in zip(items, results):
            if "garbled" in item.response:
                result.error = "unreadable output"
        return results


def test_candidates_whose_detection_failed_are_ranked_last():
    chosen = select_best(["garbled clean-looking", "one moon"], detector=FlakyDetector("moon"), context="c",
                         task="QA")
    assert chosen.index == 1 and chosen.detection_failed == [0]
    assert chosen.scores == [float("inf"), 1.0]
    assert chosen.to_dict()["scores"] == [None, 1.0]
    # all failed: nothing could be judged, so nothing is chosen (no index a gate could take for a pick)
    chosen = select_best(["garbled a", "garbled b"], detector=FlakyDetector("moon"), context="c", task="QA",
                         tie_break="first")
    assert chosen.no_judgement and chosen.index is None and chosen.tied == [] and chosen.detection_failed == [0, 1]


@pytest.fixture()
def online_files(tmp_path: Path) -> tuple[Path, Path]:
    context = tmp_path / "context.txt"
    context.write_text("The museum opened in 1998 and is free on Sundays.", encoding="utf-8")
    candidates = tmp_path / "candidates.jsonl"
    write_jsonl(candidates, [{"response": "It opened in 1998, near the moon.", "id": "a"},  # "moon" at [28, 32)
                             {"response": "It opened in 1998."},
                             {"response": "The moon museum opened on the moon.", "id": "c"}])
    return context, candidates


def test_cli_select_best_with_a_patched_detector(online_files, tmp_path: Path, monkeypatch):
    from ragtruth_spans.detectors import loader
    loaded = {}

    def fake_load_detector(path, **kwargs):
        loaded.update(path=path, **kwargs)
        return KeywordDetector("moon")

    monkeypatch.setattr(loader, "load_detector", fake_load_detector)
    context, candidates = online_files
    out = tmp_path / "sel.json"
    result = CliRunner().invoke(app, ["select-best", "--model", str(tmp_path), "--context", f"@{context}",
                                      "--candidates", str(candidates), "--question", "When did it open?",
                                      "--json", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert loaded["path"] == str(tmp_path)
    assert "Chosen: candidate 1 (id 2)" in result.output
    assert "[28, 32) Evident Baseless Info: 'moon'" in result.output
    selection = json.loads(out.read_text())
    assert selection["index"] == 1 and selection["scores"] == [1.0, 0.0, 2.0]
    assert [c["id"] for c in selection["candidates"]] == ["a", "2", "c"]
    # no --task and no --question: read as a summary (as ragtruth_spans.detect and detect --context do)
    result = CliRunner().invoke(app, ["select-best", "--model", str(tmp_path), "--context", f"@{context}",
                                      "--candidates", str(candidates)])
    assert result.exit_code == 0 and loaded["path"] == str(tmp_path)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": "ok"}\n{"answer": "x"}\n')
    result = CliRunner().invoke(app, ["select-best", "--model", str(tmp_path), "--context", f"@{context}",
                                      "--candidates", str(bad), "--task", "Summary"], terminal_width=200)
    assert result.exit_code == 2 and "bad.jsonl:2, field 'response'" in flat(result.output)


@pytest.mark.slow  # asks for overfit_run (a tiny Llama trained 100 steps) at run time
def test_cli_select_best_with_a_trained_tiny_detector(request, online_files, tmp_path: Path):
    try:
        run = request.getfixturevalue("overfit_run")
    except pytest.FixtureLookupError:
        pytest.skip("the overfit_run fixture (a trained tiny model) is not available")
    record = run.records[0]
    context = tmp_path / "context.txt"
    context.write_text(record.context, encoding="utf-8")
    candidates = tmp_path / "candidates.jsonl"
    responses = [r.response for r in run.records[:3]]
    write_jsonl(candidates, [{"response": r} for r in responses])
    out = tmp_path / "sel.json"
    args = ["select-best", "--model", str(run.output_dir), "--context", f"@{context}", "--candidates", str(candidates),
            "--task", record.task_type, "--device", "cpu", "--json", str(out)]
    if record.question:
        args += ["--question", record.question]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    selection = json.loads(out.read_text())
    assert 0 <= selection["index"] < len(responses)
    assert selection["response"] == responses[selection["index"]]
    for candidate, response in zip(selection["candidates"], responses):
        assert candidate["response"] == response
        assert all(0 <= s["start"] <= s["end"] <= len(response) for s in candidate["spans"])
    assert f"Chosen: candidate {selection['index']}" in result.output


def test_cli_corpus_mode_on_the_embedded_ragtruth_directory(tmp_path: Path):
    """--data may be a RAGTruth folder (its test split); the embedded sample has sources lacking some models."""
    import ragtruth_spans
    from ragtruth_spans.data.ragtruth import load_ragtruth

    sample = ragtruth_spans.sample_data_dir()
    records = load_ragtruth(sample, split="test")
    pred = tmp_path / "oracle.jsonl"
    write_jsonl(pred, ({"id": r.id, "spans": [s.to_dict() for s in r.spans]} for r in records))
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["select", "--gold", str(sample), "--pred", str(pred), "--models",
                                      "gpt-4-0613,llama-2-7b-chat,mistral-7B-instruct", "--strategy", "no-spans",
                                      "--bootstrap", "20", "--json", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    sources = report["sources"]
    assert sources["used"] >= 1 and sources["used"] + sources["skipped"] == sources["total"]
    assert sum(sources["skipped_reasons"].values()) >= sources["skipped"]
    assert report["selected"]["hallucination_rate"] == report["oracle"]["hallucination_rate"]


# --- max-confidence with response-level scores -------------------------------------------------------------


def test_max_confidence_uses_response_scores_when_every_candidate_has_one():
    cands = [Candidate("aaaa", (sp(0, 1, 0.9),), id="a", score=0.2), Candidate("bbbb", (), id="b", score=0.6),
             Candidate("cccc", (sp(0, 1, 0.3),), id="c", score=0.4)]
    chosen = select_best(cands, strategy="max-confidence")
    assert chosen.scores == [0.2, 0.6, 0.4] and chosen.index == 0
    assert chosen.to_dict()["candidates"][0]["score"] == 0.2
    # one candidate without a response score: the span rule for all (span max, 0 without spans)
    mixed = select_best(cands[:2] + [Candidate("cccc", (sp(0, 1, 0.3),), id="c")], strategy="max-confidence")
    assert mixed.scores == [0.9, 0.0, 0.3] and mixed.index == 1
    # other strategies ignore response scores
    assert select_best(cands, strategy="fewest-spans").index == 1
    with pytest.raises(InputError, match=r"field 'candidates\[0\].score': must be a finite number"):
        select_best([{"response": "x", "score": "high"}], strategy="max-confidence")


class ScoringDetector(KeywordDetector):
    """Results also carry a response score: the share of words that are the keyword."""

    def detect_batch(self, items):
        results = super().detect_batch(items)
        for item, result in zip(items, results):
            words = item.response.split()
            result.score = words.count(self.keyword) / len(words)
        return results


def test_max_confidence_takes_the_detector_response_score():
    chosen = select_best(["moon moon sun", "moon sun sun sun", "moon moon"], detector=ScoringDetector("moon"),
                         context="c", task="Summary", strategy="max-confidence")
    assert chosen.scores == pytest.approx([2 / 3, 1 / 4, 1.0]) and chosen.index == 1
    assert chosen.candidate.score == pytest.approx(1 / 4)


def test_evaluate_selection_max_confidence_with_response_scores():
    records = make_records(random_gold(40, seed=8))
    # gold spans carry no score (the span rule would fail); a perfect response score reaches the oracle
    scores = {r.id: 0.9 if r.spans else 0.1 for r in records}
    report = evaluate_selection(records, gold_predictions(records), MODELS, "max-confidence", bootstrap=0,
                                response_scores=scores)
    assert report["selected"]["hallucination_rate"] == report["oracle"]["hallucination_rate"]


def test_cli_max_confidence_uses_line_level_response_scores(tmp_path: Path):
    """With a response score on every prediction line, `max-confidence` picks the lowest score per source."""
    records, rows = [], []
    for src in range(4):
        for m, model in enumerate(("model-a", "model-b")):
            rid = f"{src}-{m}"
            records.append(Record(id=rid, source_id=str(src), task_type="QA", model=model, split="test",
                                  quality="good", response="some answer text", context="c", question="q",
                                  spans=[Span(0, 4, "Evident Conflict", "some")] if m == 0 else []))
            # model-b's answers get the lower hallucination score in every source but the last
            score = 0.2 if (m == 1) != (src == 3) else 0.9
            rows.append({"id": rid, "spans": [], "score": score})
    data, pred, out = tmp_path / "test.jsonl", tmp_path / "pred.jsonl", tmp_path / "r.json"
    write_records(data, records)
    write_jsonl(pred, rows)
    result = CliRunner().invoke(app, ["select", "--gold", str(data), "--pred", str(pred), "--models",
                                      "model-a,model-b", "--strategy", "max-confidence", "--bootstrap", "0",
                                      "--json", str(out)], terminal_width=200)
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["selected"]["chosen_by_model"] == {"model-a": 1, "model-b": 3}
    assert report["selected"]["hallucination_rate"] == pytest.approx(1 / 4)


def test_auto_ranks_by_response_scores_when_every_candidate_has_one_else_by_spans():
    from ragtruth_spans.cli.select import DEFAULT_STRATEGY as CLI_DEFAULT
    from ragtruth_spans.selection.select import DEFAULT_STRATEGY

    assert CLI_DEFAULT == DEFAULT_STRATEGY == "auto"
    scored = [Candidate("a b", spans=(), score=0.8), Candidate("c d", spans=(Span(0, 1, score=0.9),), score=0.1)]
    picked = select_best(scored)
    assert picked.index == 1 and picked.strategy == "max-confidence"   # the lower response score wins
    unscored = [Candidate("a b", spans=()), Candidate("c d", spans=(Span(0, 1),), score=0.1)]
    picked = select_best(unscored)
    assert picked.index == 0 and picked.strategy == "fewest-spans"      # one score missing: fewest spans
