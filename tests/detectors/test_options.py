"""The one options model and the one KEY=VALUE parser (:mod:`ragtruth_spans.detectors.options`): dotted keys nest,
a key given twice is refused, values are typed by the model and every error is one line naming the key."""

from __future__ import annotations

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.options import DetectorOptions, parse_key_values


def test_dotted_keys_nest_and_values_are_yaml() -> None:
    parsed = parse_key_values(["extra_body.top_k=5", "extra_body.stop=[a, b]", "mode=claims", "threshold=0.4"])
    assert parsed == {"extra_body": {"top_k": 5, "stop": ["a", "b"]}, "mode": "claims", "threshold": 0.4}


@pytest.mark.parametrize(("items", "named"), [
    (["threshold=0.3", "threshold=0.4"], "threshold is given twice"),
    (["extra_body.top_k=5", "extra_body.top_k=6"], "extra_body.top_k is given twice"),
    (["extra_body=1", "extra_body.top_k=5"], "extra_body is already a value"),
    (["threshold"], "is not of the form key=value"),
])
def test_a_key_given_twice_or_a_malformed_item_is_one_line_naming_it(items: list[str], named: str) -> None:
    with pytest.raises(InputError, match=named) as caught:
        parse_key_values(items, flag="--option")
    assert "\n" not in str(caught.value) and "field '--option'" in str(caught.value)


@pytest.mark.parametrize(("item", "message"), [
    ("threshold=1.0", r"threshold=1\.0: must be in \(0, 1\)"),
    ("threshold=true", "threshold=True: Input should be a valid number"),
    ("batch_size=abc", "batch_size='abc': Input should be a valid integer"),
    ("batch_size=0", "batch_size=0: Input should be greater than or equal to 1"),
    ("load_in_4bit=3", "load_in_4bit=3: Input should be a valid boolean"),
    ("device=[cpu]", r"device=\['cpu'\]: Input should be a valid string"),
])
def test_values_are_typed_by_the_model_with_one_line_errors(item: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        DetectorOptions.from_items([item], flag="--detectors")
    assert "\n" not in str(caught.value) and "field '--detectors'" in str(caught.value)


def test_family_options_are_kept_for_the_family_and_unset_ones_left_out() -> None:
    options = DetectorOptions.from_items(["base_url=http://127.0.0.1:8000/v1", "extra_body.top_k=5",
                                          "batch_size=4"])
    assert options.load_kwargs() == {"batch_size": 4, "base_url": "http://127.0.0.1:8000/v1",
                                     "extra_body": {"top_k": 5}}
    assert DetectorOptions().load_kwargs() == {}


def test_the_same_options_from_the_command_line_json_and_python() -> None:
    from_command_line = DetectorOptions.from_command_line({"threshold": 0.4, "device": None},
                                                          ["extra_body.top_k=5"])
    from_json = DetectorOptions.of({"threshold": 0.4, "extra_body": {"top_k": 5}})
    from_python = DetectorOptions(threshold=0.4, extra_body={"top_k": 5})
    assert from_command_line == from_json == from_python
    assert DetectorOptions.of(from_python.load_kwargs()) == from_python  # a round trip through JSON-ready kwargs


def test_a_flag_and_an_option_for_one_key_are_refused_and_a_bad_flag_names_the_flag() -> None:
    with pytest.raises(InputError, match="threshold given both as a flag and as --option"):
        DetectorOptions.from_command_line({"threshold": 0.4}, ["threshold=0.5"])
    with pytest.raises(InputError, match=r"field '--threshold': must be in \(0, 1\).*got 1\.5"):
        DetectorOptions.from_command_line({"threshold": 1.5}, [])


def test_own_options_override_the_shared_ones() -> None:
    shared = DetectorOptions(batch_size=8, device="cpu")
    own = DetectorOptions.from_items(["batch_size=4"], flag="--detectors")
    assert own.over(shared).load_kwargs() == {"batch_size": 4, "device": "cpu"}
