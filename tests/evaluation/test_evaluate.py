"""The evaluator: hand-computed reports, properties, bootstrap, adaptive filters, bad input and the CLI."""

from __future__ import annotations

import json
import random

import pytest
from typer.testing import CliRunner

from ragtruth_spans.cli import app
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import write_jsonl, write_records
from ragtruth_spans.core.predictions import read_prediction_file
from ragtruth_spans.core.types import HALLUCINATION_TYPES, TASK_TYPES, Record, Span
from ragtruth_spans.data import ragtruth
from ragtruth_spans.evaluation import evaluate, load_gold

EC, SC, EBI, SBI = HALLUCINATION_TYPES


def read_predictions(path, gold_ids=None, **kwargs):
    return read_prediction_file(path, gold_ids, **kwargs).spans


def record(rid: str, response: str, spans: list[Span], task: str = "QA", model: str = "m1") -> Record:
    return Record(id=rid, source_id=f"s{rid}", task_type=task, model=model, split="test", quality="good",
                  response=response, context="ctx", spans=spans)


# r1 (QA, model A): "The cat sat on the mat."   gold "cat sat" [4,11) EC, "mat." [19,23) SBI implicit_true
# r2 (Summary, model B): clean
# r3 (Data2txt, model A): "free parking" [28,40) EBI due_to_null
GOLD = [
    record("r1", "The cat sat on the mat.", [Span(4, 11, EC), Span(19, 23, SBI, implicit_true=True)],
           task="QA", model="A"),
    record("r2", "Paris is the capital of France.", [], task="Summary", model="B"),
    record("r3", "Open daily from 9 to 5 with free parking.", [Span(28, 40, EBI, due_to_null=True)],
           task="Data2txt", model="A"),
]
PRED = {
    "r1": [Span(4, 14, EC, score=0.9), Span(19, 23, score=0.3)],  # "cat sat on", "mat."
    "r2": [Span(0, 5, SC, score=0.6)],                             # "Paris": a false alarm
    "r3": [],                                                       # misses "free parking"
}


def test_hand_computed_report():
    d = evaluate(GOLD, PRED).to_dict()
    # characters: r1 gold 7+4=11, pred 10+4=14, overlap 7+4=11; r2 gold 0, pred 5; r3 gold 12, pred 0
    # P = 11/19, R = 11/23, F1 = 2*11/(19+23) = 22/42
    assert d["overall"]["span"] == pytest.approx({"precision": 11 / 19, "recall": 11 / 23, "f1": 22 / 42})
    # responses: gold positive {r1, r3}, predicted positive {r1, r2}, both {r1} → P = R = F1 = 1/2
    assert d["overall"]["response"] == pytest.approx({"precision": 0.5, "recall": 0.5, "f1": 0.5})
    # type recall: EC 7/7, SBI 4/4 (covered by an untyped prediction), EBI 0/12, SC has no gold → None
    assert d["type_recall"] == {EC: 1.0, SC: None, EBI: 0.0, SBI: 1.0}
    # seqeval: gold entities "cat sat", "mat.", "free parking." ; predicted "cat sat on", "mat.", "Paris"
    # exact matches: "mat." → P = R = F1 = 1/3
    assert d["seqeval"] == pytest.approx({"precision": 1 / 3, "recall": 1 / 3, "f1": 1 / 3})
    # scores: r1 0.9 (max), r2 0.6, r3 0.0; positives {r1, r3} vs negative r2: 0.9 > 0.6 wins, 0.0 < 0.6 loses
    assert d["auroc"] == pytest.approx(0.5)
    assert d["overall"]["type_recall"] == d["type_recall"] and d["overall"]["auroc"] == d["auroc"]
    c = d["counts"]
    assert (c["responses"], c["gold_spans"], c["predicted_spans"], c["missing_predictions"]) == (3, 3, 3, 0)
    assert (c["gold_chars"], c["predicted_chars"], c["overlap_chars"]) == (23, 19, 11)
    assert (c["gold_positive_responses"], c["predicted_positive_responses"]) == (2, 2)
    assert (c["gold_entities"], c["predicted_entities"], c["matched_entities"]) == (3, 3, 1)
    assert c["type_gold_chars"] == {EC: 7, SC: 0, EBI: 12, SBI: 4}
    assert "ci" not in d
    json.dumps(d)  # JSON-ready


