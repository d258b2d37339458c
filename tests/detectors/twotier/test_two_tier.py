"""The two-tier claim detector: tier-1 rules, sentence labels from gold spans, and a tiny trained run end to end."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from conftest import make_record

from ragtruth_spans.detectors.twotier.checks import sentence_checks
from ragtruth_spans.detectors.twotier.tier1 import no_info_rule, tier1_report

CONTEXT = "Passage 1: The museum opens at 9 am. Entry costs 12 euros. Children under six enter free."


@pytest.mark.parametrize("sentence, rule", [
    ("Sure!", "greeting"), ("Certainly.", "greeting"), ("Thank you!", "greeting"),
    ("Would you like the opening hours too?", "question"),
    ("Unable to answer based on given passages.", "cannot-answer"),
    ("The passages do not provide the price of parking.", "cannot-answer"),
    ("Here's a summary of the article:", "meta-intro"),
    ("Based on the given passages, here are the steps to visit:", "meta-intro"),
    ("Ingredients:", "heading"),
    ("I hope this helps!", "closing"),
    ("The museum opens at 9 am.", None),
    ("Sure, the museum opens at 9 am.", None),
    ("Based on the given passages, entry costs 12 euros.", None),
])
def test_tier1_rules(sentence, rule):
    assert no_info_rule(sentence) == rule


def test_tier1_report_counts_filtered_sentences_that_hold_gold_spans():
    records = [make_record("r1", "QA", CONTEXT, "Sure! The museum opens at 8 am. Is that early?",
                           [("Is that early?", "Evident Baseless Info")], question="When does it open?")]
    report = tier1_report(records)
    assert report["sentences"] == 3 and report["filtered"] == 2 and report["filtered_with_gold_span"] == 1
    assert report["by_rule"]["question"]["error_examples"] == ["Is that early?"]
    assert report["by_rule"]["greeting"]["examples"] == ["Sure!"] and report["error_rate"] == 0.5


class HashingEncoder:
    """A deterministic bag-of-words embedding (no model), enough to rank premise units."""

    def encode(self, texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, int(hashlib.md5(word.strip(".,").encode()).hexdigest(), 16) % 64] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)

    encode_units = encode


def test_sentence_labels_and_premises():
    record = make_record("r1", "QA", CONTEXT, "Sure! Entry costs 15 euros. The museum opens at 9 am.",
                         [("15 euros", "Evident Conflict")], question="What does entry cost?")
    [checks] = sentence_checks([record], HashingEncoder(), top_k=1)
    assert [(c.text, c.rule, c.label) for c in checks] == [
        ("Sure!", "greeting", 0), ("Entry costs 15 euros.", None, 1), ("The museum opens at 9 am.", None, 0)]
    assert checks[0].premise is None and checks[1].premise == "Entry costs 12 euros."
    assert checks[2].premise == "Passage 1: The museum opens at 9 am."


def two_tier_records(split):
    rows = []
    for i, (price, hours) in enumerate([(12, 9), (15, 9), (12, 8), (20, 7)]):
        response = f"Sure! Entry costs {price} euros. The museum opens at {hours} am."
        spans = ([(f"{price} euros", "Evident Conflict")] if price != 12 else []) + (
            [(f"{hours} am", "Evident Conflict")] if hours != 9 else [])
        rows.append(make_record(f"{split}-{i}", "QA", CONTEXT, response, spans, question="Price and hours?",
                                split=split))
    return rows


@pytest.mark.slow
def test_a_tiny_two_tier_run_trains_tunes_loads_and_never_flags_tier1(tmp_path):
    """Builds a tiny random BERT, trains 4 steps and loads the real MiniLM retriever: ~15 s on 2 cores."""
    from ragtruth_spans.core.jsonl import write_records
    from ragtruth_spans.detectors.loader import load_detector
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    for split in ("train", "dev"):
        write_records(tmp_path / "data" / f"{split}.jsonl", two_tier_records(split))
    recipe = load_recipe("all-minilm-l6-v2/two-tier", [
        "model.name_or_path=tiny", "model.tiny.vocab_size=300", f"data.prepared_dir={tmp_path / 'data'}",
        "data.max_length=64", "training.max_steps=4", "training.per_device_batch_size=4", "training.eval_steps=2",
        "training.save_steps=2", "training.logging_steps=1", f"output_dir={tmp_path / 'run'}"])
    result = train(recipe)
    info = json.loads((tmp_path / "run" / "run_info.json").read_text())
    assert info["kind"] == "two-tier" and info["tuning"]["split"] == "dev" and len(info["tuning"]["grid"]) == 9
    assert info["data"]["counts"]["tier1_filtered"] == 4 and info["data"]["counts"]["unsupported_pairs"] == 4
    assert info["tier1"]["train"]["by_rule"]["greeting"]["filtered"] == 4 and result.stats.supported_pairs == 4
    assert info["trained_on"]["records"] == {"train": len(two_tier_records("train")),
                                             "eval": len(two_tier_records("dev"))}
    assert "trained_on.json" in info["files_sha256"]

    detector = load_detector(tmp_path / "run", threshold=0.0)  # flag every sentence tier 2 judges
    response = "Sure! Entry costs 30 euros. Would you like more?"
    detection = detector.detect(context=CONTEXT, response=response, task="QA", question="Price?")
    assert [response[s.start:s.end] for s in detection.spans] == ["Entry costs 30 euros."]
    assert detection.diagnostics == {"sentences": 3, "tier1_filtered": 2, "flagged_sentences": 1}
    assert detection.score == detection.spans[0].score
    assert detector.describe()["threshold_from"] == "option"
    strict = detector.with_thresholds({"threshold": 1.0 + 1e-9}, {"threshold_from": "test"})  # flags nothing
    assert strict.describe()["threshold"] > 1.0 and strict.describe()["threshold_from"] == "test"
    assert strict.detect(context=CONTEXT, response=response, task="QA", question="Price?").spans == []
    only_greeting = detector.detect(context=CONTEXT, response="Hello!", task="QA")
    assert only_greeting.spans == [] and only_greeting.score == 0.0


def test_supported_pairs_are_subsampled_per_unsupported_pair():
    from ragtruth_spans.detectors.twotier.train import PairStats, subsample_supported

    rows = [{"premise": "p", "sentence": str(i), "label": float(i % 5 == 0)} for i in range(20)]  # 4 of 20 unsupported
    stats = PairStats(unsupported_pairs=4, supported_pairs=16)
    kept = subsample_supported(rows, 2.0, seed=0, stats=stats)
    assert sum(r["label"] == 1.0 for r in kept) == 4 and sum(r["label"] == 0.0 for r in kept) == 8
    assert stats.supported_pairs == 8 and stats.supported_pairs_dropped == 8 and stats.examples == 12
    assert [r["sentence"] for r in kept] == [r["sentence"] for r in rows if r in kept]  # order kept
    assert kept == subsample_supported(rows, 2.0, seed=0, stats=PairStats(unsupported_pairs=4))
    assert subsample_supported(rows, None, seed=0, stats=PairStats()) is rows


def test_packing_is_refused_by_two_tier_recipes():
    from ragtruth_spans.core.errors import InputError
    from ragtruth_spans.detectors.recipes import load_recipe

    with pytest.raises(InputError, match="packing=true is not supported by two-tier"):
        load_recipe("all-minilm-l6-v2/two-tier", ["training.packing=true"])
