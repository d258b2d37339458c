"""Prompts, target format and context shortening (tiny byte-level BPE tokenizer, no download)."""

from __future__ import annotations

import json

import pytest

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.types import Span
from ragtruth_spans.detectors.generative import prompts
from ragtruth_spans.detectors.generative.prompts import skeleton_texts
from ragtruth_spans.models.tiny import train_tokenizer

CONTEXT = "Passage 1: The Grand Hotel opened in 1999 on the harbour front. " * 40
RESPONSE = "The Grand Hotel opened in 1998 on the harbour."
QUESTION = "When did the Grand Hotel open?"
TARGET = '[{"text": "opened in 1998", "type": "Evident Conflict"}]'


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer([CONTEXT, RESPONSE, QUESTION], vocab_size=600, skeleton=skeleton_texts())


def test_build_messages_per_task():
    qa = prompts.build_messages("QA", "PASSAGES", "RESP", "QUESTION?")
    assert [m["role"] for m in qa] == ["system", "user"]
    assert all(t in qa[0]["content"] for t in ("Evident Conflict", "Subtle Conflict", "Evident Baseless Info",
                                               "Subtle Baseless Info"))
    user = qa[1]["content"]
    assert user.index("QUESTION?") < user.index("PASSAGES") < user.index("RESP")
    summary = prompts.build_messages("Summary", "ARTICLE", "RESP")[1]["content"]
    assert "Article:\nARTICLE" in summary and summary.endswith("Response to check:\nRESP")
    d2t = prompts.build_messages("Data2txt", '{"parking": null}', "RESP")[1]["content"]
    assert "null value means the information is unknown" in d2t and '{"parking": null}' in d2t


def test_build_messages_rejects_bad_input():
    with pytest.raises(InputError, match="unknown task type 'Chat'"):
        prompts.build_messages("Chat", "c", "r")
    with pytest.raises(InputError, match="question"):
        prompts.build_messages("QA", "c", "r")


def test_format_target_sorted_verbatim_json():
    spans = [Span(30, 42, "Evident Baseless Info", "free parking"),
             Span(4, 18, "Evident Conflict", "opened in 1998"),
             Span(50, 55, "Subtle Conflict", "café \"ü\"")]
    target = prompts.format_target(spans)
    assert target == ('[{"text": "opened in 1998", "type": "Evident Conflict"}, '
                      '{"text": "free parking", "type": "Evident Baseless Info"}, '
                      '{"text": "café \\"ü\\"", "type": "Subtle Conflict"}]')
    assert json.loads(target)[2]["text"] == 'café "ü"'
    assert prompts.format_target([]) == "[]"
    with pytest.raises(InputError, match=r"\[0, 3\) needs both text and type"):
        prompts.format_target([Span(0, 3, None, "abc")])


def test_render_prompt_is_prefix_of_training_sequence(tokenizer):
    messages = prompts.build_messages("QA", "Passage 1: x", RESPONSE, QUESTION)
    text = prompts.render_prompt(tokenizer, messages)
    assert text.startswith(tokenizer.bos_token) and text.endswith("<|assistant|>")
    prompt_ids = prompts.prompt_token_ids(tokenizer, messages)
    full = tokenizer.apply_chat_template(messages + [{"role": "assistant", "content": TARGET}], tokenize=True,
                                         return_dict=True)["input_ids"]
    assert full[: len(prompt_ids)] == prompt_ids  # TRL's completion mask then covers exactly target + EOS
    assert tokenizer.decode(full[len(prompt_ids):]) == TARGET + tokenizer.eos_token


def test_fallback_template_for_tokenizer_without_one():
    tok = train_tokenizer([RESPONSE], vocab_size=400, skeleton=skeleton_texts())
    tok.chat_template = None
    text = prompts.render_prompt(tok, prompts.build_messages("Summary", "ARTICLE", "RESP"))
    assert text.startswith("<s>### System:\n") and "### User:\n" in text and text.endswith("### Assistant:\n")