def test_by_task_and_by_model():
    d = evaluate(GOLD, PRED).to_dict()
    assert list(d["by_task"]) == ["QA", "Summary", "Data2txt"]
    qa = d["by_task"]["QA"]  # r1 alone: overlap 11, pred 14, gold 11 → P = 11/14, R = 1, F1 = 22/25
    assert qa["responses"] == 1
    assert qa["span"] == pytest.approx({"precision": 11 / 14, "recall": 1.0, "f1": 22 / 25})
    assert qa["response"] == pytest.approx({"precision": 1.0, "recall": 1.0, "f1": 1.0})
    assert qa["auroc"] is None  # one class only
    summary = d["by_task"]["Summary"]  # r2: 5 predicted chars, no gold → P = 0, R = 0 (no gold), F1 = 0
    assert summary["span"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert summary["type_recall"] == {EC: None, SC: None, EBI: None, SBI: None}
    model_a = d["by_model"]["A"]  # r1 + r3: overlap 11, pred 14, gold 23 → P = 11/14, R = 11/23, F1 = 22/37
    assert model_a["responses"] == 2
    assert model_a["span"] == pytest.approx({"precision": 11 / 14, "recall": 11 / 23, "f1": 22 / 37})
    # responses: gold positive 2, predicted positive 1 (r1), both 1 → P = 1, R = 1/2, F1 = 2/3
    assert model_a["response"] == pytest.approx({"precision": 1.0, "recall": 0.5, "f1": 2 / 3})
    assert model_a["type_recall"][EBI] == 0.0
    assert sorted(d["by_model"]) == ["A", "B"]


def test_adaptive_filters_drop_and_count_gold_spans():
    d = evaluate(GOLD, PRED, ignore_implicit_true=True).to_dict()
    # "mat." leaves the gold: gold 7 + 12 = 19, overlap 7, pred 19 → P = R = F1 = 7/19
    assert d["overall"]["span"] == pytest.approx({"precision": 7 / 19, "recall": 7 / 19, "f1": 7 / 19})
    assert d["counts"]["dropped_implicit_true"] == 1 and d["counts"]["dropped_due_to_null"] == 0
    assert (d["counts"]["gold_spans"], d["counts"]["gold_spans_before_filters"]) == (2, 3)
    assert d["type_recall"][SBI] is None

    d = evaluate(GOLD, PRED, ignore_implicit_true=True, ignore_due_to_null=True).to_dict()
    # only "cat sat" remains; r3 becomes clean: gold positive {r1}, predicted positive {r1, r2}
    assert d["overall"]["response"] == pytest.approx({"precision": 0.5, "recall": 1.0, "f1": 2 / 3})
    assert d["overall"]["span"]["recall"] == pytest.approx(1.0)
    assert (d["counts"]["dropped_gold_spans"], d["counts"]["dropped_due_to_null"]) == (2, 1)
    assert d["settings"]["ignore_due_to_null"] is True


def random_data(seed: int, n: int = 120) -> list[Record]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        words = [rng.choice(["alpha", "beta", "gamma", "déjà", "vu", "x"]) for _ in range(rng.randint(3, 40))]
        text = " ".join(words)
        spans = []
        for _ in range(rng.choice([0, 0, 1, 2, 3])):
            start = rng.randrange(len(text))
            spans.append(Span(start, rng.randint(start + 1, len(text)), rng.choice(HALLUCINATION_TYPES)))
        records.append(record(str(i), text, sorted(spans), task=TASK_TYPES[i % 3], model=f"m{i % 4}"))
    return records


def noisy_predictions(gold: list[Record], seed: int) -> dict[str, list[Span]]:
    rng = random.Random(seed)
    out = {}
    for r in gold:
        pred = [Span(max(0, s.start - rng.randint(0, 3)), s.end, score=rng.random()) for s in r.spans
                if rng.random() < 0.7]
        if rng.random() < 0.2:
            pred.append(Span(0, min(len(r.response), rng.randint(1, 9)), score=rng.random() / 2))
        out[r.id] = pred
    return out


def test_perfect_prediction_scores_one_everywhere():
    for seed in range(5):
        gold = random_data(seed)
        pred = {r.id: [Span(s.start, s.end, s.type, score=1.0) for s in r.spans] for r in gold}
        d = evaluate(gold, pred).to_dict()
        for level in ("span", "response", "seqeval"):
            assert d["overall"][level] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
        assert all(v == 1.0 for v in d["type_recall"].values() if v is not None)
        assert d["auroc"] == 1.0
        assert all(g["span"]["f1"] == 1.0 for g in d["by_task"].values())


def test_no_prediction_has_zero_recall():
    gold = random_data(1)
    d = evaluate(gold, {r.id: [] for r in gold}).to_dict()
    for level in ("span", "response", "seqeval"):
        assert d["overall"][level] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert all(v in (0.0, None) for v in d["type_recall"].values())
    assert d["auroc"] is None and any("no scores" in n for n in d["notes"])


def test_invariant_to_span_order_and_duplicates_and_merges_overlaps():
    for seed in range(5):
        gold = random_data(seed)
        pred = noisy_predictions(gold, seed)
        rng = random.Random(seed)
        shuffled = {}
        for rid, spans in pred.items():
            doubled = list(spans) + [rng.choice(spans) for _ in range(2) if spans]
            rng.shuffle(doubled)
            shuffled[rid] = doubled
        a, b = evaluate(gold, shuffled).to_dict(), evaluate(gold, pred).to_dict()
        assert a["counts"]["predicted_spans"] > b["counts"]["predicted_spans"]
        for raw_count in ("predicted_spans", "scored_predicted_spans", "empty_predicted_spans"):  # spans, not chars
            a["counts"].pop(raw_count), b["counts"].pop(raw_count)
        assert a == b
    # two overlapping predicted spans score like their union
    split = {**PRED, "r1": [Span(4, 9, score=0.9), Span(6, 14, score=0.2), Span(19, 23, score=0.3)]}
    assert evaluate(GOLD, split).overall["span"] == evaluate(GOLD, PRED).overall["span"]


def test_bootstrap_is_seeded_and_contains_the_point_estimate():
    gold = random_data(7, n=300)
    pred = noisy_predictions(gold, 7)
    a = evaluate(gold, pred, bootstrap=300, seed=3).to_dict()
    b = evaluate(gold, pred, bootstrap=300, seed=3).to_dict()
    c = evaluate(gold, pred, bootstrap=300, seed=4).to_dict()
    assert a["ci"] == b["ci"] and a["ci"] != c["ci"]
    assert (a["ci"]["level"], a["ci"]["resamples"], a["ci"]["seed"]) == (0.95, 300, 3)
    for level in ("span", "response", "seqeval"):
        for metric in ("precision", "recall", "f1"):
            lo, hi = a["ci"]["overall"][level][metric]
            assert lo <= a["overall"][level][metric] <= hi and lo < hi
    for span_type, interval in a["ci"]["overall"]["type_recall"].items():
        assert interval[0] <= a["type_recall"][span_type] <= interval[1]
    for task, group in a["by_task"].items():
        lo, hi = a["ci"]["by_task"][task]["span"]["f1"]
        assert lo <= group["span"]["f1"] <= hi
    assert set(a["ci"]["by_model"]) == set(a["by_model"])
    # the point estimates do not depend on the bootstrap
    assert {k: v for k, v in a.items() if k not in ("ci", "settings")} == \
        {k: v for k, v in evaluate(gold, pred).to_dict().items() if k not in ("ci", "settings")}


def test_auroc_interval_resamples_the_responses_as_sklearn_scores_them():
    import numpy as np
    from sklearn.metrics import roc_auc_score

    from ragtruth_spans.evaluation.bootstrap import bootstrap_auroc, resample_weights

    rng = np.random.default_rng(1)
    labels = rng.random(120) < 0.4
    scores = np.round(rng.random(120) + 0.5 * labels, 1)  # rounded: many ties, which count half
    scores[5] = np.nan  # drawn, not scored
    samples = bootstrap_auroc(labels, scores, 40, seed=3)
    for sample, weights in zip(samples, np.vstack(list(resample_weights(120, 40, 3)))):
        drawn = np.repeat(np.arange(120), weights.astype(int))
        drawn = drawn[~np.isnan(scores[drawn])]
        assert sample == pytest.approx(roc_auc_score(labels[drawn], scores[drawn]), abs=1e-12)
    assert np.isnan(bootstrap_auroc(np.ones(4, dtype=bool), np.arange(4.0), 3, seed=0)).all()  # one class


def test_evaluate_gives_an_auroc_interval_with_response_scores_only():
    gold = random_data(7, n=300)
    pred = noisy_predictions(gold, 7)
    scores = {r.id: random.Random(r.id).random() * 0.6 + (0.4 if r.spans else 0.0) for r in gold}
    a = evaluate(gold, pred, bootstrap=300, seed=3, response_scores=scores).to_dict()
    lo, hi = a["ci"]["overall"]["auroc"]
    assert lo <= a["auroc"] <= hi and lo < hi
    assert a["ci"] == evaluate(gold, pred, bootstrap=300, seed=3, response_scores=scores).to_dict()["ci"]
    assert evaluate(gold, {r.id: [] for r in gold}, bootstrap=50).to_dict()["ci"]["overall"]["auroc"] is None


def test_missing_predictions_error_or_counted():
    pred = {"r1": PRED["r1"], "r2": PRED["r2"]}
    with pytest.raises(InputError, match=r"1 gold response\(s\) have no prediction, e.g. id 'r3'.*--allow-missing"):
        evaluate(GOLD, pred)
    d = evaluate(GOLD, pred, allow_missing=True).to_dict()
    assert d["counts"]["missing_predictions"] == 1
    assert d["overall"] == evaluate(GOLD, PRED).to_dict()["overall"]  # r3 predicted nothing anyway
    assert any("r3" in note for note in d["notes"])


def test_evaluate_rejects_unknown_ids_out_of_range_spans_and_duplicate_gold():
    with pytest.raises(InputError, match=r"not in the gold data, e.g. 'zz'"):
        evaluate(GOLD, {**PRED, "zz": []})
    with pytest.raises(InputError, match=r"id 'r2': predicted span \[0, 99\) is out of range .* 31 characters"):
        evaluate(GOLD, {**PRED, "r2": [Span(0, 99)]})
    with pytest.raises(InputError, match=r"duplicate gold id 'r1'"):
        evaluate(GOLD + [GOLD[0]], PRED)
    with pytest.raises(InputError, match="no gold records"):
        evaluate([], {})


def test_auroc_needs_scores_on_every_span():
    unscored = {**PRED, "r2": [Span(0, 5)]}
    d = evaluate(GOLD, unscored).to_dict()
    assert d["auroc"] is None and any("1 of 3 predicted spans have no score" in n for n in d["notes"])


# --- predictions file --------------------------------------------------------------------------------

LENGTHS = {r.id: len(r.response) for r in GOLD}


def write_lines(path, lines: list[str]):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_read_predictions_parses_and_ignores_extra_keys(tmp_path):
    path = write_lines(tmp_path / "pred.jsonl", [
        json.dumps({"id": "r1", "spans": [{"start": 4, "end": 11, "type": EC, "score": 0.8, "text": "cat sat"}],
                    "raw": "[...]", "parse_ok": True}),
        "",
        json.dumps({"id": "r2", "spans": []}),
    ])
    assert read_predictions(path, response_lengths=LENGTHS) == {"r1": [Span(4, 11, EC, score=0.8)], "r2": []}
    assert read_predictions(path) == read_predictions(path, gold_ids=["r1", "r2"])


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "r1", "spans": [', r"pred.jsonl:2: invalid JSON"),
    ('["r1"]', r"pred.jsonl:2: expected a JSON object"),
    ('{"spans": []}', r"pred.jsonl:2, field 'id': missing required field"),
    ('{"id": "r1"}', r"pred.jsonl:2, field 'spans': id 'r1': missing required field"),
    ('{"id": "r1", "spans": {"start": 1}}', r"field 'spans': id 'r1': must be a list"),
    ('{"id": "r1", "spans": [{"end": 3}]}', r"field 'spans\[0\].start': id 'r1': missing required field"),
    ('{"id": "r1", "spans": [{"start": 1.5, "end": 3}]}', r"field 'spans\[0\].start': id 'r1': must be an integer"),
    ('{"id": "r1", "spans": [{"start": 0, "end": 2}, {"start": 5, "end": 3}]}',
     r"field 'spans\[1\]': id 'r1': span \[5, 3\) is not a valid half-open interval"),
    ('{"id": "r1", "spans": [{"start": 0, "end": 24}]}',
     r"pred.jsonl:2, field 'spans\[0\]': id 'r1': span \[0, 24\) is out of range for a response of 23 characters"),
    ('{"id": "r1", "spans": [{"start": 0, "end": 2, "score": "high"}]}',
     r"field 'spans\[0\].score': id 'r1': must be a finite number in \[0, 1\]"),
    ('{"id": "r1", "spans": [{"start": 0, "end": 2, "score": 7.5}]}',
     r"spans\[0\].score': id 'r1': must be in \[0, 1\]"),
    ('{"id": "r1", "spans": [], "score": -3}', r"field 'score': id 'r1': the response score: must be in \[0, 1\]"),
    ('{"id": "r1", "spans": [], "score": 42}', r"field 'score': .*must be in \[0, 1\], got 42"),
    ('{"id": "r1", "spans": [], "score": 1' + "0" * 400 + '}', r"field 'score': .*an integer of 401 digits"),
    ('{"id": "r1", "spans": [], "score": ' + "9" * 5000 + '}', r"pred.jsonl:2: invalid JSON: Exceeds the limit"),
    ('{"id": "r1", "spans": ' + "[" * 5000 + "]" * 5000 + '}', r"pred.jsonl:2: invalid JSON: nested too deeply"),
    ('{"id": "r1", "spans": [], "score": NaN}', r"pred.jsonl:2: invalid JSON: NaN is not JSON"),
    ('{"id": true, "spans": []}', r"field 'id': must be a string or an integer, got a boolean"),
    ('{"id": "r\\ud800", "spans": []}', r"field 'id': not valid Unicode text: a lone surrogate U\+D800"),
    ('{"id": "r1", "spans": [{"start": 0, "end": 2, "type": 3}]}', r"'type' must be a string"),
    ('{"id": "nope", "spans": []}', r"pred.jsonl:2, field 'id': unknown id 'nope'"),
    ('{"id": "r2", "spans": []}', r"pred.jsonl:2, field 'id': duplicate prediction for id 'r2' \(first on line 1\)"),
    ('{"id": null, "spans": []}', r"field 'id': must be a string"),
])
def test_read_predictions_errors_name_file_line_and_id(tmp_path, line, message):
    path = write_lines(tmp_path / "pred.jsonl", ['{"id": "r2", "spans": []}', line])
    with pytest.raises(InputError, match=message):
        read_predictions(path, response_lengths=LENGTHS)


