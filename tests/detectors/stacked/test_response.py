"""The stacked detector's response level: head features, calibration, reliability table, and the decision's
gate and fill acting on the response score."""

from __future__ import annotations

import numpy as np
import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.base import DetectItem
from ragtruth_spans.detectors.stacked.columns import ColumnBuilder
from ragtruth_spans.detectors.stacked.combiner import Decision
from ragtruth_spans.detectors.stacked.response import (
    RESPONSE_FEATURES,
    Calibration,
    reliability,
    response_features,
)


def test_response_features_aggregate_word_probabilities_and_support():
    item = DetectItem(context="The hotel opened in 1999 in Leeds.", response="The hotel opened in 1998 in Paris.",
                      task="Summary")
    builder = ColumnBuilder()
    cols = builder.build([item])[0]
    p = np.array([0.0, 0.1, 0.1, 0.0, 0.9, 0.0, 0.6])
    row = dict(zip(RESPONSE_FEATURES, response_features(cols, p, builder.names, threshold=0.5, spans=2,
                                                         flagged_chars=9, response_chars=len(item.response),
                                                         task="Summary").tolist()))
    assert row["p_max"] == pytest.approx(0.9) and row["p_top3"] == pytest.approx((0.9 + 0.6 + 0.1) / 3)
    assert row["p_share_0.5"] == pytest.approx(2 / 7) and row["flagged_words"] == 2 and row["spans"] == 2
    assert row["span_char_share"] == pytest.approx(9 / len(item.response))
    assert row["unsupported_numbers"] == 1 and row["unsupported_names"] == 1  # 1998, Paris
    assert row["swap_one_side_count"] == 1 and row["swap_count"] == 0  # 1998 after "opened in"
    assert row["task_Summary"] == 1 and row["task_QA"] == 0
    assert row["contradicted_words"] == 1 and row["number_near_count"] == 1  # 1998: one digit from 1999


def test_the_soft_support_of_content_words_is_aggregated():
    item = DetectItem(context="The hotel opened in 1999.", response="The hotel opened by King Edward.", task="QA")
    builder = ColumnBuilder()
    cols = builder.build([item])[0]
    soft = np.array([0.9, 0.95, 0.9, 0.2, 0.1, 0.3])  # The (a stop word), hotel, opened, by, King, Edward
    cols.matrix[:, builder.names.index("soft_support")] = soft
    cols.matrix[:, builder.names.index("sentence_soft_support")] = 0.4
    row = dict(zip(RESPONSE_FEATURES, response_features(cols, np.zeros(6), builder.names, threshold=0.5, spans=0,
                                                         flagged_chars=0, response_chars=len(item.response),
                                                         task="QA").tolist()))
    content = [i for i, (a, b) in enumerate(cols.words) if item.response[a:b].lower() not in ("the", "by")]
    assert row["soft_min"] == pytest.approx(soft[content].min())
    assert row["soft_low_words"] == sum(soft[i] < 0.5 for i in content)
    assert row["soft_mean"] == pytest.approx(soft[content].mean(), abs=1e-6)
    assert row["sentence_soft_min"] == pytest.approx(0.4)


def test_a_response_without_words_has_only_its_task():
    cols = ColumnBuilder().build([DetectItem(context="x", response="...", task="QA")])[0]  # a blank one is refused
    row = response_features(cols, np.zeros(0), ColumnBuilder().names, threshold=0.5, spans=0, flagged_chars=0,
                            response_chars=0, task="QA")
    assert row.sum() == 1 and row[RESPONSE_FEATURES.index("task_QA")] == 1


def test_platt_calibration_keeps_the_order_and_fits_the_rate():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.3, 0.9, 4000)        # an over-confident model: the true rate is p - 0.2
    y = rng.uniform(size=p.size) < p - 0.2
    calibration = Calibration.fit(p, y)
    q = calibration(p)
    assert np.all(np.diff(q[np.argsort(p)]) >= 0)
    assert abs(q.mean() - y.mean()) < 0.01
    assert reliability(q, y)[1] < reliability(p, y)[1]
    assert Calibration.fit(p, np.zeros(p.size)) == Calibration()  # one class: identity
    with pytest.raises(InputError, match="a > 0"):
        Calibration.from_dict({"a": -1, "b": 0})
    with pytest.raises(InputError, match="numbers a and b"):
        Calibration.from_dict({"a": "x"})