def test_system_message_folded_when_template_rejects_it(tokenizer):
    tok = train_tokenizer([RESPONSE], vocab_size=400, skeleton=skeleton_texts())
    tok.chat_template = ("{% for m in messages %}{% if m['role'] == 'system' %}"
                         "{{ raise_exception('System role not supported') }}{% endif %}"
                         "{{ '<|' + m['role'] + '|>' + m['content'] }}{% endfor %}"
                         "{% if add_generation_prompt %}<|assistant|>{% endif %}")
    messages = prompts.build_messages("Summary", "ARTICLE", "RESP")
    assert not prompts.supports_system_role(tok)
    adapted = prompts.adapt_messages(tok, messages)
    assert [m["role"] for m in adapted] == ["user"]
    assert adapted[0]["content"].startswith(prompts.SYSTEM_PROMPT) and adapted[0]["content"].endswith("RESP")
    assert prompts.render_prompt(tok, messages).startswith("<|user|>You are a meticulous")
    assert prompts.adapt_messages(tokenizer, messages) == messages


def _n_tokens(tokenizer, context, target):
    messages = prompts.build_messages("QA", context, RESPONSE, QUESTION)
    if target:
        messages.append({"role": "assistant", "content": target})
        return len(tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True)["input_ids"])
    return len(prompts.prompt_token_ids(tokenizer, messages))


@pytest.mark.parametrize("target", [TARGET, ""])
def test_fit_context_shortens_only_the_context(tokenizer, target):
    full = _n_tokens(tokenizer, CONTEXT, target)
    max_length = full - 200
    context, shortened = prompts.fit_context(tokenizer, "QA", CONTEXT, RESPONSE, QUESTION, target, max_length)
    assert shortened
    assert context.endswith(prompts.TRUNCATION_MARK)
    assert CONTEXT.startswith(context[: -len(prompts.TRUNCATION_MARK)])  # head kept verbatim
    n = _n_tokens(tokenizer, context, target)
    assert max_length - 5 <= n <= max_length  # fits, and not cut much more than needed
    user = prompts.build_messages("QA", context, RESPONSE, QUESTION)[1]["content"]
    assert user.endswith(RESPONSE) and QUESTION in user


def test_fit_context_leaves_short_context_alone(tokenizer):
    assert prompts.fit_context(tokenizer, "QA", "Passage 1: x", RESPONSE, QUESTION, TARGET, 4096) == \
        ("Passage 1: x", False)


def test_fit_context_refuses_when_response_cannot_fit(tokenizer):
    with pytest.raises(InputError, match="max_length=50"):
        prompts.fit_context(tokenizer, "QA", CONTEXT, RESPONSE, QUESTION, TARGET, 50)


class _NoOffsets:
    """A tokenizer that cannot return offsets (as a slow, Python tokenizer): everything else is delegated."""

    def __init__(self, fast):
        self._fast = fast

    def __call__(self, text, **kwargs):
        if kwargs.get("return_offsets_mapping"):
            raise NotImplementedError("return_offset_mapping is not available when using Python tokenizers")
        return self._fast(text, **kwargs)

    def __getattr__(self, name):
        return getattr(self._fast, name)


def test_fit_context_without_offsets_cuts_where_the_decoded_tokens_end(tokenizer):
    """A tokenizer without offsets falls back to the length of the decoded first tokens; on plain ASCII text that
    is the same cut, so both give the same shortened context."""
    max_length = _n_tokens(tokenizer, CONTEXT, TARGET) - 200
    with_offsets = prompts.fit_context(tokenizer, "QA", CONTEXT, RESPONSE, QUESTION, TARGET, max_length)
    without = prompts.fit_context(_NoOffsets(tokenizer), "QA", CONTEXT, RESPONSE, QUESTION, TARGET, max_length)
    assert without[1] and without[0].endswith(prompts.TRUNCATION_MARK)
    assert CONTEXT.startswith(without[0][: -len(prompts.TRUNCATION_MARK)])
    assert _n_tokens(tokenizer, without[0], TARGET) <= max_length
    assert len(without[0]) <= len(with_offsets[0]) + 2