def test_read_predictions_missing_file(tmp_path):
    with pytest.raises(InputError, match="file not found"):
        read_predictions(tmp_path / "absent.jsonl")


# --- gold and CLI ---------------------------------------------------------------------------------------

@pytest.fixture()
def files(tmp_path):
    gold = tmp_path / "test.jsonl"
    write_records(gold, GOLD)
    pred = tmp_path / "pred.jsonl"
    write_jsonl(pred, ({"id": rid, "spans": [s.to_dict() for s in spans]} for rid, spans in PRED.items()))
    return gold, pred


def squash(text: str) -> str:
    return "".join(text.split())


def test_cli_evaluate_writes_json_report(files, tmp_path):
    gold, pred = files
    out = tmp_path / "report" / "report.json"
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred), "--json", str(out),
                                      "--bootstrap", "50", "--seed", "1"])
    assert result.exit_code == 0, result.output
    for text in ("Overall", "By task", "Data2txt", "By generating model", "Subtle Baseless Info", "Counts"):
        assert text in result.output
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["overall"]["span"]["f1"] == pytest.approx(22 / 42)
    assert set(d["overall"]["response"]) == {"precision", "recall", "f1"}
    assert set(d["by_task"]) == {"QA", "Summary", "Data2txt"} and set(d["by_model"]) == {"A", "B"}
    assert set(d["by_task"]["QA"]) >= {"span", "response", "type_recall", "seqeval", "auroc", "responses"}
    assert set(d["type_recall"]) == set(HALLUCINATION_TYPES)
    assert {"responses", "gold_spans", "predicted_spans", "missing_predictions", "dropped_gold_spans"} <= \
        set(d["counts"])
    assert set(d) >= {"seqeval", "auroc", "ci", "settings"}
    assert d["ci"]["resamples"] == 50 and d["settings"]["gold"]["format"] == "prepared split file"
    lo, hi = d["ci"]["overall"]["auroc"]  # the spans' scores rank the responses: AUROC has its interval too
    assert lo <= d["auroc"] <= hi and squash(f"[{lo:.3f},{hi:.3f}]") in squash(result.output)


