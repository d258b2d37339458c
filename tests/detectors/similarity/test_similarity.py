"""DelucionQA's similarity baselines on hand-made cases with known answers."""

from __future__ import annotations

import json

import pytest
from conftest import make_record

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.loader import load_detector
from ragtruth_spans.detectors.shared.sentences import evidence_units, split_sentences, tokens
from ragtruth_spans.detectors.similarity.detector import (
    DEFAULT_THRESHOLDS,
    PAPER_THRESHOLDS,
    ResponseEvidence,
    SimilarityDetector,
    calibrate,
)
from ragtruth_spans.detectors.similarity.keywords import match_keywords
from ragtruth_spans.detectors.similarity.tiling import min_phrase_length, overlap_ratio

CONTEXT = ("The Grand Hotel opened in 1999 on the harbour front of Lisbon. It has 120 rooms and a rooftop pool. "
           "Guests praise the quiet rooms and the friendly staff at the front desk.")


def spans_text(response, detection):
    return [response[s.start:s.end] for s in detection.spans]


def test_sentences_are_trimmed_and_list_items_split():
    text = "  Sure! Here are the steps:\n\n1. Heat the pan.\n2. Add oil.  \nDone?"
    assert [text[a:b] for a, b in split_sentences(text)] == [
        "Sure!", "Here are the steps:", "1. Heat the pan.", "2. Add oil.", "Done?"]
    assert all(text[a:b] == text[a:b].strip() for a, b in split_sentences(text))
    assert split_sentences("   \n ") == []


def test_evidence_units_flatten_data2txt_json_and_keep_the_question():
    context = json.dumps({"name": "Blue Cafe", "hours": {"Monday": "9:0-17:0"}, "parking": None,
                          "review_info": [{"review_text": "Great coffee and cake. " * 8}]})
    units = evidence_units(context, "Data2txt")
    assert units[:3] == ["name: Blue Cafe", "Monday: 9:0-17:0", "parking: null"]
    assert units[3] == "Great coffee and cake."  # a long review is cut into sentences
    assert evidence_units("One. Two.", "QA", question="Why?") == ["Why?", "One.", "Two."]


def test_overlap_ratio_counts_only_long_phrases_of_the_shorter_sentence():
    a = tokens("the hotel opened in 1999 on the harbour front")
    assert overlap_ratio(a, a) == 1.0
    assert min_phrase_length(20) == 6 and min_phrase_length(5) == 4
    # three shared words are shorter than the 4-word minimum
    assert overlap_ratio(tokens("the hotel opened late"), tokens("yes the hotel opened in may")) == 0.0
    # one long response sentence merging two context sentences reaches 1.0 with each (one-to-many)
    merged = tokens("it has 120 rooms and a rooftop pool and guests praise the quiet rooms")
    assert overlap_ratio(merged, tokens("It has 120 rooms and a rooftop pool.")) == 1.0
    assert overlap_ratio(merged, tokens("Guests praise the quiet rooms.")) == 1.0
    # 5 of 10 tokens copied as one phrase against a longer unit: 0.5
    half = tokens("guests praise the quiet rooms but hate the loud bar")
    assert overlap_ratio(half, tokens(CONTEXT)) == 0.5


def test_sim_overlap_never_flags_a_sentence_copied_from_the_context():
    response = "It has 120 rooms and a rooftop pool. The hotel was built by Gustave Eiffel in 1887."
    detection = load_detector("sim-overlap").detect(context=CONTEXT, response=response, task="Summary")
    assert spans_text(response, detection) == ["The hotel was built by Gustave Eiffel in 1887."]
    assert detection.spans[0].score == detection.score >= 0.5
    clean = load_detector("sim-overlap").detect(context=CONTEXT, response="It has 120 rooms and a rooftop pool.",
                                                task="Summary")
    assert clean.spans == [] and clean.score < 0.5


def test_keyword_match_flags_the_sentence_with_a_new_number():
    response = "The Grand Hotel is on the harbour front. It opened in 2004."
    match = match_keywords(response, CONTEXT)
    assert [k.text for k in match.missing] == ["2004"] and any(k.text == "Grand Hotel" for k in match.keywords)
    detector = load_detector("keyword-match")
    detection = detector.detect(context=CONTEXT, response=response, task="Summary")
    assert spans_text(response, detection) == ["It opened in 2004."]
    assert detection.diagnostics["missing_keywords"] == 1 and detection.score > 0.5
    same = detector.detect(context=CONTEXT, response="The Grand Hotel opened in 1999.", task="Summary")
    assert same.spans == [] and same.diagnostics["missing_keywords"] == 0


def test_hybrid_flags_only_what_neither_similarity_supports():
    detector = SimilarityDetector("hybrid", {"cosine": 0.1, "overlap": 0.9})
    evidence = ResponseEvidence(sentences=[(0, 5), (6, 10), (11, 15)], cosine=[0.05, 0.5, 0.05],
                                overlap=[0.5, 0.0, 0.95])
    detection = detector.decide(evidence)
    assert [(s.start, s.end) for s in detection.spans] == [(0, 5)]
    assert detection.score == max(s.score for s in detection.spans)


def test_scores_put_the_threshold_at_one_half():
    assert calibrate(0.6, 0.6) == 0.5 and calibrate(0.0, 0.6) == 0.0 and calibrate(1.0, 0.6) == 1.0
    assert calibrate(-0.2, 0.3) == 0.0 and calibrate(0.3, 0.6) < calibrate(0.7, 0.6)
    with pytest.raises(InputError, match="takes the thresholds cosine, overlap"):
        SimilarityDetector("hybrid", {"cosine": 0.5})
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        SimilarityDetector("overlap", {"overlap": 1.0})


