"""Detection prompts and the target format of the generative detector.

The model reads one chat: a system message (the task, the four RAGTruth hallucination types, the output format)
and a user message (the source of the task type, then the response to check). It answers with the **target**:
a JSON array, in order of appearance in the response, of ``{"text": <verbatim substring of the response>,
"type": <one of HALLUCINATION_TYPES>}``; ``[]`` for a clean response. The array is serialised with
``json.dumps(items, ensure_ascii=False)`` (no indentation), e.g.::

    [{"text": "opened in 1998", "type": "Evident Conflict"}, {"text": "free parking", "type": "Evident Baseless Info"}]

Prompts go through the tokenizer's own chat template. A tokenizer without one gets :data:`FALLBACK_CHAT_TEMPLATE`
(plain ``### System/User/Assistant`` sections ending the answer with the EOS token); training stores it in the
saved tokenizer, so training and inference render identically. Templates that reject a ``system`` role, or drop it
from a conversation that ends with an answer (Mistral v0.3), get the system text prepended to the user message
(:func:`adapt_messages`).

Token counts in :func:`fit_context` include every special token the template adds; the text returned by
:func:`render_prompt` already contains them, so encode it with ``add_special_tokens=False``
(or use :func:`prompt_token_ids`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragtruth_spans.core.errors import InputError, check_choice
from ragtruth_spans.core.types import HALLUCINATION_TYPES, TASK_TYPES, Span

TRUNCATION_MARK = " …"
"""Appended to a context that :func:`fit_context` shortened."""

CHAT_TEMPLATE_KWARGS: dict[str, Any] = {"date_string": "26 Jul 2024"}
"""Extra template variables, fixed so that templates that print today's date (Llama 3.x) render the same prompt
at training and inference time. Templates that do not use them ignore them."""

FALLBACK_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ '### System:\n' + message['content'] + '\n\n' }}"
    "{% elif message['role'] == 'user' %}{{ '### User:\n' + message['content'] + '\n\n' }}"
    "{% elif message['role'] == 'assistant' %}{{ '### Assistant:\n' + message['content'] + eos_token }}"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '### Assistant:\n' }}{% endif %}"
)
"""Plain-text chat template used when a tokenizer has none (e.g. a base, non-chat model)."""

TYPE_DEFINITIONS: dict[str, str] = {
    "Evident Conflict": "states something that clearly contradicts the source (e.g. a wrong name, number or date).",
    "Subtle Conflict": "departs from the source in a way that subtly changes its meaning "
                       "(e.g. a term with a different connotation, a softened or strengthened claim).",
    "Evident Baseless Info": "adds information that is not in the source and cannot be inferred from it.",
    "Subtle Baseless Info": "adds content that goes beyond the source, such as an inference, an opinion or a "
                            "detail that is plausible but not supported by it.",
}

SYSTEM_PROMPT = (
    "You are a meticulous fact-checker. You receive a source and a response that was written from it. "
    "Find every part of the response that is not supported by the source (a hallucination) and classify it:\n"
    + "".join(f"- {name}: {TYPE_DEFINITIONS[name]}\n" for name in HALLUCINATION_TYPES)
    + "\nAnswer with a JSON array only, listing the hallucinated spans in their order in the response. Each item is "
    '{"text": "<the span copied verbatim from the response>", "type": "<one of the four types>"}. '
    "Copy the shortest span that carries the unsupported claim. "
    "If the response is fully supported by the source, answer []."
)

_USER_TEMPLATES: dict[str, str] = {
    "QA": (
        "Task: question answering. The response answers the question using only the passages below.\n\n"
        "Question:\n{question}\n\n"
        "Passages:\n{context}\n\n"
        "Response to check:\n{response}"
    ),
    "Summary": (
        "Task: summarization. The response summarizes the article below.\n\n"
        "Article:\n{context}\n\n"
        "Response to check:\n{response}"
    ),
    "Data2txt": (
        "Task: data-to-text. The response is an overview of a business written from the structured data below "
        "(JSON). A null value means the information is unknown: a response that states a value for it is not "
        "supported by the data.\n\n"
        "Data:\n{context}\n\n"
        "Response to check:\n{response}"
    ),
}


def skeleton_texts() -> list[str]:
    """Prompt and target text that every detection example contains (the tiny tokenizer learns its merges)."""
    targets = [json.dumps([{"text": "x", "type": t}, {"text": "y", "type": t}]) for t in HALLUCINATION_TYPES]
    return [SYSTEM_PROMPT, *TYPE_DEFINITIONS.values(), *_USER_TEMPLATES.values(), "[]", *targets]


def build_messages(task_type: str, context: str, response: str,
                   question: str | None = None) -> list[dict[str, str]]:
    """Chat messages (system + user) asking for the hallucinated spans of ``response`` given ``context``."""
    check_choice(task_type, TASK_TYPES, "task type", field="task_type")
    if task_type == "QA" and question is None:
        raise InputError("a QA prompt needs the question", field="question")
    user = _USER_TEMPLATES[task_type].format(question=question or "", context=context, response=response)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def format_target(spans: Sequence[Span]) -> str:
    """The JSON target for gold ``spans``, sorted by start; each span needs ``text`` and ``type``."""
    items = []
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        if span.text is None or span.type is None:
            raise InputError(f"span [{span.start}, {span.end}) needs both text and type to form a target")
        items.append({"text": span.text, "type": span.type})
    return json.dumps(items, ensure_ascii=False)


def chat_template_of(tokenizer: Any) -> str:
    """The tokenizer's chat template, or :data:`FALLBACK_CHAT_TEMPLATE` when it has none."""
    return getattr(tokenizer, "chat_template", None) or FALLBACK_CHAT_TEMPLATE