def test_cli_flags_and_clean_errors(files, tmp_path):
    gold, pred = files
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred), "--json",
                                 str(tmp_path / "r.json"), "--ignore-implicit-true", "--ignore-due-to-null"])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r.json").read_text())["counts"]["dropped_gold_spans"] == 2

    partial = write_lines(tmp_path / "partial.jsonl", ['{"id": "r1", "spans": []}'])
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(partial)])
    assert result.exit_code == 2 and "partial.jsonl:2goldresponse(s)havenoprediction" in squash(result.output)
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(partial), "--allow-missing"])
    assert result.exit_code == 0 and "missing predictions" in result.output

    unknown = write_lines(tmp_path / "unknown.jsonl", ['{"id": "r1", "spans": []}', '{"id": "zz", "spans": []}'])
    result = runner.invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(unknown)])
    assert result.exit_code == 2
    assert "unknown.jsonl:2" in squash(result.output) and "unknownid'zz'" in squash(result.output)
    assert "Traceback" not in result.output

    result = runner.invoke(app, ["evaluate", "--gold", str(tmp_path), "--pred", str(pred)])
    assert result.exit_code == 2 and "response.jsonl" in result.output


def test_gold_from_a_raw_ragtruth_directory(shared_sample_dir, tmp_path):
    records, info = load_gold(shared_sample_dir)
    assert records and all(r.split == "test" and r.quality == "good" for r in records)
    assert info["format"] == "RAGTruth directory" and info["test_responses"] >= len(records)
    pred = tmp_path / "pred.jsonl"
    write_jsonl(pred, ({"id": r.id, "spans": [{"start": s.start, "end": s.end, "score": 1.0} for s in r.spans]}
                       for r in records))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(shared_sample_dir), "--pred", str(pred),
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    d = json.loads(out.read_text())
    assert d["overall"]["span"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert d["counts"]["responses"] == len(records) and set(d["by_task"]) == set(TASK_TYPES)


def test_gold_from_the_embedded_sample_with_adaptive_filters(tmp_path):
    sample = ragtruth.sample_data_dir()
    assert (sample / "response.jsonl").is_file(), "the embedded sample ships with the package"
    records, info = load_gold(sample)
    assert info["test_responses"] == len(records) + info["dropped_by_quality"]
    assert all(r.split == "test" and r.quality == "good" for r in records)
    perfect = {r.id: [Span(s.start, s.end, score=1.0) for s in r.spans] for r in records}
    n_implicit = sum(s.implicit_true for r in records for s in r.spans)
    n_null = sum(s.due_to_null for r in records for s in r.spans)
    d = evaluate(records, perfect, ignore_implicit_true=True, ignore_due_to_null=True).to_dict()
    assert (d["counts"]["dropped_implicit_true"], d["counts"]["dropped_due_to_null"]) == (n_implicit, n_null)
    assert d["counts"]["gold_spans"] + d["counts"]["dropped_gold_spans"] == sum(len(r.spans) for r in records)
    assert evaluate(records, perfect).to_dict()["overall"]["span"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}


def test_prepared_gold_with_duplicate_ids_is_rejected(tmp_path):
    path = tmp_path / "test.jsonl"
    write_records(path, [GOLD[0], GOLD[1], GOLD[0]])
    with pytest.raises(InputError, match=r"test.jsonl:3, field 'id': duplicate id 'r1' \(first on line 1\)"):
        load_gold(path)


def test_integer_prediction_ids_are_read_as_strings(tmp_path):
    path = write_lines(tmp_path / "pred.jsonl", ['{"id": 7, "spans": [{"start": 0, "end": 1}]}'])
    assert read_predictions(path, gold_ids={"7"}) == {"7": [Span(0, 1)]}


def test_package_level_evaluate_is_the_function() -> None:
    # A submodule named like the function would shadow it once imported (`ragtruth_spans.evaluate`).
    import ragtruth_spans
    import ragtruth_spans.evaluation

    assert callable(ragtruth_spans.evaluate) and ragtruth_spans.evaluate.__name__ == "evaluate"
    assert ragtruth_spans.Report.__name__ == "Report"


def test_cli_reports_detector_failures_and_counts_diagnostics_by_name(files, tmp_path):
    gold, _ = files
    pred = tmp_path / "pred_diag.jsonl"
    rows = []
    for i, (rid, spans) in enumerate(PRED.items()):
        row = {"id": rid, "spans": [s.to_dict() for s in spans], "parse_ok": i != 0, "unaligned": []}
        if i == 0:  # an unreadable output: no spans, but not a "clean" verdict
            row.update(spans=[], raw="[{\"text\": \"type\": ", too_long=False, error="no JSON array found")
        if i == 1:
            row["unaligned"] = ["a phrase the response does not contain"]
        rows.append(row)
    write_jsonl(pred, rows)
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred), "--json", str(out)],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    d = json.loads(out.read_text(encoding="utf-8"))
    assert d["settings"]["prediction_diagnostics"] == {"lines": len(PRED), "scored_lines": 0, "errors": 1,
                                                       "counters": {"parse_ok": 2, "too_long": 0, "unaligned": 1}}
    assert any(n.startswith(f"1 of {len(PRED)} prediction lines are detector failures") for n in d["notes"])
    assert any("parse_ok 2, unaligned 1" in n for n in d["notes"])
    assert "detectorfailures" in squash(result.output)  # the note is printed under the tables too


