"""The LLM judge against a real HTTP server process on 127.0.0.1 (``judge_server.py``, started once per session):
both modes end to end, retries with Retry-After, timeouts, garbage answers, the cache, the concurrency limit,
usage and cost, the API key header, and the failures that stop a run."""

from __future__ import annotations

import json
import socket
import time

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.judge.client import EndpointError
from ragtruth_spans.detectors.loader import load_detector

ITEMS = [
    {"task": "Summary", "context": "The Grand Hotel opened in 1999 on the harbour. It has 300 rooms.",
     "response": "The Grand Hotel opened in 1998 on the harbour. It has 300 rooms."},
    {"task": "QA", "question": "How many rooms does the hotel have?",
     "context": "Passage 1: The hotel has 300 rooms and 2 pools.",
     "response": "It has 300 rooms and 2 pools, built in 1987. Would you like to book?"},
    {"task": "Data2txt", "context": '{"name": "Blue Cafe", "rating": 4.5}',
     "response": "Blue Cafe is rated 4.5 stars."},
]


def make_judge(server, tmp_path, **options):
    settings = {"base_url": server.base_url, "model": "judge-test", "cache_dir": str(tmp_path / "cache"),
                "backoff_base": 0.01, "backoff_max": 2.0, "max_retries": 2, "timeout": 10.0} | options
    return load_detector("llm-judge", **settings)


def test_span_mode_end_to_end(judge_server, tmp_path):
    results = make_judge(judge_server, tmp_path).detect_batch(ITEMS)

    first, second, third = results
    start = ITEMS[0]["response"].index("1998")
    assert [(s.start, s.end, s.type) for s in first.spans] == [(start, start + 4, None)]
    assert first.score == 1.0 and first.ok
    assert [(s.start, s.text) for s in second.spans] == [(ITEMS[1]["response"].index("1987"), "1987")]
    assert third.spans == [] and third.score == 0.0 and third.ok
    assert first.diagnostics["judge"]["raw"] == '{"hallucination list": ["1998"]}'
    assert first.diagnostics["judge"]["repairs"] == [] and first.diagnostics["unaligned"] == []
    sent = judge_server.requests()
    assert len(sent) == 3
    body = sent[0]["body"]
    assert body["model"] == "judge-test" and body["temperature"] == 0.0 and body["max_tokens"] == 1024
    assert [m["role"] for m in body["messages"]] == ["user"]
    prompts = {r["body"]["messages"][0]["content"] for r in sent}
    assert any(ITEMS[1]["question"] in p and "hallucination list" in p for p in prompts)


def test_claims_mode_end_to_end(judge_server, tmp_path):
    first, second, third = make_judge(judge_server, tmp_path, mode="claims").detect_batch(ITEMS)

    sentence = "The Grand Hotel opened in 1998 on the harbour."
    assert [(s.start, s.end, s.type) for s in first.spans] == [(0, len(sentence), "Evident Baseless Info")]
    assert first.score == 0.5  # one of two factual sentences unsupported
    assert [s.text for s in second.spans] == ["It has 300 rooms and 2 pools, built in 1987."]
    assert second.score == 1.0  # the question back is "no claim", not counted
    assert [c["verdict"] for c in second.diagnostics["judge"]["claims"]] == ["unsupported", "no claim"]
    assert third.spans == [] and third.score == 0.0
    assert first.diagnostics["missing_verdicts"] == 0
    contents = [r["body"]["messages"][0]["content"] for r in judge_server.requests()]
    assert any("1. The Grand Hotel opened in 1998 on the harbour.\n2. It has 300 rooms.\n\n" in c for c in contents)


def test_claims_are_split_over_requests(judge_server, tmp_path):
    item = {"task": "Summary", "context": "A had 1 cat.", "response": "A had 1 cat. A had 2 dogs. A had 3 owls."}
    result = make_judge(judge_server, tmp_path, mode="claims", claims_per_request=2).detect_batch([item])[0]

    assert len(judge_server.requests()) == 2 and result.diagnostics["requests"] == 2
    assert [s.text for s in result.spans] == ["A had 2 dogs.", "A had 3 owls."]
    assert result.score == pytest.approx(2 / 3)


