"""One text model at the boundary: every detector family decides the same for the NFC, NFD and mixed
spellings of one text (rules, similarity, stacked with a tiny trained run, token classification with a stand-in
model), and offsets come back exactly in the caller's string, also where its normal form is shorter."""

from __future__ import annotations

import random
import unicodedata
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from ragtruth_spans.core.jsonl import write_records
from ragtruth_spans.core.text import NormalText
from ragtruth_spans.core.types import Record, Span
from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.recipes import validate_recipe
from ragtruth_spans.detectors.similarity.detector import SimilarityDetector
from ragtruth_spans.detectors.train import train


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def mixed(text: str) -> str:
    """Every other word decomposed: one text, two spellings."""
    return " ".join(nfd(w) if i % 2 else nfc(w) for i, w in enumerate(text.split(" ")))


FORMS = [(nfd, nfd), (nfc, nfd), (nfd, nfc), (mixed, mixed), (mixed, nfc)]


# --- the offset maps ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["Genève, Zürich et Besançon", "L'hôtel de Zoë ouvre à Córdoba",
                                  "한국어 문장", "plain ASCII"])
def test_every_boundary_maps_back_exactly_where_the_normal_form_is_shorter(text):
    original = nfd(text)
    normal = NormalText.of(original)
    assert normal.text == nfc(text) and len(normal.text) <= len(original)
    for start in range(len(normal.text)):
        for end in range(start + 1, len(normal.text) + 1):
            a, b = normal.span_to_original(start, end)
            assert nfc(original[a:b]) == normal.text[start:end]  # exact: the same characters, none cut
            assert normal.span_from_original(a, b) == (start, end)


def test_an_offset_inside_a_character_snaps_outward():
    original = nfd("ḍ̇x")  # NFC: d-dot-below + combining dot above (two code points, one character), then x
    normal = NormalText.of(original)
    assert len(normal.text) == 3 and len(original) == 4
    assert normal.span_to_original(0, 1) == (0, 3)  # the span keeps the whole character
    assert normal.span_to_original(1, 3) == (0, 4) and normal.span_to_original(2, 3) == (3, 4)


def test_random_mixed_texts_round_trip():
    rng = random.Random(0)
    alphabet = list("aeiouAEZ ,.") + ["é", "è", "ü", "ç", "ø", "å", "\u0301", "\u0323", "\u0308", "가", "\u1100",
                                      "\u1161", "\u11a8", "\u0958", "Å"]
    for _ in range(300):
        original = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        normal = NormalText.of(original)
        assert normal.text == nfc(original)
        assert normal.to_original(0) == 0 and normal.to_original(len(normal.text), end=True) == len(original)
        for start in range(len(normal.text)):
            end = rng.randint(start + 1, len(normal.text))
            a, b = normal.span_to_original(start, end)
            assert 0 <= a < b <= len(original)
            assert normal.text[start:end] in nfc(original[a:b])


# --- every family decides the same --------------------------------------------------------------------------------

CITIES = ["Genève", "Zürich", "Besançon", "Córdoba", "Kraków", "Tromsø", "Málaga", "Nîmes", "Łódź", "Orléans"]


def accented_records(n_sources: int, seed: int, split: str) -> list[Record]:
    """Per source, a faithful response and one that names another city (the other city is the gold span)."""
    rng = random.Random(seed)
    records = []
    for s in range(n_sources):
        city, other = rng.sample(CITIES, 2)
        year, rooms = rng.randint(1900, 2020), rng.randint(10, 300)
        context = f"L'hôtel de {city} a ouvert en {year}. Il a {rooms} chambres et un petit jardin."
        for k, response in enumerate([f"L'hôtel de {city} a ouvert en {year} et a {rooms} chambres.",
                                      f"L'hôtel de {other} a ouvert en {year} et a {rooms} chambres."]):
            at = response.find(other)
            spans = [Span(at, at + len(other), "Evident Conflict", other)] if k else []
            records.append(Record(id=f"{split}-{s}-{k}", source_id=f"{split}-src-{s}", task_type="Summary",
                                  model="m", split=split, quality="good", response=response, context=context,
                                  spans=spans))
    return records


def decomposed(record: Record) -> Record:
    """``record`` spelled in NFD, its gold spans moved with the text."""
    response = nfd(record.response)
    spans = []
    for span in record.spans:
        start = len(nfd(record.response[:span.start]))
        end = start + len(nfd(record.response[span.start:span.end]))
        spans.append(Span(start, end, span.type, response[start:end]))
    return Record(**{**record.__dict__, "response": response, "context": nfd(record.context), "spans": spans})


