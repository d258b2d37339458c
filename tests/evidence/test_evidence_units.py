"""Evidence units and facts: every unit's offsets are exact indices of the context (Unicode, ``\\r\\n``, JSON
escapes of Data2txt contexts), and facts compare values written in different ways."""

from __future__ import annotations

import json

import pytest

from ragtruth_spans.data.facts import content_stems, facts, negations
from ragtruth_spans.data.hours import claimed_days, claimed_hours
from ragtruth_spans.evidence.units import context_units, json_units

TEXT = ("passage 1: Le Café Zoë opened in 1999 — its owner is Søren.\r\nIt has 120 rooms 🏨 and a spa.\r\n\r\n"
        "passage 2: Rooms cost $1,200 a week.")


def test_text_units_are_trimmed_sentences_at_exact_offsets() -> None:
    units = context_units(TEXT, "QA")
    assert [TEXT[u.start:u.end] for u in units] == [u.text for u in units]
    assert [u.text for u in units] == ["passage 1: Le Café Zoë opened in 1999 — its owner is Søren.",
                                       "It has 120 rooms 🏨 and a spa.", "passage 2: Rooms cost $1,200 a week."]
    assert all(not u.is_field for u in units)


def _business() -> dict:
    return {"name": "Café \"Zoë\" 🍣", "hours": {"Monday": "7:0-14:0", "Friday": "9:0-21:30"},
            "attributes": {"RestaurantsTakeOut": False, "WiFi": "no", "Music": None, "Ambience": {"casual": True}},
            "business_stars": 4.5, "categories": ["Food", "Cafés"],
            "review_info": [{"review_stars": 5.0, "review_text": "Great crêpes!\nThe staff said \"we close at 8 pm\". "
                             "Parking\tis \\ hard 😀. " + "Really good coffee, friendly people. " * 3}]}


@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("indent", [None, 2])
def test_json_units_point_at_the_raw_json(ensure_ascii: bool, indent: int | None) -> None:
    context = json.dumps(_business(), ensure_ascii=ensure_ascii, indent=indent).replace("\n", "\r\n")
    units = json_units(context)
    assert units is not None and all(u.is_field for u in units)
    fields = [u for u in units if context[u.start] == '"' and context[u.start:u.end].startswith(f'"{u.keys[-1]}"')]
    for unit in fields:  # a whole field: "key": value, the value decoding to the unit's value
        start, end = unit.value_span
        assert json.loads(context[start:end]) == unit.value
    sentences = [u for u in units if u not in fields and u.keys[-1] == "review_text"]
    assert len(sentences) >= 4
    for unit in sentences:  # a sentence of a long string: its raw characters decode to the sentence
        assert json.loads('"' + context[unit.start:unit.end] + '"') == unit.text == unit.value
    by_key = {u.keys: u for u in fields}
    assert by_key[("name",)].value == "Café \"Zoë\" 🍣"
    assert by_key[("attributes", "Music")].value is None
    assert by_key[("hours", "Friday")].text == "hours Friday: 9:0-21:30"
    assert [u.value for u in units if u.keys == ("categories",)] == ["Food", "Cafés"]


def test_a_data2txt_context_that_is_not_json_is_cut_into_sentences() -> None:
    assert json_units("Name: Zoë. Stars: 4.") is None and json_units('"a string"') is None
    assert [u.text for u in context_units("Name: Zoë. Stars: 4.", "Data2txt")] == ["Name: Zoë.", "Stars: 4."]


def test_facts_normalise_numbers_times_and_dates() -> None:
    text = "Rated three and a half stars by 1,200 guests on 2020-12-16, open 7 am to 2:30 PM in May; 4.0 overall."
    got = {(f.kind, f.value, text[f.start:f.end]) for f in facts(text)}
    assert {("num", "3.5", "three and a half"), ("num", "1200", "1,200"), ("num", "2020", "2020"),
            ("month", "12", "12"), ("time", "7:00", "7 am"), ("time", "14:30", "2:30 PM"), ("month", "5", "May"),
            ("num", "4", "4.0")} <= got
    assert {("time", "7:00"), ("time", "14:00")} <= {(f.kind, f.value) for f in facts('"Monday": "7:0-14:0"')}
    assert content_stems("The Reservations were not taken") == ["reserv", "taken"]
    said = "It doesn't take cards, no WiFi, isn’t open"
    assert [said[a:b] for a, b in negations(said)] == ["doesn't", "no", "isn’t"]


def test_claimed_days_and_hours_read_ranges_and_clauses() -> None:
    assert claimed_days("open Monday through Friday") == {0, 1, 2, 3, 4}
    assert claimed_days("the fries were friendly, sunny and satisfying") is None
    assert claimed_days("Thu-Mon") == {3, 4, 5, 6, 0} and claimed_days("daily") == set(range(7))
    assert claimed_hours("9 am to 6 pm on weekdays, 8 am to 6 pm on Saturday, and noon to 5 pm on Sunday") == [
        ({0, 1, 2, 3, 4}, "9:00-18:00"), ({5}, "8:00-18:00"), ({6}, "12:00-17:00")]
