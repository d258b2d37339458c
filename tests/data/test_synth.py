"""The generator over any contexts: exact offsets for every kind, seeded, counted, kinds drawn evenly, JSON kinds
only on JSON contexts, and the recipe section reaching the training and eval records."""

from __future__ import annotations

import json

import pytest
from conftest import make_record

from ragtruth_spans.data import lexicon, synth
from ragtruth_spans.data.augment import ALL_KINDS, EDITS, TRANSFER_KINDS, TYPES, augment, is_augmented

NEWS = ("The Harlow Street Bridge opened in March 1932 and carries 40,000 cars a day. Engineers said most "
        "supports were sound. Each steel beam weighs 12 kilograms per metre, the council reported on Monday. "
        "Repairs, which will cost 4,200,000 pounds, were approved by the council. Traffic rose by 5% in 2020. "
        "It is common to see cyclists on the bridge.")
JSON = json.dumps({"name": "Rosa Bakery", "city": "Leeds", "attributes": {"WheelchairAccessible": False,
                   "BusinessParking": {"street": False, "garage": True}, "WiFi": "free"}})


def documents() -> list[synth.Document]:
    return [synth.Document("news", "Summary", NEWS, None, "demo"),
            synth.Document("other", "QA", "Maria Lopez founded Lopez Foods in Madrid. The firm sells olive oil "
                           "to 30 countries and employs 200 people.", "Who founded Lopez Foods?", "demo"),
            synth.Document("json", "Data2txt", JSON, None, "demo",
                           ("Rosa Bakery is a bakery in Leeds. It has free WiFi.",))]


def test_generated_records_have_exact_typed_offsets_and_keep_their_source():
    records, stats = synth.generate(documents(), 200, seed=1)
    assert len(records) == 200 and sum(stats.made.values()) == 200
    for record in records:
        assert is_augmented(record) and record.source_id in {"news", "other", "json"}
        for span in record.spans:
            assert record.response[span.start:span.end] == span.text and span.type in TYPES.values()
        kind = record.id.split("~")[0].split("-", 4)[-1]  # <source>#aug-syn-<seed>-<i>-<kind>~<transforms>
        assert bool(record.spans) == (kind != "faithful")
        if kind.startswith("json"):
            assert record.context.lstrip().startswith("{")


def test_seeded_and_kinds_drawn_evenly():
    a, _ = synth.generate(documents(), 300, seed=4)
    b, _ = synth.generate(documents(), 300, seed=4)
    assert [r.to_dict() for r in a] == [r.to_dict() for r in b]
    _, stats = synth.generate(documents(), 1000, seed=4)  # enough draws per kind for the spread to be small
    edited = {k: v for k, v in stats.made.items() if k != "faithful"}
    assert len(edited) >= 12  # most kinds apply to these three documents
    drawn = [stats.made[k] + stats.skipped[k] for k in ALL_KINDS]  # every kind is drawn, applied or not
    assert max(drawn) < 4 * min(drawn)
    assert stats.faithful["paraphrase"] > 0 and stats.faithful["copy"] > 0


def test_aligned_answers_are_clean_answer_sentences_in_windows_that_hold_their_support():
    from ragtruth_spans.data.facts import content_stems

    clean = ("Since 1932 the bridge has taken 40,000 cars each day. The council has approved repairs costing "
             "4.2 million pounds.")
    docs = [synth.Document("news", "Summary", NEWS, None, "demo", (clean,)), *documents()[1:]]
    records, stats = synth.generate(docs, 120, seed=2, aligned_share=1.0)
    aligned = [r for r in records if r.source_id == "news" and "aligned" in r.id.split("~")[1]]
    assert aligned and stats.faithful["aligned"] == len([r for r in records if "aligned" in r.id.split("~")[1]])
    for record in aligned:
        assert len(record.context) < len(NEWS) and record.context in NEWS
        if not record.spans:  # a faithful one: a sentence of the clean answer, its support all in the window
            assert record.response in synth.sentences(clean)
            assert set(content_stems(record.response)) & set(content_stems(NEWS)) <= set(
                content_stems(record.context))
    assert all("aligned" not in r.id for r in synth.generate(docs, 60, seed=2)[0])  # off unless asked


def test_faithful_transforms_keep_the_meaning_markers():
    rng = __import__("random").Random(0)
    assert synth._number_format("It cost 4,200,000 pounds.", rng) == "It cost 4.2 million pounds."
    assert synth._negated_negative("It is common to see cyclists.", rng) == "It is not uncommon to see cyclists."
    assert synth._paraphrase("The firm sells oil.", rng) is None or "firm" not in synth._paraphrase(
        "The firm sells oil.", __import__("random").Random(0))


@pytest.mark.parametrize("kind", TRANSFER_KINDS)
def test_each_transfer_kind_edits_a_clean_record(kind):
    base = make_record("r", "Data2txt" if kind.startswith("json") else "Summary",
                       JSON if kind.startswith("json") else NEWS,
                       "Rosa Bakery is a bakery in Leeds." if kind.startswith("json") else
                       "The bridge was built in March 1932 and most supports were sound. Each beam weighs 12 "
                       "kilograms. Traffic rose by 5%. Repairs were approved by the council.", [])
    donor = make_record("d", "Summary", documents()[1].context, "x", [])
    edited = None
    for seed in range(20):
        edited = EDITS[kind](base, __import__("random").Random(seed), [donor])
        if edited is not None:
            break
    assert edited is not None, kind
    (span,) = edited.spans
    assert edited.response[span.start:span.end] == span.text and span.type == TYPES[kind]


def test_the_old_kinds_are_unchanged_by_the_new_ones():
    records = [make_record(f"r{i}", "Summary", NEWS, "The bridge opened in March 1932. It carries 40,000 cars.", [])
               for i in range(5)]
    _, stats = augment(records, seed=3)  # the default kinds: the five of before
    assert set(stats.made) | set(stats.skipped) <= {"number", "entity", "negation", "clause", "qualifier"}
    assert all(k in ALL_KINDS for k in stats.made)


def test_contradicting_words_of_one_class():
    assert lexicon.contradicting("kilograms", "pounds") and lexicon.contradicting("support", "oppose")
    assert lexicon.contradicting("monday", "thursday") and lexicon.contradicting("most", "few")
    assert not lexicon.contradicting("kilograms", "kilograms") and not lexicon.contradicting("buy", "purchase")
    assert lexicon.are_synonyms("buy", "purchase") and not lexicon.are_synonyms("buy", "sell")


def test_forms_of_one_sense_support_each_other_and_never_stand_in_for_an_edit():
    assert lexicon.same_sense("kg", "kilograms") and lexicon.same_sense("most", "majority")
    assert not lexicon.contradicting("kg", "kilograms") and not lexicon.contradicting("metres", "meters")
    assert lexicon.contradicting("kg", "pounds") and lexicon.contradicting("lb", "kilograms")
    for word in ("kilograms", "metres", "minutes", "most", "january"):
        assert not set(lexicon.contrasting(word)) & {word, *lexicon.other_forms(word)}, word