def test_retries_429_and_500_honouring_retry_after(judge_server, tmp_path):
    judge_server.script({"status": 429, "retry_after": "0.4"}, {"status": 500})
    started = time.monotonic()
    result = make_judge(judge_server, tmp_path, max_retries=2).detect_batch(ITEMS[:1])[0]

    assert time.monotonic() - started >= 0.4  # backoff_base is 0.01 s: only Retry-After explains the wait
    assert result.ok and [s.text for s in result.spans] == ["1998"]
    assert result.diagnostics["retries"] == 2 and result.diagnostics["requests"] == 1
    assert len(judge_server.requests()) == 3


def test_a_request_failing_after_its_retries_fails_only_its_item(judge_server, tmp_path):
    judge_server.script({"status": 503}, {"status": 503}, {"status": 503})
    results = make_judge(judge_server, tmp_path, max_retries=2, concurrency=1).detect_batch(ITEMS[:2])

    assert results[0].error.startswith("judge request failed: HTTP 503") and results[0].spans == []
    assert results[0].diagnostics["failed_requests"] == 1 and results[0].diagnostics["retries"] == 2
    assert results[1].ok and [s.text for s in results[1].spans] == ["1987"]


def test_bad_request_is_not_retried(judge_server, tmp_path):
    judge_server.script({"status": 400})
    result = make_judge(judge_server, tmp_path).detect_batch(ITEMS[:1])[0]

    assert "HTTP 400" in result.error and result.diagnostics["retries"] == 0
    assert len(judge_server.requests()) == 1


def test_timeout_then_retry(judge_server, tmp_path):
    judge_server.script({"delay": 1.5}, {"delay": 1.5})
    started = time.monotonic()
    failed = make_judge(judge_server, tmp_path, timeout=0.3, max_retries=0).detect_batch(ITEMS[:1])[0]
    assert time.monotonic() - started < 1.4
    assert failed.error == "judge request failed: timed out after 0.3 s (gave up after 1 attempts)"

    judge_server.reset()
    judge_server.script({"delay": 1.5})
    recovered = make_judge(judge_server, tmp_path, timeout=0.3, max_retries=1).detect_batch(ITEMS[:1])[0]
    assert recovered.ok and recovered.diagnostics["retries"] == 1


def test_garbage_answers_are_counted_not_fatal(judge_server, tmp_path):
    judge_server.script({"content": "Looks fine to me!"}, {"not_json": "<html>proxy error</html>"})
    results = make_judge(judge_server, tmp_path, concurrency=1).detect_batch(ITEMS)

    garbage, not_json, fine = results
    assert garbage.error == "unreadable judge answer: no JSON array or object found" and garbage.spans == []
    assert garbage.diagnostics["malformed"] == 1 and garbage.diagnostics["judge"]["raw"] == "Looks fine to me!"
    assert not_json.error.startswith("judge request failed: the endpoint's answer is not a chat completion")
    assert not_json.diagnostics["failed_requests"] == 1 and not_json.diagnostics["malformed"] == 0
    assert fine.ok and fine.score == 0.0

    judge_server.script({"content": "I cannot judge these statements."})
    claims = make_judge(judge_server, tmp_path, mode="claims", cache=False).detect_batch(ITEMS[:1])[0]
    assert claims.error == "unreadable judge answer: no verdict in 1 of 1 answer(s)"
    assert claims.diagnostics["malformed"] == 1 and claims.diagnostics["missing_verdicts"] == 2


def test_cache_makes_reruns_free_and_keys_on_settings(judge_server, tmp_path):
    first = make_judge(judge_server, tmp_path).detect_batch(ITEMS)
    assert len(judge_server.requests()) == 3

    again = make_judge(judge_server, tmp_path).detect_batch(ITEMS)
    assert len(judge_server.requests()) == 3  # nothing sent
    assert [d.spans for d in again] == [d.spans for d in first] and [d.score for d in again] == [1.0, 1.0, 0.0]
    assert all(d.diagnostics["cache_hits"] == 1 and d.diagnostics["requests"] == 0 for d in again)
    assert all(d.diagnostics["prompt_tokens"] == 0 for d in again)  # cached answers are not billed again

    make_judge(judge_server, tmp_path, temperature=0.5).detect_batch(ITEMS)
    make_judge(judge_server, tmp_path, cache=False).detect_batch(ITEMS)
    assert len(judge_server.requests()) == 9  # another temperature is another request; no cache sends all


