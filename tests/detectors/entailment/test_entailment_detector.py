"""The entailment detector over a toy context: the sentence no window entails is the span (half-open offsets of
the whole trimmed sentence), typed by whether a window contradicts it; columns per sentence for other detectors.

The NLI model here is an oracle over word pieces (entailed when every word of the hypothesis is in the premise,
contradicted when the hypothesis names a colour the premise does not), so the test checks the detector's windows,
choice and decisions, not what a model learnt; the sentence encoder is the real all-MiniLM-L6-v2.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

COLOURS = ("red", "blue", "green")


class Oracle(torch.nn.Module):
    """Logits of (entailment, neutral, contradiction) from the token ids of ``[CLS] premise [SEP] hypothesis``."""

    def __init__(self, tokenizer) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))
        self.special = set(tokenizer.all_special_ids)
        self.colours = {tokenizer.convert_tokens_to_ids(c) for c in COLOURS}
        self.calls = 0

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        self.calls += 1
        rows = []
        for ids, mask, types in zip(input_ids.tolist(), attention_mask.tolist(), token_type_ids.tolist()):
            words = [(i, t) for i, m, t in zip(ids, mask, types) if m and i not in self.special]
            premise = {i for i, t in words if t == 0}
            hypothesis = {i for i, t in words if t == 1}
            if hypothesis <= premise:
                rows.append([4.0, 0.0, 0.0])
            elif (hypothesis - premise) & self.colours and premise & self.colours:
                rows.append([0.0, 0.0, 4.0])
            else:
                rows.append([0.0, 4.0, 0.0])
        return type("Output", (), {"logits": torch.tensor(rows) + 0 * self.anchor})()


CONTEXT = ("The museum in the old town is red. It opened in 1950 beside the river. The garden behind it has two "
           "fountains. Visitors can climb the tower on weekends.")
TEXTS = [CONTEXT, "The museum is blue. The garden has two fountains. The museum has a cafe. When?"]


@pytest.fixture(scope="module")
def detector():
    from ragtruth_spans.detectors.entailment.detector import EntailmentDetector
    from ragtruth_spans.detectors.shared.encoder import SentenceEncoder
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    tokenizer = train_bert_tokenizer(TEXTS * 3 + list(COLOURS) * 3, vocab_size=300)
    found = EntailmentDetector(Oracle(tokenizer), tokenizer, max_length=128, window_sentences=2, windows=2)
    found._encoder = SentenceEncoder(runtime="torch")
    return found


def test_the_span_is_the_sentence_no_window_entails_and_a_contradiction_is_typed(detector):
    response = "The garden has two fountains. The museum is blue.  The museum has a cafe. "
    found = detector.detect(context=CONTEXT, response=response, task="Summary")
    spans = [(s.start, s.end, response[s.start:s.end], s.type, s.evidence.verdict) for s in found.spans]
    assert spans == [(30, 49, "The museum is blue.", "Evident Conflict", "contradicted"),
                     (51, 73, "The museum has a cafe.", "Evident Baseless Info", "unsupported")]
    conflict = found.spans[0].evidence.passages[0]
    assert "is red" in CONTEXT[conflict.start:conflict.end]  # the contradicting window comes first
    low = 1 / (2 + math.exp(4))  # P(entailment) of the oracle's neutral or contradiction logits
    assert found.score == pytest.approx(1 - low, abs=1e-5) and found.diagnostics["sentences"] == 3
    assert [s.score for s in found.spans] == pytest.approx([1 - low, 1 - low], abs=1e-5)


def test_sentence_columns_and_a_faithful_response(detector):
    response = "It opened in 1950 beside the river. The museum is green."
    (scores,) = detector.sentence_scores([{"context": CONTEXT, "response": response, "question": "When?",
                                           "task": "QA"}])
    assert [(s.start, s.end) for s in scores] == [(0, 35), (36, 56)]
    assert scores[0].entailment > 0.9 and scores[0].contradiction < 0.1
    assert scores[1].entailment < 0.1 and scores[1].contradiction > 0.9 and scores[1].contradicted
    assert len(scores[0].windows) == 2  # the best two windows by the encoder were judged
    clean = detector.detect(context=CONTEXT, response="The museum in the old town is red.", task="Summary")
    assert clean.spans == [] and clean.score < 0.1


def test_character_scores_are_each_sentences_soft_score_for_a_stacked_member(detector):
    from ragtruth_spans.detectors.base import DetectItem

    response = "It opened in 1950 beside the river.  The museum is green."
    item = DetectItem.of({"context": CONTEXT, "response": response, "task": "Summary"})
    ((scores, judged),) = detector.character_scores([item])
    (sentences,) = detector.sentence_scores([item])
    assert judged and scores.dtype.name == "float32" and len(scores) == len(response)
    assert scores[:35] == pytest.approx([1 - sentences[0].entailment] * 35, abs=1e-6)
    assert scores[35:37].tolist() == [0.0, 0.0]  # between sentences
    assert scores[37:] == pytest.approx([1 - sentences[1].entailment] * 20, abs=1e-6)
    assert scores[0] < 0.1 < 0.9 < scores[-1]  # soft: the entailed sentence scores low, not zero by a threshold
