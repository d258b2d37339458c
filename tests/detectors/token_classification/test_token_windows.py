"""Windows: the pair layout of each tokenizer, context windows and response segments that cover everything
within max_length, and the aggregation of per-window probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import HALLUCINATION_TYPES
from ragtruth_spans.data.ragtruth import load_ragtruth
from ragtruth_spans.detectors.token_classification.labels import LABEL_SCHEMES
from ragtruth_spans.detectors.token_classification.windows import (
    Layout,
    WindowSettings,
    aggregate,
    context_chunks,
    plan_windows,
    response_segments,
)


@pytest.fixture(scope="module")
def tiny_bert_tokenizer():
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    return train_bert_tokenizer(["The council approved a new park in May. " * 5], vocab_size=300)


@pytest.mark.parametrize("name", ["minilm_tokenizer", "tiny_bert_tokenizer"])
def test_layout_reproduces_the_tokenizers_pair_encoding(name, request):
    tokenizer = request.getfixturevalue(name)
    context, response = "The council approved a new park.", "A park was approved in June."
    layout = Layout.of(tokenizer)
    ids, types = layout.assemble(tokenizer(context, add_special_tokens=False)["input_ids"],
                                 tokenizer(response, add_special_tokens=False)["input_ids"])
    reference = tokenizer(context, response)
    assert ids == reference["input_ids"] and types == reference["token_type_ids"]


def test_layout_of_a_decoder_puts_a_text_separator_between_context_and_response(llama3_tokenizer):
    layout = Layout.of(llama3_tokenizer)
    assert layout.start == (llama3_tokenizer.bos_token_id,) and layout.end == () and layout.types is None
    assert llama3_tokenizer.decode(list(layout.sep)) == "\n\n"


def test_context_chunks_end_at_sentences_and_cover_everything():
    ends = [4, 9, 15, 18, 30]
    assert context_chunks(30, 10, ends) == [(0, 9), (9, 18), (18, 28), (28, 30)]
    assert context_chunks(30, 10, ends, overlap=3) == [(0, 9), (6, 15), (12, 18), (15, 25), (22, 30)]
    assert context_chunks(0, 10, []) == [(0, 0)]
    assert context_chunks(5, 10, [5]) == [(0, 5)]


def test_response_segments_overlap_and_cover():
    assert response_segments(10, 20, 4) == [(0, 10)]
    assert response_segments(25, 10, 4) == [(0, 10), (6, 16), (12, 22), (18, 25)]
    with pytest.raises(InputError, match="response_overlap"):
        response_segments(25, 10, 10)


def _check_windows(planned, n_context_tokens: int, max_length: int) -> None:
    covered_context: set[int] = set()
    covered_response: set[int] = set()
    for window in planned.windows:
        assert len(window.input_ids) <= max_length
        covered_response.update(range(window.first, window.first + window.count))
        covered_context.update(range(*window.context))
    assert covered_response == set(range(len(planned.offsets)))  # every response token is in some window
    return covered_context


def test_windows_on_real_records_fit_and_cover_the_context(shared_sample_dir, minilm_tokenizer):
    layout = Layout.of(minilm_tokenizer)
    settings = WindowSettings(max_length=256, min_context_tokens=64, response_overlap=16)
    records = load_ragtruth(shared_sample_dir, keep_quality=None)
    several = 0
    for record in records:
        planned = plan_windows(minilm_tokenizer, layout, settings, context=record.context, response=record.response,
                               question=record.question)
        covered = _check_windows(planned, 0, 256)
        ctx = minilm_tokenizer(record.context, add_special_tokens=False, return_offsets_mapping=True)
        for start, end in ctx["offset_mapping"]:  # no context token is left out of every window
            assert start in covered or start == end
        several += len(planned.windows) > 1
        for window in planned.windows:  # the response tokens sit where the window says
            resp = minilm_tokenizer(record.response, add_special_tokens=False)["input_ids"]
            assert window.input_ids[window.response_start:window.response_start + window.count] == \
                resp[window.first:window.first + window.count]
    assert several > len(records) // 2


def test_a_long_response_is_slid_over_in_segments(minilm_tokenizer):
    layout = Layout.of(minilm_tokenizer)
    response = " ".join(f"Claim number {i} is stated here." for i in range(60))
    context = "Some evidence sentence. " * 80
    settings = WindowSettings(max_length=128, min_context_tokens=32, response_overlap=8)
    planned = plan_windows(minilm_tokenizer, layout, settings, context=context, response=response,
                           question="Which claims?")
    assert planned.segments > 5 and len(planned.windows) > planned.segments
    _check_windows(planned, 0, 128)
    with pytest.raises(InputError, match="max_length"):
        plan_windows(minilm_tokenizer, layout, WindowSettings(max_length=36, min_context_tokens=32),
                     context=context, response=response, question="Which claims?")


def test_best_window_is_the_one_sharing_most_tokens(minilm_tokenizer):
    layout = Layout.of(minilm_tokenizer)
    context = "Filler text about nothing at all. " * 30 + "The bridge opened in 1932 in Sydney. " + \
        "More filler text about nothing. " * 30
    planned = plan_windows(minilm_tokenizer, layout, WindowSettings(max_length=96, min_context_tokens=32),
                           context=context, response="The Sydney bridge opened in 1932.")
    [best] = planned.best_window()
    assert "1932" in context[best.context[0]:best.context[1]] and len(planned.windows) > 3


def test_aggregations():
    binary = LABEL_SCHEMES["binary"]
    pieces = [(0, np.array([[0.9, 0.1], [0.2, 0.8]])), (1, np.array([[0.6, 0.4], [0.7, 0.3]]))]
    assert np.allclose(aggregate(3, pieces, "mean", binary)[:, 1], [0.1, 0.6, 0.3])
    assert np.allclose(aggregate(3, pieces, "max", binary)[:, 1], [0.1, 0.8, 0.3])
    assert np.allclose(aggregate(3, pieces, "min", binary)[:, 1], [0.1, 0.4, 0.3])
    assert np.allclose(aggregate(3, pieces, "best", binary, relevance=[1, 5])[:, 1], [0.1, 0.4, 0.3])
    assert np.allclose(aggregate(3, pieces, "best", binary, relevance=[5, 1])[:, 1], [0.1, 0.8, 0.3])
    with pytest.raises(ValueError, match="no window"):
        aggregate(4, pieces, "mean", binary)
    with pytest.raises(InputError, match="typed"):
        aggregate(3, pieces, "by-type", binary)


def test_by_type_aggregation_keeps_conflicts_seen_anywhere_and_clears_supported_baseless_info():
    typed = LABEL_SCHEMES["typed"]
    conflict, baseless = HALLUCINATION_TYPES.index("Evident Conflict") + 1, HALLUCINATION_TYPES.index(
        "Evident Baseless Info") + 1
    seen_conflict = np.zeros((1, 5))
    seen_conflict[0, [0, conflict]] = [0.2, 0.8]
    no_evidence = np.zeros((1, 5))
    no_evidence[0, [0, baseless]] = [0.1, 0.9]
    supported = np.zeros((1, 5))
    supported[0, 0] = 1.0
    # token 0: a window with the evidence sees a conflict, the other finds nothing to support it (baseless).
    # token 1: one window supports it, the other has no evidence for it.
    out = aggregate(2, [(0, seen_conflict), (0, no_evidence), (1, supported), (1, no_evidence)], "by-type", typed)
    assert out[0, conflict] == pytest.approx(0.8) and out[0, baseless] == pytest.approx(0.0)
    assert out[1, 0] == pytest.approx(1.0)
    assert np.allclose(out.sum(axis=1), 1.0)
