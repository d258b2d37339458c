"""A tiny Llama written as a GGUF file in code (the ``gguf`` package's GGUFWriter), so the GGUF base path is
tested without the 98 MB SmolLM2 package: the built-in tiny random Llama (byte-level BPE tokenizer, chat
template) exported the way llama.cpp's converter does it (q/k rows permuted, byte-level tokens with their types and
merges, linear weights in Q8_0)."""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL = 3  # gguf TokenType.CONTROL
NORMAL = 1


def _permute(weights, n_head: int):
    """llama.cpp's rotary row order for q/k (transformers' GGUF loader undoes it)."""
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def _tensors(model, n_head: int, n_kv: int):
    sd = {k: v.float().numpy() for k, v in model.state_dict().items()}
    yield "token_embd.weight", sd["model.embed_tokens.weight"]
    yield "output_norm.weight", sd["model.norm.weight"]
    yield "output.weight", sd["lm_head.weight"]
    names = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
             "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
             "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm", "ffn_norm": "post_attention_layernorm"}
    for i in range(model.config.num_hidden_layers):
        for gguf_name, hf_name in names.items():
            w = sd[f"model.layers.{i}.{hf_name}.weight"]
            if gguf_name == "attn_q":
                w = _permute(w, n_head)
            elif gguf_name == "attn_k":
                w = _permute(w, n_kv)
            yield f"blk.{i}.{gguf_name}.weight", w


def write_gguf(hf_dir: Path, out: Path) -> Path:
    """Write the Llama + byte-level BPE tokenizer saved in ``hf_dir`` as the GGUF file ``out`` (2-D weights in
    Q8_0, norms in F32)."""
    import gguf
    import numpy as np
    from transformers import AutoTokenizer, LlamaForCausalLM

    model = LlamaForCausalLM.from_pretrained(hf_dir)
    tok = AutoTokenizer.from_pretrained(hf_dir)
    cfg = model.config
    vocab = tok.get_vocab()
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    merges = json.loads((Path(hf_dir) / "tokenizer.json").read_text())["model"]["merges"]
    special = set(tok.all_special_tokens)

    w = gguf.GGUFWriter(str(out), "llama")
    w.add_name("tiny-gguf-llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_rope_freq_base(float(cfg.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_vocab_size(len(tokens))
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(tokens)
    w.add_token_types([SPECIAL if t in special else NORMAL for t in tokens])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(False)  # the chat template writes the BOS token itself
    w.add_chat_template(tok.chat_template)
    for name, array in _tensors(model, cfg.num_attention_heads, cfg.num_key_value_heads):
        array = np.ascontiguousarray(array, dtype=np.float32)
        if array.ndim == 2 and array.shape[1] % 32 == 0:
            w.add_tensor(name, gguf.quants.quantize(array, gguf.GGMLQuantizationType.Q8_0),
                         raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            w.add_tensor(name, array)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out


def build_tiny_gguf(folder: Path, *, texts: list[str], name: str = "tiny.gguf") -> tuple[Path, Path]:
    """``(hf_dir, gguf_path)``: a tiny random Llama built in code under ``folder/hf`` and its GGUF
    ``folder/name``."""
    from ragtruth_spans.detectors.generative.prompts import skeleton_texts
    from ragtruth_spans.models.tiny import build_tiny_llama

    hf_dir = build_tiny_llama(folder / "hf", seed=0, texts=texts, skeleton=skeleton_texts(), vocab_size=600,
                              hidden_size=64,
                              num_hidden_layers=1, num_attention_heads=4, intermediate_size=128,
                              max_position_embeddings=1024)
    return hf_dir, write_gguf(hf_dir, folder / name)
