"""Parsing of generated detector output: the target format and the deviations models produce."""

from __future__ import annotations

import json

import pytest

from ragtruth_spans.detectors.shared.parsing import ParsedItem, canonical_type, parse_generation

EC, EB = "Evident Conflict", "Evident Baseless Info"
TARGET = json.dumps([{"text": "opened in 1998", "type": EC}, {"text": "free parking", "type": EB}],
                    ensure_ascii=False)
EXPECTED = [ParsedItem("opened in 1998", EC), ParsedItem("free parking", EB)]


def test_target_format_round_trips() -> None:
    result = parse_generation(TARGET)
    assert result.ok and result.error is None
    assert result.items == EXPECTED
    assert result.repairs == [] and not result.truncated and result.raw == TARGET


def test_empty_list_is_a_valid_parse_with_no_spans() -> None:
    result = parse_generation("[]")
    assert result.ok and result.items == [] and result.error is None


def test_unicode_text_is_kept_verbatim() -> None:
    raw = json.dumps([{"text": "Café 東京 🎉", "type": EB}], ensure_ascii=False)
    assert parse_generation(raw).items == [ParsedItem("Café 東京 🎉", EB)]
    escaped = json.dumps([{"text": "Café 東京 🎉", "type": EB}])  # \\u escapes decode to the same text
    assert parse_generation(escaped).items == [ParsedItem("Café 東京 🎉", EB)]


@pytest.mark.parametrize("raw, repair", [
    (f"```json\n{TARGET}\n```", "code fence"),
    (f"```\n{TARGET}\n```\nHope this helps!", "code fence"),
    (f"Here are the hallucinated spans:\n{TARGET}", "leading text"),
    (f"{TARGET}\nThese spans contradict the context.", "trailing text"),
    (f"See [1] and [2]. Answer: {TARGET}", "leading text"),
])
def test_fences_and_prose_are_tolerated(raw: str, repair: str) -> None:
    result = parse_generation(raw)
    assert result.ok and result.items == EXPECTED
    assert repair in result.repairs


def test_single_quoted_pseudo_json() -> None:
    raw = "[{'text': 'opened in 1998', 'type': 'Evident Conflict'}, {'text': \"it's free parking\", 'type': null}]"
    result = parse_generation(raw)
    assert result.ok
    assert result.items == [ParsedItem("opened in 1998", EC), ParsedItem("it's free parking", None)]
    assert result.unknown_types == 1


def test_single_object_instead_of_list() -> None:
    result = parse_generation('{"text": "opened in 1998", "type": "Evident Conflict"}')
    assert result.ok and result.items == [ParsedItem("opened in 1998", EC)]


def test_truncated_output_keeps_complete_items() -> None:
    cut = TARGET[: TARGET.index("free parking") + 4]  # inside the second item
    result = parse_generation(cut)
    assert result.ok and result.truncated and "truncated" in result.repairs
    assert result.items == [ParsedItem("opened in 1998", EC)]


def test_truncated_inside_code_fence() -> None:
    result = parse_generation("```json\n" + TARGET[:-2])
    assert result.ok and result.truncated and result.items == [EXPECTED[0]]


def test_truncated_before_first_item_is_a_failure() -> None:
    result = parse_generation('[{"text": "opened in 19')
    assert not result.ok and result.items == [] and result.truncated
    assert "truncated" in result.error


def test_type_spelling_is_mapped_and_unknown_type_is_counted() -> None:
    raw = json.dumps([{"text": "a b", "type": "evident_conflict"}, {"text": "c d", "type": "subtle-baseless info"},
                      {"text": "e f", "type": "Made Up"}, {"text": "g h"}])
    result = parse_generation(raw)
    assert result.ok
    assert [i.type for i in result.items] == [EC, "Subtle Baseless Info", None, None]
    assert result.unknown_types == 2
    assert result.items[0].raw_type == "evident_conflict" and result.items[2].raw_type == "Made Up"
    assert canonical_type("  SUBTLE   conflict ") == "Subtle Conflict" and canonical_type(3) is None


def test_entries_without_text_are_counted_not_kept() -> None:
    raw = json.dumps([{"text": "opened in 1998", "type": EC}, {"type": EB}, {"text": "  "}, 7])
    result = parse_generation(raw)
    assert result.ok and result.items == [EXPECTED[0]] and result.dropped_items == 3


def test_bare_strings_are_untyped_items() -> None:
    result = parse_generation('["opened in 1998", "free parking"]')
    assert result.ok and [i.text for i in result.items] == ["opened in 1998", "free parking"]
    assert all(i.type is None for i in result.items) and result.unknown_types == 2


@pytest.mark.parametrize("raw, message", [
    ("", "empty output"),
    ("   \n", "empty output"),
    ("The response contains no hallucination.", "no JSON"),
    ('[{"spans": 3}]', "no span item"),
    ("[{text: opened}]", "malformed"),
])
def test_unparseable_output_is_a_failure_with_raw_kept(raw: str, message: str) -> None:
    result = parse_generation(raw)
    assert not result.ok and result.items == []
    assert message in result.error
    assert result.raw == raw
