"""Training/inference token parity for the chat templates of the four model families the recipes fine-tune.

A QLoRA run trains on the token ids that TRL's ``SFTTrainer`` builds from our conversational prompt-completion
examples; the detector generates from ``prompts.render_prompt`` encoded with ``add_special_tokens=False``. If the
two prompt encodings differ (a doubled BOS, a dropped system message, another date line, a token merged across
the prompt/answer boundary), a real model silently degrades. Each case below puts a faithful copy of a real chat
template (the ``chat_template`` of the model's ``tokenizer_config.json``) on a tiny byte-level BPE tokenizer with
that family's special tokens, BOS handling and pre-tokenizer regex, runs the project's ``build_examples`` and TRL's
own dataset preparation (a real ``SFTTrainer`` built with the project's ``sft_config``), and checks that:

1. the prompt part of every training sequence (labels == -100, i.e. TRL's ``completion_mask == 0``) is exactly
   ``prompts.prompt_token_ids`` and the ids the detector feeds to ``generate`` (tokenizer saved and reloaded);
2. the trained part decodes to the JSON target plus the template's end-of-turn text, and nothing else;
3. both sequences start with exactly one BOS (none for Qwen, whose template and tokenizer add none).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import overfit_records

from ragtruth_spans.detectors.generative import prompts
from ragtruth_spans.detectors.generative.prompts import skeleton_texts
from ragtruth_spans.detectors.generative.train import DataStats, build_examples, sft_config
from ragtruth_spans.detectors.recipes import load_recipe
from ragtruth_spans.models.tiny import train_tokenizer

MAX_LENGTH = 2048  # the test contexts are short: nothing gets shortened or truncated

# --- the templates, as shipped in each model's tokenizer_config.json -------------------------------------------

# meta-llama/Llama-2-13b-chat-hf. No generation prompt: the prompt ends with " [/INST]"; a BOS per user turn.
LLAMA2_CHAT_TEMPLATE = (
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
    "{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}"
    "{% set system_message = false %}{% endif %}{% for message in loop_messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if loop.index0 == 0 and system_message != false %}"
    r"{% set content = '<<SYS>>\n' + system_message + '\n<</SYS>>\n\n' + message['content'] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}"
)

# meta-llama/Llama-3.1-8B-Instruct: BOS in the template, a system header with the knowledge cutoff and
# "Today Date: {{ date_string }}" (default "26 Jul 2024"), contents trimmed.
LLAMA31_CHAT_TEMPLATE = r"""{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"""

# mistralai/Mistral-7B-Instruct-v0.3 (current, tool-calling "v3" template): no system role of its own; the system
# text is written into the *last* user turn only, so it vanishes from a conversation that ends with an answer.
MISTRAL_V03_CHAT_TEMPLATE = r"""{%- if messages[0]["role"] == "system" %}
    {%- set system_message = messages[0]["content"] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}
{%- set user_messages = loop_messages | selectattr("role", "equalto", "user") | list %}

{#- This block checks for alternating user/assistant messages, skipping tool calling messages #}
{%- set ns = namespace() %}
{%- set ns.index = 0 %}
{%- for message in loop_messages %}
    {%- if not (message.role == "tool" or message.role == "tool_results" or (message.tool_calls is defined and message.tool_calls is not none)) %}
        {%- if (message["role"] == "user") != (ns.index % 2 == 0) %}
            {{- raise_exception("After the optional system message, conversation roles must alternate user/assistant/user/assistant/...") }}
        {%- endif %}
        {%- set ns.index = ns.index + 1 %}
    {%- endif %}
{%- endfor %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if message["role"] == "user" %}
        {%- if tools is not none and (message == user_messages[-1]) %}
            {{- "[AVAILABLE_TOOLS] [" }}
            {%- for tool in tools %}
                {%- set tool = tool.function %}
                {{- '{"type": "function", "function": {' }}
                {%- for key, val in tool.items() if key != "return" %}
                    {%- if val is string %}
                        {{- '"' + key + '": "' + val + '"' }}
                    {%- else %}
                        {{- '"' + key + '": ' + val|tojson }}
                    {%- endif %}
                    {%- if not loop.last %}
                        {{- ", " }}
                    {%- endif %}
                {%- endfor %}
                {{- "}}" }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- else %}
                    {{- "]" }}
                {%- endif %}
            {%- endfor %}
            {{- "[/AVAILABLE_TOOLS]" }}
            {%- endif %}
        {%- if loop.last and system_message is defined %}
            {{- "[INST] " + system_message + "\n\n" + message["content"] + "[/INST]" }}
        {%- else %}
            {{- "[INST] " + message["content"] + "[/INST]" }}
        {%- endif %}
    {%- elif message.tool_calls is defined and message.tool_calls is not none %}
        {{- "[TOOL_CALLS] [" }}
        {%- for tool_call in message.tool_calls %}
            {%- set out = tool_call.function|tojson %}
            {{- out[:-1] }}
            {%- if not tool_call.id is defined or tool_call.id|length != 9 %}
                {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
            {%- endif %}
            {{- ', "id": "' + tool_call.id + '"}' }}
            {%- if not loop.last %}
                {{- ", " }}
            {%- else %}
                {{- "]" + eos_token }}
            {%- endif %}
        {%- endfor %}
    {%- elif message["role"] == "assistant" %}
        {{- " " + message["content"]|trim + eos_token}}
    {%- elif message["role"] == "tool_results" or message["role"] == "tool" %}
        {%- if message.content is defined and message.content.content is defined %}
            {%- set content = message.content.content %}
        {%- else %}
            {%- set content = message.content %}
        {%- endif %}
        {{- '[TOOL_RESULTS] {"content": ' + content|string + ", " }}
        {%- if not message.tool_call_id is defined or message.tool_call_id|length != 9 %}
            {{- raise_exception("Tool call IDs should be alphanumeric strings with length 9!") }}
        {%- endif %}
        {{- '"call_id": "' + message.tool_call_id + '"}[/TOOL_RESULTS]' }}
    {%- else %}
        {{- raise_exception("Only user and assistant roles are supported, with the exception of an initial optional system message!") }}
    {%- endif %}
{%- endfor %}
"""

# mistralai/Mistral-7B-Instruct-v0.3 as first released (the v0.1/v0.2 template): a system message raises.
MISTRAL_V03_INITIAL_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
    "{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}"
    "{% else %}{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}"
)

# Qwen/Qwen2.5-7B-Instruct: ChatML with a default system prompt (replaced by ours), no BOS anywhere.
QWEN25_CHAT_TEMPLATE = r"""{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"""

# Pre-tokenizer regexes of the real tiktoken-style tokenizers (tokenizer.json, a Split before ByteLevel). They keep
# "\n\n" one piece whatever follows; GPT-2's regex (the tiny tokenizer's default) would split it before "[".
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")


@dataclass(frozen=True)
class Family:
    """A chat template with the tokenizer traits that matter for parity."""

    name: str
    template: str
    bos: str | None  # None: the family has no BOS (Qwen)
    eos: str
    control_tokens: tuple[str, ...]
    split_regex: str | None  # None: GPT-2 byte-level splitting
    completion_around: tuple[str, str]  # text the template puts before and after the assistant's content
    keeps_system_message: bool  # False: adapt_messages must fold the system text into the user message


FAMILIES = [
    Family("llama-2-chat", LLAMA2_CHAT_TEMPLATE, "<s>", "</s>", (), None, (" ", " </s>"), True),
    Family("llama-3.1-instruct", LLAMA31_CHAT_TEMPLATE, "<|begin_of_text|>", "<|eot_id|>",
           ("<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|python_tag|>"),
           LLAMA3_SPLIT, ("", "<|eot_id|>"), True),
    Family("mistral-v0.3", MISTRAL_V03_CHAT_TEMPLATE, "<s>", "</s>",
           ("[INST]", "[/INST]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[TOOL_CALLS]", "[TOOL_RESULTS]",
            "[/TOOL_RESULTS]"), None, (" ", "</s>"), False),
    Family("mistral-v0.3-initial", MISTRAL_V03_INITIAL_CHAT_TEMPLATE, "<s>", "</s>", ("[INST]", "[/INST]"), None,
           ("", "</s>"), False),
    Family("qwen2.5-instruct", QWEN25_CHAT_TEMPLATE, None, "<|im_end|>", ("<|im_start|>", "<|endoftext|>"),
           QWEN2_SPLIT, ("", "<|im_end|>\n"), True),
]
FAMILY = {family.name: family for family in FAMILIES}


@pytest.fixture(scope="module")
def base_tokenizer():
    texts = [t for r in overfit_records() for t in (r.context, r.response, r.question or "")]
    return train_tokenizer(texts, vocab_size=500, skeleton=skeleton_texts())


def family_tokenizer(base, family: Family):
    """A copy of the tiny BPE tokenizer with ``family``'s special tokens, BOS behaviour, splitting and template."""
    from tokenizers import Regex, pre_tokenizers, processors

    tok = copy.deepcopy(base)
    specials = {"eos_token": family.eos, "extra_special_tokens": list(family.control_tokens)}
    if family.bos is not None:
        specials["bos_token"] = family.bos
    tok.add_special_tokens(specials, replace_extra_special_tokens=False)
    backend = tok.backend_tokenizer
    if family.split_regex is not None:
        backend.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(family.split_regex), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if family.bos is None:
        tok.bos_token = None
    else:  # like the real tokenizers, a plain call adds BOS: the project must never let it (double BOS)
        backend.post_processor = processors.TemplateProcessing(
            single=f"{family.bos} $A", special_tokens=[(family.bos, tok.convert_tokens_to_ids(family.bos))])
    tok.chat_template = family.template
    return tok


def tiny_llama(vocab_size: int):
    """A random one-layer Llama: only the token ids it is fed matter here."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=vocab_size, hidden_size=16, intermediate_size=32,
                                        num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)).eval()


def trl_training_rows(tokenizer, records, output_dir: Path) -> list[dict]:
    """``input_ids``/``labels`` of each record as prepared by a real ``SFTTrainer`` (order of ``records``)."""
    from datasets import Dataset
    from trl import SFTTrainer

    recipe = load_recipe("tiny-cpu", [f"output_dir={output_dir}", f"data.max_length={MAX_LENGTH}"])
    stats = DataStats()
    examples = build_examples(records, tokenizer, MAX_LENGTH, stats)
    assert stats.examples == len(records) and stats.shortened == 0
    dataset = Dataset.from_list([{k: ex[k] for k in ("prompt", "completion", "chat_template_kwargs")}
                                 for ex in examples])  # the columns train() passes to SFTTrainer
    trainer = SFTTrainer(model=tiny_llama(len(tokenizer)), args=sft_config(recipe, output_dir),
                         train_dataset=dataset, processing_class=tokenizer)
    rows = list(trainer.train_dataset)
    assert len(rows) == len(records)
    return rows


def detector_prompt_ids(tokenizer, record) -> list[int]:
    """The ids the real ``GenerativeDetector.detect_batch`` feeds the model for ``record`` (its first forward pass)."""
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    model = tiny_llama(len(tokenizer))
    seen: list[list[int]] = []
    model.register_forward_pre_hook(lambda _, args, kwargs: seen.append(kwargs["input_ids"][0].tolist()),
                                    with_kwargs=True)
    result = GenerativeDetector(model, tokenizer, max_new_tokens=1, max_length=MAX_LENGTH).detect_batch([record])[0]
    assert not result.diagnostics["shortened"] and not result.diagnostics["too_long"]
    return seen[0]


def split_at_completion(row: dict) -> tuple[list[int], list[int]]:
    """(prompt ids, trained ids) of a prepared row: the trained part is one contiguous tail."""
    ids, labels = row["input_ids"], row["labels"]
    n_prompt = next(i for i, label in enumerate(labels) if label != -100)
    assert labels[n_prompt:] == ids[n_prompt:], "the completion must be trained on as one contiguous tail"
    return ids[:n_prompt], ids[n_prompt:]


def n_leading_bos(tokenizer, ids: list[int]) -> int:
    return next((i for i, t in enumerate(ids) if t != tokenizer.bos_token_id), len(ids))


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_trl_training_prompt_equals_inference_prompt(base_tokenizer, family, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = family_tokenizer(base_tokenizer, family)
    records = overfit_records()
    rows = trl_training_rows(tokenizer, records, tmp_path / "run")
    tokenizer.save_pretrained(tmp_path / "saved")  # train() saves it; the detector loads it back
    reloaded = AutoTokenizer.from_pretrained(tmp_path / "saved")

    for record, row in zip(records, rows, strict=True):
        train_prompt, trained = split_at_completion(row)
        messages = prompts.build_messages(record.task_type, record.context, record.response, record.question)
        # 1. the training prompt is exactly what the model sees at inference
        assert train_prompt == prompts.prompt_token_ids(tokenizer, messages), record.id
        inference_prompt = detector_prompt_ids(reloaded, record)
        assert train_prompt == inference_prompt, record.id
        # 2. the loss covers the target and the template's end of turn, nothing more
        before, after = family.completion_around
        assert tokenizer.decode(trained) == before + prompts.format_target(record.spans) + after, record.id
        assert trained.count(tokenizer.eos_token_id) == 1  # the end-of-turn token, as a token: generation stops
        # 3. one BOS (none for Qwen), at the start, in both
        expected_bos = 0 if family.bos is None else 1
        for ids in (row["input_ids"], inference_prompt):
            assert n_leading_bos(tokenizer, ids) == expected_bos
            assert expected_bos == 0 or ids.count(tokenizer.bos_token_id) == 1
        # the prompt the model learns from carries the whole instruction, once
        prompt_text = tokenizer.decode(train_prompt)
        assert prompt_text.count(prompts.SYSTEM_PROMPT) == 1, record.id
        assert prompt_text.count("Response to check:\n" + record.response) == 1, record.id

    assert prompts.supports_system_role(tokenizer) == family.keeps_system_message

    # the checks have teeth: the usual mistake (encoding the rendered prompt with special tokens) is caught
    if family.bos is not None:
        text = prompts.render_prompt(tokenizer, prompts.build_messages("Summary", "c", "r"))
        assert n_leading_bos(tokenizer, tokenizer(text)["input_ids"]) == 2


def test_llama31_date_line_comes_from_chat_template_kwargs(base_tokenizer, tmp_path, monkeypatch):
    """The date travels through the dataset's chat_template_kwargs column, not the template's default."""
    monkeypatch.setitem(prompts.CHAT_TEMPLATE_KWARGS, "date_string", "03 Feb 2031")
    tokenizer = family_tokenizer(base_tokenizer, FAMILY["llama-3.1-instruct"])
    record = overfit_records()[0]
    train_prompt, _ = split_at_completion(trl_training_rows(tokenizer, [record], tmp_path)[0])
    assert "Cutting Knowledge Date: December 2023\nToday Date: 03 Feb 2031\n\n" in tokenizer.decode(train_prompt)
    assert train_prompt == detector_prompt_ids(tokenizer, record)


def test_mistral_system_text_is_folded_like_the_template_folds_it(base_tokenizer):
    """Mistral's own placement (system text + blank line + user text in one [INST]) is what adapt_messages makes."""
    tokenizer = family_tokenizer(base_tokenizer, FAMILY["mistral-v0.3"])
    messages = prompts.build_messages("Summary", "ARTICLE", "RESP")
    native = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert prompts.render_prompt(tokenizer, messages) == native
    assert native.startswith("<s>[INST] " + prompts.SYSTEM_PROMPT + "\n\nTask: summarization")
    adapted = prompts.adapt_messages(tokenizer, messages)
    assert [m["role"] for m in adapted] == ["user"]


@pytest.mark.parametrize("family, shipped", [(FAMILY["llama-3.1-instruct"], "llama3_1.jinja"),
                                             (FAMILY["qwen2.5-instruct"], "qwen2_5.jinja")],
                         ids=["llama-3.1", "qwen2.5"])
def test_inline_templates_match_trls_copies_of_the_hub_templates(family, shipped):
    """TRL keeps byte-exact copies of these two hub templates (to recognise models): ours must be identical."""
    import trl

    path = Path(trl.__file__).parent / "chat_templates" / shipped
    if not path.is_file():
        pytest.skip(f"this TRL version ships no {shipped}")
    assert family.template == path.read_text(encoding="utf-8")