# --- AUROC from line-level response scores ----------------------------------------------------------------

RESPONSE_SCORES = {"r1": 0.7, "r2": 0.4, "r3": 0.4}


def test_auroc_from_response_scores_hand_computed():
    d = evaluate(GOLD, PRED, response_scores=RESPONSE_SCORES).to_dict()
    # positives {r1, r3} vs negative r2: r1 0.7 > 0.4 wins (1), r3 0.4 = 0.4 ties (1/2) → (1 + 0.5) / 2
    assert d["auroc"] == pytest.approx(0.75) and d["settings"]["auroc_scores"] == "response"
    assert d["overall"]["span"] == evaluate(GOLD, PRED).to_dict()["overall"]["span"]  # only AUROC changes
    # the span rule on the same predictions: r1 0.9, r2 0.6, r3 0.0 (no span) → 0.5
    assert evaluate(GOLD, PRED).to_dict()["settings"]["auroc_scores"] == "max-span"
    # response scores make AUROC available even where spans carry no score
    unscored = {rid: [Span(s.start, s.end, s.type) for s in spans] for rid, spans in PRED.items()}
    assert evaluate(GOLD, unscored, response_scores=RESPONSE_SCORES).overall["auroc"] == pytest.approx(0.75)
    assert evaluate(GOLD, unscored).to_dict()["settings"]["auroc_scores"] is None
    # a missing prediction (allow_missing) scores 0.0, like its missing spans: r3 0.0 < 0.4 loses → 0.5
    partial = evaluate(GOLD, {k: PRED[k] for k in ("r1", "r2")}, allow_missing=True,
                       response_scores={"r1": 0.7, "r2": 0.4})
    assert partial.overall["auroc"] == pytest.approx(0.5)


