"""The causal-LM support columns: two passes of a real (tiny, random) Llama, cached per record, cut contexts,
NaN past the response cut, and a stacked run that trains and reloads with them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_stacked_train import prepared, stacked_recipe, synthetic_records  # noqa: F401

from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.stacked.features import words
from ragtruth_spans.detectors.stacked.lm_gain import LM_FEATURES, LMScorer, TokenScores, cut_context, lm_columns
from ragtruth_spans.detectors.train import train
from ragtruth_spans.models.tiny import build_tiny_llama

TEXTS = ["The hotel in Leeds opened in 1999 and has 120 rooms.", "Context: Question: Response: a small garden."]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> str:
    return str(build_tiny_llama(tmp_path_factory.mktemp("tiny-lm") / "model", texts=TEXTS * 20, vocab_size=300))


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGTRUTH_SPANS_CACHE", str(tmp_path / "cache"))


def test_both_passes_score_every_response_token_and_are_cached(tiny_lm, tmp_path):
    item = DetectItem(context="The hotel in Leeds opened in 1999.", question="When did it open?",
                      response="It opened in 1999.", task="QA")
    scorer = LMScorer(tiny_lm)
    first = scorer.score(item)
    n = len(first.offsets)
    assert n > 0 and first.with_context.shape == first.without_context.shape == (n,)
    assert np.all(first.with_context <= 0) and np.all(first.without_context <= 0)  # log-probabilities
    assert not np.allclose(first.with_context, first.without_context)  # the context changes the prediction
    assert first.offsets[0, 0] >= 0 and first.offsets[-1, 1] == len(item.response)
    cached = list((tmp_path / "cache" / "lm_gain").rglob("*.npz"))
    assert len(cached) == 1
    again = LMScorer(tiny_lm).score(item)  # a new scorer reads the cache: the same numbers
    np.testing.assert_array_equal(again.gain, first.gain)
    other = LMScorer(tiny_lm, max_context_tokens=32).score(item)  # other settings: another cache folder
    assert len(list((tmp_path / "cache" / "lm_gain").rglob("*.npz"))) == 2
    assert other.offsets.shape == first.offsets.shape


def test_the_response_cut_leaves_later_words_missing(tiny_lm):
    item = DetectItem(context="The hotel has 120 rooms.", response="The hotel has 120 rooms and a garden.",
                      task="Summary")
    scores = LMScorer(tiny_lm, max_response_tokens=3, cache=False).score(item)
    assert len(scores.offsets) == 3
    columns = lm_columns(words(item.response), scores)
    assert columns.shape == (len(words(item.response)), len(LM_FEATURES))
    assert not np.isnan(columns[0, 0]) and np.isnan(columns[-1, 0])


def test_word_columns_aggregate_the_tokens_a_word_overlaps():
    scores = TokenScores(offsets=np.array([[0, 2], [2, 5], [6, 9]]), with_context=np.array([-1.0, -2.0, -0.5]),
                         without_context=np.array([-3.0, -2.5, -0.5]))
    columns = lm_columns([(0, 5), (6, 9)], scores)
    np.testing.assert_allclose(columns[0, :3], [(2.0 + 0.5) / 2, 0.5, -1.5])
    np.testing.assert_allclose(columns[1, :3], [0.0, 0.0, -0.5])
    np.testing.assert_allclose(columns[:, 3], [1.25 / 2, 1.25 / 2])


def test_a_long_context_keeps_the_relevant_sentences_in_order():
    context = "Paris is large. The hotel opened in 1999. Rome is old. It has 120 rooms. Lima is far."
    count = lambda text: len(text.split())  # noqa: E731
    cut = cut_context(context, "The hotel opened in 1999 with 120 rooms.", 11, count)
    assert cut == "The hotel opened in 1999.\nIt has 120 rooms."
    assert cut_context(context, "anything", 100, count) == context


def test_a_stacked_run_with_lm_columns_trains_and_reloads(prepared, tiny_lm, tmp_path):  # noqa: F811
    out = tmp_path / "run"
    recipe = stacked_recipe(prepared, out)
    recipe["features"]["lm"] = {"model": tiny_lm, "max_context_tokens": 64}
    train(validate_recipe(recipe))
    info = json.loads((out / "run_info.json").read_text())
    assert info["columns"][-len(LM_FEATURES):] == list(LM_FEATURES)
    assert set(LM_FEATURES) <= set(info["feature_gain"])
    detector = load_detector(out)
    test = synthetic_records(2, 2, "test")
    detections = detector.detect_batch(test)
    assert len(detections) == len(test) and all(0.0 <= d.score <= 1.0 for d in detections)


def test_skipped_items_get_missing_lm_columns_without_a_pass(tiny_lm, tmp_path):
    from ragtruth_spans.detectors.stacked.columns import ColumnBuilder

    builder = ColumnBuilder(lm=LMScorer(tiny_lm))
    items = [DetectItem(context="The hotel has 120 rooms.", response=f"It has {n} rooms.", task="QA")
             for n in (120, 130)]
    scored, skipped = builder.build(items, skip_lm=[False, True])
    at = builder.names.index("lm_gain")
    assert not np.isnan(scored.matrix[:, at]).any() and np.isnan(skipped.matrix[:, at]).all()
    assert len(list((tmp_path / "cache" / "lm_gain").rglob("*.npz"))) == 1  # the skipped item was never scored


def test_a_damaged_cache_file_is_scored_again_and_replaced(tiny_lm, tmp_path):
    item = DetectItem(context="The hotel has 120 rooms.", response="It has 120 rooms.", task="QA")
    first = LMScorer(tiny_lm).score(item)
    (cached,) = (tmp_path / "cache" / "lm_gain").rglob("*.npz")
    cached.write_bytes(b"not an npz")
    again = LMScorer(tiny_lm).score(item)
    np.testing.assert_allclose(again.gain, first.gain, rtol=1e-5)
    assert cached.read_bytes().startswith(b"PK")  # rewritten as a real npz
