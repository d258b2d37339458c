"""A chat completion assembled from its streamed chunks (:mod:`ragtruth_spans.serving.assemble`): texts joined,
tool calls merged by index, log probabilities extended, a repeated role kept once, the usage of the last chunk."""

from __future__ import annotations

from ragtruth_spans.serving.assemble import accumulate, assemble

HEAD = {"id": "chatcmpl-9", "object": "chat.completion.chunk", "created": 7, "model": "m"}


def _chunk(*choices: dict, **top) -> dict:
    return HEAD | {"choices": list(choices)} | top


def test_text_role_finish_reason_usage_and_top_level_fields() -> None:
    chunks = [_chunk({"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None},
                     system_fingerprint="fp_1"),
              _chunk({"index": 0, "delta": {"role": "assistant", "content": "It opened"}}),  # vLLM repeats the role
              _chunk({"index": 0, "delta": {"content": " in 1999.", "reasoning_content": None}}),
              _chunk({"index": 0, "delta": {}, "finish_reason": "stop", "stop_reason": None}),
              _chunk(usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7})]
    out = assemble(chunks)
    assert out == {"id": "chatcmpl-9", "object": "chat.completion", "created": 7, "model": "m",
                   "system_fingerprint": "fp_1", "usage": {"prompt_tokens": 3, "completion_tokens": 4,
                                                           "total_tokens": 7},
                   "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None, "stop_reason": None,
                                "message": {"role": "assistant", "content": "It opened in 1999.",
                                            "reasoning_content": None}}]}


def test_tool_calls_are_merged_by_index_and_content_stays_null() -> None:
    chunks = [_chunk({"index": 0, "delta": {"role": "assistant", "tool_calls": [
                  {"index": 0, "id": "call_1", "type": "function", "function": {"name": "book", "arguments": ""}}]}}),
              _chunk({"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"year\""}}]}}),
              _chunk({"index": 0, "delta": {"tool_calls": [
                  {"index": 0, "function": {"arguments": ": 1999}"}},
                  {"index": 1, "id": "call_2", "type": "function", "function": {"name": "pay", "arguments": "{}"}}]}}),
              _chunk({"index": 0, "delta": {}, "finish_reason": "tool_calls"})]
    message = assemble(chunks)["choices"][0]["message"]
    assert message["content"] is None
    assert [(t["id"], t["function"]["name"], t["function"]["arguments"]) for t in message["tool_calls"]] == [
        ("call_1", "book", "{\"year\": 1999}"), ("call_2", "pay", "{}")]


def test_several_choices_and_log_probabilities() -> None:
    token = {"token": "It", "logprob": -0.1, "bytes": [73, 116], "top_logprobs": []}
    chunks = [_chunk({"index": 1, "delta": {"content": "B"}, "logprobs": {"content": [token], "refusal": None}},
                     {"index": 0, "delta": {"content": "A"}}),
              _chunk({"index": 1, "delta": {"content": "b"}, "logprobs": {"content": [token | {"token": "b"}]},
                      "finish_reason": "length"})]
    out = assemble(chunks)
    assert [c["message"]["content"] for c in out["choices"]] == ["A", "Bb"]
    assert [t["token"] for t in out["choices"][1]["logprobs"]["content"]] == ["It", "b"]
    assert out["choices"][1]["finish_reason"] == "length" and out["choices"][0]["finish_reason"] is None
    assert chunks[0]["choices"][0]["logprobs"]["content"] == [token]  # the chunks are left as they came


def test_a_null_never_erases_and_identifiers_are_replaced() -> None:
    acc = accumulate({}, {"content": "It", "refusal": None, "type": "function"})
    accumulate(acc, {"content": None, "refusal": "No", "type": "function"})
    assert acc == {"content": "It", "refusal": "No", "type": "function"}