def test_response_scores_must_belong_to_predictions():
    with pytest.raises(InputError, match=r"1 response score\(s\) without a prediction.*'zz'"):
        evaluate(GOLD, PRED, response_scores={**RESPONSE_SCORES, "zz": 0.5})
    with pytest.raises(InputError, match="finite"):
        evaluate(GOLD, PRED, response_scores={**RESPONSE_SCORES, "r1": float("nan")})


def test_read_response_scores_of_the_lines_that_have_one(tmp_path):
    rows = [{"id": rid, "score": RESPONSE_SCORES[rid], "spans": [s.to_dict() for s in spans]}
            for rid, spans in PRED.items()]
    full = tmp_path / "full.jsonl"
    write_jsonl(full, rows)
    assert read_prediction_file(full).response_scores == RESPONSE_SCORES
    partial = tmp_path / "partial.jsonl"
    write_jsonl(partial, rows[:2] + [{**rows[2], "score": None}])  # e.g. a too-long response has score null
    assert read_prediction_file(partial).response_scores == {"r1": 0.7, "r2": 0.4}
    bad = write_lines(tmp_path / "bad.jsonl", ['{"id": "r1", "score": 0.5, "spans": []}',
                                               '{"id": "r2", "score": "high", "spans": []}'])
    with pytest.raises(InputError, match=r"bad.jsonl:2, field 'score': id 'r2': .*finite number"):
        read_prediction_file(bad)