def train_stacked(root: Path, form=lambda r: r) -> Path:
    write_records(root / "train.jsonl", [form(r) for r in accented_records(16, 0, "train")])
    write_records(root / "dev.jsonl", [form(r) for r in accented_records(6, 1, "dev")])
    out = root / "run"
    train(validate_recipe({
        "kind": "stacked", "features": {"encoder": None}, "members": [{"name": "numbers", "detector": "numbers"}],
        "combiner": {"min_data_in_leaf": 5, "num_leaves": 7, "max_rounds": 60, "early_stopping_rounds": 20,
                     "oof_folds": 2},
        "decision": {"grid": [0.1, 0.3, 0.5, 0.7], "max_word_gap": [0, 1]}, "response": None,
        "data": {"prepared_dir": str(root), "eval_split": "dev"}, "output_dir": str(out)}))
    return out


@pytest.fixture(scope="module")
def stacked_run(tmp_path_factory) -> Path:
    return train_stacked(tmp_path_factory.mktemp("nfc-stacked"))


class TokenIdModel(torch.nn.Module):
    """A stand-in token classifier whose logit of "hallucinated" depends on each token's id only."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        hot = ((input_ids * 7919) % 5 == 0).float()[..., None] * 4.0 - 2.0
        return SimpleNamespace(logits=torch.cat([torch.zeros_like(hot), hot], dim=-1))


def token_classifier() -> Detector:
    from ragtruth_spans.detectors.token_classification.detector import TokenClassificationDetector
    from ragtruth_spans.detectors.token_classification.windows import WindowSettings
    from ragtruth_spans.models.tiny import train_bert_tokenizer

    texts = [r.context + " " + r.response for r in accented_records(10, 5, "train")]
    tokenizer = train_bert_tokenizer(texts + [nfd(t) for t in texts], vocab_size=400)
    return TokenClassificationDetector(TokenIdModel(), tokenizer, scheme="binary", windows=WindowSettings(
        max_length=96, min_context_tokens=16, response_overlap=4), threshold=0.5, aggregation="best", batch_size=8)


FAMILIES = ["numbers", "flag-all", "overlap", "keywords", "stacked", "token-classification"]


@pytest.fixture(scope="module")
def detectors(stacked_run) -> dict[str, Detector]:
    return {"numbers": load_detector("numbers"), "flag-all": load_detector("flag-all"),
            "overlap": SimilarityDetector("overlap"), "keywords": SimilarityDetector("keywords"),
            "stacked": load_detector(stacked_run), "token-classification": token_classifier()}


def _decision(detector: Detector, context: str, response: str) -> list:
    return detector.detect_batch([{"context": context, "response": response, "task": "QA",
                                   "question": nfd("Où est l'hôtel ?")}])


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_decides_the_same_for_nfc_nfd_and_mixed_text(detectors, family):
    detector = detectors[family]
    items = accented_records(6, 9, "test")
    flagged = 0
    for record in items:
        [expected] = _decision(detector, nfc(record.context), nfc(record.response))
        flagged += bool(expected.spans)
        for context_form, response_form in FORMS:
            response = response_form(record.response)
            [got] = _decision(detector, context_form(record.context), response)
            normal = NormalText.of(response)
            assert [normal.span_from_original(s.start, s.end) for s in got.spans] == \
                [(s.start, s.end) for s in expected.spans], (family, context_form.__name__, response_form.__name__)
            assert [nfc(response[s.start:s.end]) for s in got.spans] == \
                [nfc(record.response)[s.start:s.end] for s in expected.spans]
            assert got.score == pytest.approx(expected.score) and got.error == expected.error
    if family in ("stacked", "flag-all"):
        assert flagged  # the property is checked on decisions that flag something


def test_the_stacked_run_flags_an_accented_name_in_either_spelling(detectors):
    context = "L'hôtel de Genève a ouvert en 1950. Il a 40 chambres et un petit jardin."
    response = "L'hôtel de Zürich a ouvert en 1950 et a 40 chambres."
    for form in (nfc, nfd):
        [detection] = _decision(detectors["stacked"], form(context), form(response))
        assert [nfc(form(response)[s.start:s.end]) for s in detection.spans] == ["Zürich"]


def test_training_on_the_nfd_spelling_gives_the_same_run(stacked_run, tmp_path):
    import json

    spelled_nfd = train_stacked(tmp_path, decomposed)
    first, second = (json.loads((run / "run_info.json").read_text()) for run in (stacked_run, spelled_nfd))
    assert second["tuning"] == first["tuning"] and second["words"] == first["words"]
    items = accented_records(4, 7, "test")
    assert [d.to_dict() for d in load_detector(spelled_nfd).detect_batch(items)] == \
        [d.to_dict() for d in load_detector(stacked_run).detect_batch(items)]