def test_named_detectors_carry_the_paper_thresholds_except_the_dev_tuned_hybrid():
    for name, method in (("sim-cosine", "cosine"), ("sim-overlap", "overlap"), ("keyword-match", "keywords")):
        described = load_detector(name).describe()
        assert described["thresholds"] == PAPER_THRESHOLDS[method] and described["thresholds_from"] == "paper"
    hybrid = load_detector("sim-hybrid").describe()
    assert hybrid["thresholds"] == DEFAULT_THRESHOLDS["hybrid"] == {"cosine": 0.6, "overlap": 0.1}
    assert "dev" in hybrid["thresholds_from"] and PAPER_THRESHOLDS["hybrid"] != DEFAULT_THRESHOLDS["hybrid"]
    assert SimilarityDetector("hybrid", {"cosine": 0.5, "overlap": 0.5}).describe()["thresholds_from"] == "given"


def test_default_hybrid_flags_an_unsupported_sentence_and_spares_a_copied_one():
    response = "It has 120 rooms and a rooftop pool. The hotel was built by Gustave Eiffel in 1887."
    detection = load_detector("sim-hybrid").detect(context=CONTEXT, response=response, task="Summary")
    assert spans_text(response, detection) == ["The hotel was built by Gustave Eiffel in 1887."]
    with pytest.raises(InputError, match="option.*device"):
        load_detector("keyword-match", device="cpu", colour="red")


def tuning_records():
    """sim-overlap support of each response's only sentence: 1.0 (clean), 0.5 and 0.0 (hallucinated)."""
    return [
        make_record("a", "Summary", CONTEXT, "It has 120 rooms and a rooftop pool.", [], split="dev"),
        make_record("b", "Summary", CONTEXT, "Guests praise the quiet rooms but hate the loud bar.",
                    [("Guests praise the quiet rooms but hate the loud bar.", "Evident Baseless Info")], split="dev"),
        make_record("c", "Summary", CONTEXT, "Breakfast costs nine euros.",
                    [("Breakfast costs nine euros.", "Evident Baseless Info")], split="dev"),
    ]


def test_tuning_picks_the_first_best_threshold_on_the_dev_records():
    tuned, result = load_detector("sim-overlap").tune(tuning_records())
    assert result.thresholds == {"overlap": 0.5} and tuned.thresholds == {"overlap": 0.5}
    assert result.value == 1.0 and len(result.table) == 9
    assert [row["span_f1"] < 1.0 for row in result.table[:4]] == [True] * 4
    assert tuned.describe()["thresholds_from"] == "tuned on dev"


def test_train_tunes_on_the_eval_split_and_the_run_directory_loads(tmp_path):
    from ragtruth_spans.core.jsonl import write_records
    from ragtruth_spans.detectors.recipes import load_recipe
    from ragtruth_spans.detectors.train import train

    write_records(tmp_path / "data" / "dev.jsonl", tuning_records())
    write_records(tmp_path / "data" / "train.jsonl", tuning_records()[:1])
    recipe = load_recipe("all-minilm-l6-v2/similarity-overlap", [f"data.prepared_dir={tmp_path / 'data'}",
                                                       f"output_dir={tmp_path / 'run'}"])
    train(recipe)
    info = json.loads((tmp_path / "run" / "run_info.json").read_text())
    assert info["kind"] == "similarity" and info["thresholds"] == {"overlap": 0.5}
    assert info["tuning"]["paper_thresholds_figures"]["overlap"] == 0.1 and len(info["tuning"]["grid"]) == 9
    detector = load_detector(tmp_path / "run")
    assert detector.thresholds == {"overlap": 0.5} and detector.describe()["fingerprint"] == info["fingerprint"]
    with pytest.raises(InputError, match="data.eval_split must name the split"):
        load_recipe("all-minilm-l6-v2/similarity-overlap", ["data.eval_split=null"])


@pytest.fixture(scope="module")
def cosine_detector():
    return load_detector("sim-cosine")


def test_sim_cosine_with_the_real_minilm(cosine_detector):
    """Loads the packaged all-MiniLM-L6-v2 (sentence-transformers import included: ~10 s on 2 cores)."""
    response = "The Grand Hotel opened in 1999 on the harbour front of Lisbon. Penguins migrate across Antarctica."
    detection = cosine_detector.detect(context=CONTEXT, response=response, task="Summary")
    assert spans_text(response, detection) == ["Penguins migrate across Antarctica."]
    assert detection.diagnostics == {"sentences": 2, "flagged_sentences": 1}
    assert cosine_detector.describe()["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_support_caches_belong_to_the_detector_and_its_tuned_copies():
    """No process-wide cache: a detector keeps what it computed (bounded), its copies with other thresholds share
    it, another detector starts empty."""
    from ragtruth_spans.detectors.similarity.support import SupportCache

    response = "The Grand Hotel opened in 1998. It has 120 rooms."
    first, second = SimilarityDetector("overlap"), SimilarityDetector("overlap")
    found = first.detect_batch([{"context": CONTEXT, "response": response, "task": "Summary"}])
    assert len(first.supports.supports) == 2 and len(first.supports.contexts) == 1
    assert len(second.supports.supports) == 0
    copy = first.with_thresholds(PAPER_THRESHOLDS["overlap"], {"thresholds_from": "test"})
    assert copy.supports is first.supports
    again = copy.detect_batch([{"context": CONTEXT, "response": response, "task": "Summary"}])
    assert len(first.supports.supports) == 2  # reused, not recomputed
    assert [d.to_dict() for d in again] == [d.to_dict() for d in found]
    bounded = SupportCache(contexts=2)
    for k in range(3):
        bounded.context_evidence(f"Context number {k}.", "Summary")
    assert len(bounded.contexts) == 2