def test_interrupted_run_resumes_from_the_cache(judge_server, tmp_path):
    judge_server.script({}, {"status": 401})
    with pytest.raises(EndpointError, match="HTTP 401.*check the API key"):
        make_judge(judge_server, tmp_path, concurrency=1).detect_batch(ITEMS)

    judge_server.reset()
    results = make_judge(judge_server, tmp_path, concurrency=1).detect_batch(ITEMS)
    assert [d.diagnostics["cache_hits"] for d in results] == [1, 0, 0]
    assert len(judge_server.requests()) == 2


def test_concurrency_limit(judge_server, tmp_path):
    judge_server.script(delay=0.3)
    items = [dict(ITEMS[0], response=f"The Grand Hotel opened in {1990 + k}.") for k in range(6)]
    started = time.monotonic()
    results = make_judge(judge_server, tmp_path, concurrency=3).detect_batch(items)

    assert judge_server.log()["max_in_flight"] == 3
    assert time.monotonic() - started >= 0.6  # two waves of three
    assert [d.spans[0].text for d in results] == [str(1990 + k) for k in range(6)]  # in input order


def test_usage_and_cost(judge_server, tmp_path):
    judge = make_judge(judge_server, tmp_path, price_prompt_per_1k=1.0, price_completion_per_1k=2.0)
    results = judge.detect_batch(ITEMS)

    reported = {r["body"]["messages"][0]["content"]: r["usage"] for r in judge_server.requests()}
    total_prompt = sum(u["prompt_tokens"] for u in reported.values())
    total_completion = sum(u["completion_tokens"] for u in reported.values())
    assert sum(d.diagnostics["prompt_tokens"] for d in results) == total_prompt
    assert sum(d.diagnostics["completion_tokens"] for d in results) == total_completion
    assert sum(d.diagnostics["cost"] for d in results) == pytest.approx((total_prompt + 2 * total_completion) / 1000)

    judge_server.script({"no_usage": True})
    missing = make_judge(judge_server, tmp_path, cache=False).detect_batch(ITEMS[:1])[0]
    assert missing.diagnostics["usage_missing"] == 1 and missing.diagnostics["prompt_tokens"] == 0
    assert missing.diagnostics["cost"] is None


def test_api_key_comes_from_the_named_environment_variable(judge_server, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "secret-123")
    judge = make_judge(judge_server, tmp_path, api_key_env="JUDGE_TEST_KEY")
    result = judge.detect_batch(ITEMS[:1])[0]

    assert judge_server.requests()[0]["authorization"] == "Bearer secret-123"
    assert "secret-123" not in json.dumps(judge.describe()) + json.dumps(result.diagnostics)
    make_judge(judge_server, tmp_path, cache=False).detect_batch(ITEMS[:1])
    assert judge_server.requests()[1]["authorization"] is None

    monkeypatch.delenv("JUDGE_TEST_KEY")
    with pytest.raises(InputError, match="JUDGE_TEST_KEY .* not set"):
        make_judge(judge_server, tmp_path, api_key_env="JUDGE_TEST_KEY")


def test_unknown_model_stops_the_run(judge_server, tmp_path):
    with pytest.raises(EndpointError, match="does not exist.*check base_url"):
        make_judge(judge_server, tmp_path, model="no-such-model").detect_batch(ITEMS)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_endpoint_stops_after_consecutive_failures(tmp_path):
    judge = load_detector("llm-judge", base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="m", cache=False,
                          max_retries=1, backoff_base=0.01, max_consecutive_failures=2, concurrency=1)
    with pytest.raises(EndpointError, match=r"2 request\(s\) in a row failed .*connection error"):
        judge.detect_batch(ITEMS)


def test_unwritable_cache_is_one_input_error(judge_server, tmp_path):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    with pytest.raises(InputError, match="cannot write the judge's answer cache"):
        make_judge(judge_server, tmp_path, cache_dir=str(blocker)).detect_batch(ITEMS[:1])


@pytest.mark.parametrize("mode", ["span", "claims"])
@pytest.mark.parametrize("blank", ["  \n", "\u3000", "\u200b"])
def test_a_blank_response_is_refused_and_not_sent(judge_server, tmp_path, mode, blank):
    with pytest.raises(InputError, match="field 'response': is empty or blank"):
        make_judge(judge_server, tmp_path, mode=mode).detect_batch([ITEMS[0], dict(ITEMS[0], response=blank)])
    assert judge_server.requests() == []
