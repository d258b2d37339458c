"""The judge's parts without a server: reading answers, prompts, settings, the cache key, backoff."""

from __future__ import annotations

import random
from email.utils import formatdate

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.judge import prompts
from ragtruth_spans.detectors.judge.cache import AnswerCache, request_key
from ragtruth_spans.detectors.judge.client import backoff_delay, retry_after_seconds
from ragtruth_spans.detectors.judge.reading import read_span_answer, read_verdicts, strip_reasoning
from ragtruth_spans.detectors.judge.settings import judge_settings, read_judge_dir


@pytest.mark.parametrize(("raw", "texts", "repairs"), [
    ('{"hallucination list": ["opened in 1998", "free parking"]}', ["opened in 1998", "free parking"], []),
    ('{"hallucination list": []}', [], []),
    ('```json\n{\n  "hallucination list": [\n    "opened in 1998"\n  ]\n}\n```', ["opened in 1998"], []),
    ("Sure! {'hallucination list': ['opened in 1998']}", ["opened in 1998"], []),
    ('<think>The year differs.</think>{"hallucination list": ["1998"]}', ["1998"], ["reasoning removed"]),
    ('["opened in 1998"]', ["opened in 1998"], ["bare string item", "no 'hallucination list' key"]),
    ('{"hallucination list": ["opened in 1998", "free par', ["opened in 1998"], ["truncated"]),
])
def test_span_answers_are_read_tolerantly(raw, texts, repairs):
    result = read_span_answer(raw)
    assert result.ok and [item.text for item in result.items] == texts
    assert result.repairs == repairs and result.raw == raw


@pytest.mark.parametrize("raw", ["The answer is fine.", "", '{"hallucination list": "none"}',
                                 "<think>still thinking about the"])
def test_unreadable_span_answers_fail(raw):
    result = read_span_answer(raw)
    assert not result.ok and result.items == [] and result.error


def test_verdicts_in_the_usual_shapes():
    assert read_verdicts('{"1": "supported", "2": "Unsupported", "3": "no_claim"}', 3).by_number == {
        1: "supported", 2: "unsupported", 3: "no claim"}
    assert read_verdicts("1: contradicted\n2. supported", 2).by_number == {1: "contradicted", 2: "supported"}
    in_order = read_verdicts('["supported", "unsupported"]', 2)
    assert in_order.by_number == {1: "supported", 2: "unsupported"}
    assert in_order.repairs == ["verdicts in order, without numbers"]


def test_verdict_problems_are_counted():
    result = read_verdicts('{"1": "supported", "1": "unsupported", "4": "supported"}', 3)
    assert result.by_number == {1: "supported"} and result.conflicting == 1 and result.out_of_range == 1
    assert result.missing == [2, 3] and result.ok
    garbage = read_verdicts("I am not sure.", 2)
    assert not garbage.ok and garbage.missing == [1, 2]
    assert not read_verdicts('["supported"]', 2).ok  # one unnumbered verdict for two statements: unreadable


def test_strip_reasoning():
    assert strip_reasoning("<think>a\nb</think>\n[]") == ("\n[]", True)
    assert strip_reasoning("[]") == ("[]", False)


def test_prompts_carry_source_question_and_response():
    qa = prompts.span_messages("QA", "Passage 1: X.", "Y.", "Why?")[0]["content"]
    assert qa.startswith("Below is a question:\nWhy?\n\nBelow are related passages:\nPassage 1: X.")
    assert "\nY.\n\n" in qa and '{"hallucination list": []}' in qa and qa.endswith("Output:")
    d2t = prompts.span_messages("Data2txt", '{"a": 1}', "A is 1.")[0]["content"]
    assert "structured data" in d2t and "overview" in d2t and "news" not in d2t
    claims = prompts.claims_messages("Summary", "Article.", "One.  Two\nlines.", ["One.", "Two\nlines."])[0]
    assert "1. One.\n2. Two lines.\n\n" in claims["content"]
    with pytest.raises(InputError, match="question"):
        prompts.span_messages("QA", "c", "r")


def test_settings_are_validated():
    with pytest.raises(InputError, match="needs base_url"):
        judge_settings({"model": "m"})
    with pytest.raises(InputError, match="do not apply to a llm-judge"):
        judge_settings({"base_url": "http://h/v1", "model": "m", "api_key": "sk-1"})
    with pytest.raises(InputError, match="NAME of an environment variable"):
        judge_settings({"base_url": "http://h/v1", "model": "m", "api_key_env": "sk-abc-123"})
    with pytest.raises(InputError, match="may not set model"):
        judge_settings({"base_url": "http://h/v1", "model": "m", "extra_body": {"model": "x"}})
    with pytest.raises(InputError, match="field 'prompt_version'.*sends prompt 'claims-1'"):
        judge_settings({"base_url": "http://h/v1", "model": "m", "mode": "claims", "prompt_version": "claims-0"})
    assert judge_settings({"base_url": "http://h:1/v1/", "model": "m"}).base_url == "http://h:1/v1"


def test_judge_directory_pins_settings(tmp_path):
    (tmp_path / "recipe.yaml").write_text("kind: llm-judge\nbase_url: http://127.0.0.1:8000/v1\nmodel: qwen\n"
                                          "mode: claims\nprompt_version: claims-1\ntemperature: 0.0\n")
    settings = read_judge_dir(tmp_path, {"concurrency": 8})
    assert (settings.model, settings.mode, settings.concurrency) == ("qwen", "claims", 8)
    assert settings.cache_dir == str(tmp_path.resolve() / "cache")
    (tmp_path / "recipe.yaml").write_text("kind: generative\n")
    with pytest.raises(InputError, match="kind: llm-judge"):
        read_judge_dir(tmp_path, {})


def test_cache_key_is_the_exact_request(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": 0.0}
    key = request_key("http://h/v1", body, "ragtruth-span-1")
    assert key == request_key("http://h/v1", dict(reversed(body.items())), "ragtruth-span-1")
    assert len({key, request_key("http://h/v1", body | {"temperature": 0.1}, "ragtruth-span-1"),
                request_key("http://h/v1", body, "ragtruth-span-2"),
                request_key("http://other/v1", body, "ragtruth-span-1")}) == 4
    cache = AnswerCache(tmp_path)
    assert cache.get(key) is None
    cache.put(key, {"content": "[]", "usage": None})
    assert cache.get(key)["content"] == "[]"
    cache.path(key).write_text("{broken")
    assert cache.get(key) is None  # an unreadable entry is a miss, never an error
    assert [p.name for p in tmp_path.rglob(".tmp-*")] == []


def test_retry_after_and_backoff():
    assert retry_after_seconds("2") == 2.0 and retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert 8 <= retry_after_seconds(formatdate(__import__("time").time() + 10, usegmt=True)) <= 10
    rng = random.Random(0)
    delays = [backoff_delay(k, None, base=1.0, cap=60.0, rng=rng) for k in range(8)]
    assert all(2 ** k / 2 <= d <= 2 ** k for k, d in enumerate(delays[:6])) and delays[-1] <= 60.0
    assert backoff_delay(0, 5.0, base=1.0, cap=60.0, rng=rng) == 5.0
    assert backoff_delay(0, 500.0, base=1.0, cap=60.0, rng=rng) == 60.0
