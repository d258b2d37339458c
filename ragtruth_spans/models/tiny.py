"""Tiny random models and their tokenizers, built in code (no download) for CPU tests and the quickstart: a Llama
(generative and token-classification decoders) and a BERT encoder (token classification).

The Llama's tokenizer is a byte-level BPE trained on the fly with ``tokenizers`` on the given texts plus a
``skeleton`` the caller passes (the generative family passes its prompt templates and target skeleton,
:func:`ragtruth_spans.detectors.generative.prompts.skeleton_texts`, so prompts tokenize compactly). The BERT's
is a lower-casing WordPiece (BERT's normaliser and pre-tokenizer) trained on the texts alone, with BERT's special
tokens and pair template (``[CLS] A [SEP] B [SEP]``, token type ids 0 / 1). The Llama's special tokens:
``<s>`` (BOS), ``</s>`` (EOS), ``<pad>``, and role markers ``<|system|>``, ``<|user|>``, ``<|assistant|>``,
``<|end|>``; the chat template puts a special token at every message boundary, so a prompt's tokens are always a
prefix of prompt + answer tokens.

The Llama's linear weights are snapped to the 4-bit NF4 grid (quantised and dequantised once, blocksize 64),
so loading ``base_model/`` in 4-bit or in full precision gives the same network. Everything is deterministic
given ``seed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

TINY = "tiny"
"""``model.name_or_path`` value that builds a tiny random model in code (this module) rather than loading one."""
BASE_MODEL_DIR = "base_model"
"""Where a run built on a tiny random model keeps that model (it exists nowhere else)."""

BOS, EOS, PAD = "<s>", "</s>", "<pad>"
ROLE_TOKENS = ("<|system|>", "<|user|>", "<|assistant|>", "<|end|>")

TINY_CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] }}"
    "{% if message['role'] == 'assistant' %}{{ eos_token }}{% else %}{{ '<|end|>' }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def _train_bpe(corpus: Iterable[str], *, vocab_size: int, special_tokens: list[str]):
    """A byte-level BPE ``tokenizers.Tokenizer`` trained on ``corpus`` (offsets of tokens with a leading space
    include it, as in GPT-2 / Llama 3)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=special_tokens, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(list(corpus), trainer=trainer)
    return tok


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 1024, skeleton: Iterable[str] = ()):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on ``texts`` plus ``skeleton`` (text every input
    contains, e.g. prompt templates; weighted 20× so its merges are learnt)."""
    from transformers import PreTrainedTokenizerFast

    tok = _train_bpe([*list(skeleton) * 20, *texts], vocab_size=vocab_size,
                     special_tokens=[PAD, BOS, EOS, *ROLE_TOKENS])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                   additional_special_tokens=list(ROLE_TOKENS), clean_up_tokenization_spaces=False)
    fast.chat_template = TINY_CHAT_TEMPLATE
    fast.model_max_length = 4096
    return fast


def snap_to_nf4(model, *, blocksize: int = 64) -> int:
    """Round every decoder ``nn.Linear`` weight to its NF4 4-bit value in place; return how many were snapped."""
    import bitsandbytes.functional as bnbf
    import torch

    n = 0
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and name.startswith("model.layers."):
                weight = module.weight.data.float().contiguous()
                packed, state = bnbf.quantize_4bit(weight, blocksize=blocksize, quant_type="nf4")
                module.weight.data.copy_(bnbf.dequantize_4bit(packed, state).to(module.weight.dtype))
                n += 1
    return n


def build_tiny_llama(out_dir: str | Path, *, seed: int = 0, texts: Iterable[str] = (), skeleton: Iterable[str] = (),
                     vocab_size: int = 1024,
                     hidden_size: int = 64, num_hidden_layers: int = 2, num_attention_heads: int = 4,
                     intermediate_size: int = 128, max_position_embeddings: int = 4096,
                     lm_head_std: float = 0.5) -> Path:
    """Build a random tiny Llama + tokenizer (trained on ``texts`` and ``skeleton``) and ``save_pretrained`` both
    to ``out_dir``.

    ``hidden_size`` and ``intermediate_size`` must be multiples of 64 (the NF4 blocksize). Returns ``out_dir``.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    for name, value in (("hidden_size", hidden_size), ("intermediate_size", intermediate_size)):
        if value % 64:
            raise ValueError(f"{name}={value} must be a multiple of 64 for 4-bit NF4 blocks")
    out_dir = Path(out_dir)
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size, skeleton=skeleton)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers, num_attention_heads=num_attention_heads,
        num_key_value_heads=num_attention_heads, max_position_embeddings=max_position_embeddings,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32)
    # The output head stays frozen under LoRA and sees RMS-normalised states: with the usual 0.02 init its logits
    # could never leave a near-uniform distribution, so it gets a wider init that allows confident predictions.
    with torch.no_grad():
        model.lm_head.weight.normal_(0.0, lm_head_std)
    snap_to_nf4(model)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


BERT_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_bert_tokenizer(texts: Iterable[str], *, vocab_size: int = 1024):
    """A lower-casing BERT-style WordPiece ``PreTrainedTokenizerFast`` trained on ``texts``; pairs are encoded as
    ``[CLS] A [SEP] B [SEP]`` with token type ids 0 / 1, as BERT cross-encoders expect."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=1, show_progress=False,
                                        special_tokens=list(BERT_SPECIAL_TOKENS))
    corpus = [*texts] or ["the context supports the response sentence"]
    tok.train_from_iterator(corpus, trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]",
                                   model_input_names=["input_ids", "token_type_ids", "attention_mask"])
    fast.model_max_length = 512
    return fast


def build_tiny_bert(out_dir: str | Path, *, seed: int = 0, texts: Iterable[str] = (), vocab_size: int = 1024,
                    hidden_size: int = 64, num_hidden_layers: int = 2, num_attention_heads: int = 4,
                    intermediate_size: int = 128, max_position_embeddings: int = 512) -> Path:
    """Build a random tiny BERT encoder (``BertModel``) + WordPiece tokenizer (trained on ``texts``) and
    ``save_pretrained`` both to ``out_dir``; task heads (sequence or token classification) are added by the
    ``from_pretrained`` of the task class. Deterministic given ``seed``. Returns ``out_dir``."""
    import torch
    from transformers import BertConfig, BertModel

    out_dir = Path(out_dir)
    tokenizer = train_bert_tokenizer(texts, vocab_size=vocab_size)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
                        num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
                        max_position_embeddings=max_position_embeddings, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    model = BertModel(config).to(torch.float32)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
