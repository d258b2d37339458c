"""Character spans ↔ token labels: label schemes, edge rules, and round trips on real RAGTruth records with the
real all-MiniLM-L6-v2 (WordPiece) and Llama 3 (byte-level BPE) tokenizers."""

from __future__ import annotations

import numpy as np
import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import HALLUCINATION_TYPES, Span
from ragtruth_spans.data.ragtruth import load_ragtruth, sample_data_dir
from ragtruth_spans.detectors.token_classification.labels import (
    LABEL_SCHEMES,
    labels_to_spans,
    spans_from_probabilities,
    token_labels,
    trim_edges,
)
from ragtruth_spans.evaluation.metrics import char_counts


def _offsets(tokenizer, text: str) -> list[tuple[int, int]]:
    return [tuple(o) for o in tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]]


def test_token_labels_binary_and_typed(minilm_tokenizer):
    text = "The hotel opened in 1998 and has free parking."
    spans = [Span(10, 24, "Evident Conflict"), Span(33, 45, "Subtle Baseless Info")]
    offsets = _offsets(minilm_tokenizer, text)
    words = [text[a:b] for a, b in offsets]
    binary = token_labels(offsets, spans, "binary")
    typed = token_labels(offsets, spans, "typed")
    assert [w for w, label in zip(words, binary) if label] == ["opened", "in", "1998", "free", "parking"]
    names = LABEL_SCHEMES["typed"]
    assert [names[label] for label in typed if label] == ["Evident Conflict"] * 3 + ["Subtle Baseless Info"] * 2
    # A token cut by a span edge belongs to the span.
    assert token_labels(offsets, [Span(12, 13)], "binary")[words.index("opened")] == 1


@pytest.mark.parametrize(("span_type", "what"), [(None, "has no type"),
                                                  ("Conflict", "has the unknown type 'Conflict'")])
def test_typed_labels_refuse_a_gold_span_without_a_ragtruth_type(minilm_tokenizer, span_type, what):
    text = "The hotel opened in 1998 and has free parking."
    offsets = _offsets(minilm_tokenizer, text)
    spans = [Span(10, 24, "Evident Conflict"), Span(33, 45, span_type)]
    with pytest.raises(InputError, match=what) as caught:
        token_labels(offsets, spans, "typed", record_id="qa-7")
    assert caught.value.field == "spans[1].type" and "record 'qa-7'" in str(caught.value)
    assert "labels.scheme=typed" in str(caught.value)
    assert sum(token_labels(offsets, spans, "binary")) == 5  # the binary scheme ignores types


def test_trim_edge_rules():
    text = "It opens at 9:00, daily. Then"
    assert trim_edges(text, 2, 17, "tokens") == (2, 17)
    assert trim_edges(text, 2, 17, "trim-space") == (3, 17)
    assert trim_edges(text, 2, 17, "trim-punct") == (3, 16)
    assert trim_edges(text, 17, 24, "trim-punct") == (18, 23)  # the sentence's full stop goes, "9:00" keeps its ":"
    assert trim_edges(text, 4, 14, "words") == (3, 16)  # grown to whole words, then trimmed
    start, end = trim_edges(text, 16, 18, "trim-punct")  # ", ": nothing left
    assert end == start


def test_spans_from_probabilities_threshold_scores_and_types():
    text = "aa bb cc dd"
    offsets = [(0, 2), (2, 5), (5, 8), (8, 11)]  # byte-level style: tokens carry their leading space
    probs = np.array([[0.9, 0.1, 0, 0, 0], [0.3, 0.1, 0.6, 0, 0], [0.4, 0.1, 0.4, 0, 0.1], [0.8, 0, 0, 0.2, 0]])
    spans = spans_from_probabilities(text, offsets, probs, 0.6, scheme="typed")
    assert spans == [Span(3, 8, type=HALLUCINATION_TYPES[1], score=0.65)]
    assert spans_from_probabilities(text, offsets, probs, 0.6, scheme="typed", span_edges="tokens")[0].start == 2
    assert spans_from_probabilities(text, offsets, probs, 0.71, scheme="typed") == []
    binary = np.stack([probs[:, 0], 1 - probs[:, 0]], axis=1)
    assert [(s.start, s.end, s.type) for s in spans_from_probabilities(text, offsets, binary, 0.05, scheme="binary")
            ] == [(0, 11, None)]


def _round_trip(tokenizer, records, span_edges: str = "trim-space") -> tuple[float, int, int]:
    """Pooled character F1 of gold → token labels → spans, and how many gold spans come back exactly / at all."""
    gold_chars = pred_chars = overlap = exact = total = 0
    for record in records:
        offsets = _offsets(tokenizer, record.response)
        back = labels_to_spans(record.response, offsets, token_labels(offsets, record.spans, "typed"),
                               scheme="typed", span_edges=span_edges)
        g, p, o = char_counts(record.spans, back)
        gold_chars, pred_chars, overlap = gold_chars + g, pred_chars + p, overlap + o
        found = {(s.start, s.end) for s in back}
        exact += sum((s.start, s.end) in found for s in record.spans)
        total += len(record.spans)
        for span in back:  # every span recovered covers gold characters and has the gold type there
            assert any(g.start < span.end and span.start < g.end and g.type == span.type for g in record.spans)
    f1 = 2 * overlap / (gold_chars + pred_chars)
    return f1, exact, total


def test_round_trip_on_real_sample_records(shared_sample_dir, minilm_tokenizer, llama3_tokenizer):
    records = [r for r in load_ragtruth(shared_sample_dir, keep_quality=None) if r.spans]
    assert len(records) > 30
    for tokenizer in (minilm_tokenizer, llama3_tokenizer):
        f1, exact, total = _round_trip(tokenizer, records)
        assert f1 > 0.99 and exact >= 0.9 * total
    # Without trimming, byte-level tokens drag their leading space into the span: never an exact match.
    f1_tokens, exact_tokens, _ = _round_trip(llama3_tokenizer, records, span_edges="tokens")
    assert exact_tokens < exact and f1_tokens < f1


def test_round_trip_on_the_embedded_sample(minilm_tokenizer):
    records = [r for r in load_ragtruth(sample_data_dir(), keep_quality=None) if r.spans]
    f1, exact, total = _round_trip(minilm_tokenizer, records)
    assert f1 > 0.99 and exact == total