def supports_system_role(tokenizer: Any) -> bool:
    """Whether the chat template keeps a ``system`` message both in the generation prompt and in the training
    conversation (prompt + answer).

    Some templates raise on it (Gemma's, Mistral's first ones); Mistral v0.3's writes the system text into the
    *last* user turn only, so it disappears once an answer follows: training would drop what inference shows.
    """
    marker = "SYSTEM-ROLE-PROBE"
    probe = [{"role": "system", "content": marker}, {"role": "user", "content": "u"}]
    template = chat_template_of(tokenizer)
    try:
        prompt = tokenizer.apply_chat_template(probe, chat_template=template, tokenize=False,
                                               add_generation_prompt=True, **CHAT_TEMPLATE_KWARGS)
        full = tokenizer.apply_chat_template(probe + [{"role": "assistant", "content": "a"}], chat_template=template,
                                             tokenize=False, **CHAT_TEMPLATE_KWARGS)
    except Exception:  # jinja2 raises TemplateError via raise_exception(); any failure means "not supported"
        return False
    return marker in prompt and marker in full


def adapt_messages(tokenizer: Any, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """``messages`` as the template renders them the same way with and without the answer: a system message that
    :func:`supports_system_role` rejects is prepended (+ a blank line) to the first user one."""
    if not messages or messages[0]["role"] != "system" or supports_system_role(tokenizer):
        return messages
    system, rest = messages[0]["content"], [dict(m) for m in messages[1:]]
    rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    return rest


def render_prompt(tokenizer: Any, messages: list[dict[str, str]]) -> str:
    """The prompt text for generation (chat template with ``add_generation_prompt=True``).

    The text includes the template's special tokens (e.g. BOS): encode it with ``add_special_tokens=False``.
    """
    return tokenizer.apply_chat_template(adapt_messages(tokenizer, messages), chat_template=chat_template_of(tokenizer),
                                         tokenize=False, add_generation_prompt=True, **CHAT_TEMPLATE_KWARGS)


def prompt_token_ids(tokenizer: Any, messages: list[dict[str, str]]) -> list[int]:
    """Token ids of :func:`render_prompt` — exactly the prompt tokens the model saw in training."""
    return tokenizer(render_prompt(tokenizer, messages), add_special_tokens=False)["input_ids"]


def render_conversation(tokenizer: Any, messages: list[dict[str, str]], target: str) -> str:
    """The whole training sequence as text: ``messages`` + the assistant ``target``, through the chat template
    (no generation prompt; special tokens included, so encode with ``add_special_tokens=False``)."""
    chat = adapt_messages(tokenizer, messages + [{"role": "assistant", "content": target}])
    return tokenizer.apply_chat_template(chat, chat_template=chat_template_of(tokenizer), tokenize=False,
                                         **CHAT_TEMPLATE_KWARGS)


def _token_count(tokenizer: Any, messages: list[dict[str, str]], target: str) -> int:
    """Tokens of the whole training sequence (prompt + ``target``), or of the generation prompt if target is ''."""
    text = render_conversation(tokenizer, messages, target) if target else render_prompt(tokenizer, messages)
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def fit_context(tokenizer: Any, task_type: str, context: str, response: str, question: str | None,
                target: str, max_length: int) -> tuple[str, bool]:
    """Shorten ``context`` (never ``response``, ``question`` or ``target``) so that prompt + target fits.

    Counts tokens of the full chat (template tokens included); with ``target=""`` it counts the generation prompt
    only (inference passes ``max_length = model window - generation budget``). The head of the context is kept and
    :data:`TRUNCATION_MARK` appended. Returns ``(context, shortened)``. Raises :class:`InputError` when even an
    empty context does not fit.
    """
    def length(ctx: str) -> int:
        return _token_count(tokenizer, build_messages(task_type, ctx, response, question), target)

    total = length(context)
    if total <= max_length:
        return context, False
    overhead = length(TRUNCATION_MARK)
    if overhead > max_length:
        raise InputError(f"the prompt without context and the target need {overhead} tokens, more than "
                         f"max_length={max_length}; the response or the target is too long to fit")
    context_ids = tokenizer(context, add_special_tokens=False)["input_ids"]
    # Offsets let us cut the original string at a token boundary instead of decoding (decoding can alter text).
    keep = max(0, min(len(context_ids), max_length - overhead))
    while True:
        cut = _char_offset(tokenizer, context, context_ids, keep)
        shortened = context[:cut].rstrip() + TRUNCATION_MARK
        excess = length(shortened) - max_length
        if excess <= 0:
            return shortened, True
        if keep == 0:  # cannot happen after the overhead check, kept as a guard against template quirks
            raise InputError(f"cannot fit the prompt in max_length={max_length} tokens")
        keep = max(0, keep - max(excess, 1))


def _char_offset(tokenizer: Any, text: str, ids: list[int], n_tokens: int) -> int:
    """Character length of the first ``n_tokens`` tokens of ``text``."""
    if n_tokens >= len(ids):
        return len(text)
    if n_tokens == 0:
        return 0
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return int(enc["offset_mapping"][n_tokens - 1][1])
    except (NotImplementedError, TypeError, ValueError, KeyError):  # slow tokenizers have no offsets
        return len(tokenizer.decode(ids[:n_tokens], skip_special_tokens=True))