def test_cli_evaluate_auroc_rule_response_scores_then_span_scores(files, tmp_path):
    """One rule: response scores when any line has one (over those lines, the rest counted in one note), else
    the max span score."""
    gold, _ = files
    rows = [{"id": rid, "score": RESPONSE_SCORES[rid], "spans": [s.to_dict() for s in spans]}
            for rid, spans in PRED.items()]
    unscored_lines = [{k: v for k, v in row.items() if k != "score"} for row in rows]
    # partial: r1 0.7 (hallucinated) vs r2 0.4 (clean) → 1.0; r3 is left out
    for name, lines, auroc, source, n_scored in (("scored", rows, 0.75, "response", 3),
                                                 ("partial", rows[:2] + [{**rows[2], "score": None}], 1.0,
                                                  "response", 2),
                                                 ("span-scores", unscored_lines, 0.5, "max-span", 3)):
        pred, out = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.json"
        write_jsonl(pred, lines)
        result = CliRunner().invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(pred), "--json", str(out)])
        assert result.exit_code == 0, result.output
        d = json.loads(out.read_text(encoding="utf-8"))
        assert d["auroc"] == pytest.approx(auroc) and d["settings"]["auroc_scores"] == source
        assert d["counts"]["auroc_responses"] == n_scored
        auroc_notes = [n for n in d["notes"] if n.startswith("auroc")]
        assert auroc_notes == ([] if name != "partial" else
                               ["auroc: over the 2 of 3 responses whose prediction line has a response score "
                                "(1 line(s) without one are left out)"])


def test_the_gold_file_given_as_predictions_is_refused(files, tmp_path):
    gold, _ = files
    result = CliRunner().invoke(app, ["evaluate", "--gold", str(gold), "--pred", str(gold)], terminal_width=300)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "field 'response': this line has the field(s) response, context, source_id, task_type, question of a " \
           "gold record" in result.output


@pytest.mark.slow
def test_errors_stay_on_one_line_when_piped(tmp_path):
    """A long path in an error is never wrapped when stderr is not a terminal (and COLUMNS is unset)."""
    import os
    import subprocess
    import sys

    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 8)
    deep.mkdir(parents=True)
    bad = deep / "gold.jsonl"
    bad.write_text('{"id": "x"}\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([sys.executable, "-m", "ragtruth_spans", "evaluate", "--gold", str(bad), "--pred",
                           str(bad)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {bad}:1, field 'source_id': missing required field"]