def test_reliability_table_and_expected_calibration_error():
    scores = np.array([0.05, 0.05, 0.95, 0.95])
    table, ece = reliability(scores, np.array([0, 1, 1, 1]))
    assert [row["responses"] for row in table] == [2, 2]
    assert table[0]["hallucinated_share"] == 0.5 and table[1]["mean_score"] == 0.95
    assert ece == pytest.approx(0.5 * 0.45 + 0.5 * 0.05)


def test_the_gate_uses_the_response_score_and_the_fill_flags_the_strongest_words():
    words = [(0, 3), (4, 9), (10, 14)]
    probs = np.array([0.05, 0.3, 0.28])
    decision = Decision({"*": 0.5}, 0, response_threshold=0.6, fill=0.9)
    assert decision.spans(words, probs, "QA", score=0.5) == []                       # gate closed
    assert [(s.start, s.end) for s in decision.spans(words, probs, "QA", score=0.7)] == [(4, 14)]  # filled
    assert Decision({"*": 0.5}, 0, 0.6).spans(words, probs, "QA", score=0.7) == []   # no fill: nothing at 0.5
    assert Decision.from_dict(decision.to_dict()) == decision


def test_the_conflict_rule_flags_contradicted_words_whatever_the_gate_says():
    words = [(0, 3), (4, 9), (10, 14)]
    probs = np.array([0.05, 0.3, 0.04])
    contradicted = np.array([False, False, True])
    ruled = Decision({"*": 0.5}, 0, response_threshold=0.6, conflict_rule=True)
    spans = ruled.spans(words, probs, "QA", score=0.1, conflicts=contradicted)
    assert [(s.start, s.end, s.score) for s in spans] == [(10, 14, 0.5)]           # gate closed, rule flags it
    assert [(s.start, s.end) for s in ruled.spans(words, np.array([0.05, 0.9, 0.04]), "QA", score=0.9,
                                                  conflicts=contradicted)] == [(4, 14)]  # one run
    unruled = Decision({"*": 0.5}, 0, response_threshold=0.6)
    assert unruled.spans(words, probs, "QA", score=0.1, conflicts=contradicted) == []
    assert Decision.from_dict(ruled.to_dict()) == ruled
    with pytest.raises(InputError, match="conflict_rule"):
        Decision.from_dict({**ruled.to_dict(), "conflict_rule": "yes"})


def test_the_head_is_kept_only_when_it_ranks_better_than_the_top_word_probability():
    from ragtruth_spans.detectors.stacked.response import keep_head

    labels = [True, True, False, False]
    assert keep_head([0.9, 0.8, 0.2, 0.1], [0.5, 0.1, 0.6, 0.2], labels) == (True, None)
    kept, why = keep_head([0.4, 0.4, 0.4, 0.4], [0.9, 0.8, 0.2, 0.1], labels)   # a constant head (tiny data)
    assert not kept and why["auroc_head"] == 0.5 and why["auroc_word_max"] == 1.0
    assert keep_head([0.1, 0.2], [0.1, 0.2], [True, True])[0] is False


def test_a_head_trained_on_fewer_columns_reads_their_prefix_and_a_reordered_one_is_refused(tmp_path):
    import lightgbm as lgb

    from ragtruth_spans.detectors.stacked.response import HEAD_FILE, head_columns, load

    rng = np.random.default_rng(0)
    x, y = rng.random((60, 34)), np.r_[np.zeros(30), np.ones(30)]
    for names, ok in ((list(RESPONSE_FEATURES[:34]), True), (list(RESPONSE_FEATURES[1:35]), False)):
        booster = lgb.train({"objective": "binary", "verbose": -1, "min_data_in_leaf": 5},
                            lgb.Dataset(x, y, feature_name=names), num_boost_round=2)
        booster.save_model(str(tmp_path / HEAD_FILE))
        if ok:
            full = np.c_[x, np.full((60, len(RESPONSE_FEATURES) - 34), 7.0)]
            assert np.allclose(load(tmp_path).predict(head_columns(booster, full)), booster.predict(x))
        else:
            with pytest.raises(InputError, match="re-train the run"):
                load(tmp_path)
