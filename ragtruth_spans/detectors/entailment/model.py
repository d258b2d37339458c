"""The NLI cross-encoder: a ``*ForSequenceClassification`` with three labels (:data:`~.pairs.LABELS`), loaded
from a base encoder for training or from a finished run directory (a standard Hugging Face folder) for
inference, and :func:`pair_probabilities`, its batched forward pass over (premise, hypothesis) pairs.

A pair is tokenized as ``[CLS] premise [SEP] hypothesis [SEP]`` and cut to ``max_length`` tokens, the longer
side first (so a long premise loses its end before the hypothesis loses anything).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.entailment.pairs import LABELS
from ragtruth_spans.models.hf_models import is_local_reference, loading


def load_tokenizer(path: str, revision: str | None = None) -> Any:
    """The model folder's tokenizer."""
    from transformers import AutoTokenizer

    with loading(path, "tokenizer"):
        return AutoTokenizer.from_pretrained(path, revision=revision, local_files_only=is_local_reference(path))


def load_classifier(path: str, revision: str | None = None, *, device: str = "cpu") -> Any:
    """The three-label sequence classifier of ``path`` (a base encoder gets a new head), on ``device``."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    with loading(path, "NLI model"):
        config = AutoConfig.from_pretrained(path, revision=revision, local_files_only=is_local_reference(path))
        if getattr(config, "is_decoder", False):
            raise InputError(f"the entailment family trains encoders (BERT, MPNet, ...), not a decoder "
                             f"({config.model_type})", field="model.name_or_path")
        model = AutoModelForSequenceClassification.from_pretrained(
            path, revision=revision, local_files_only=is_local_reference(path), num_labels=len(LABELS),
            id2label=dict(enumerate(LABELS)), label2id={name: i for i, name in enumerate(LABELS)})
    return model.to(device)


def encode_pairs(tokenizer: Any, premises: Sequence[str], hypotheses: Sequence[str], max_length: int) -> Any:
    """Token ids of the pairs, cut to ``max_length`` (longest side first), unpadded."""
    return tokenizer(list(premises), list(hypotheses), truncation="longest_first", max_length=max_length)


def pair_probabilities(model: Any, tokenizer: Any, pairs: Sequence[tuple[str, str]], *, max_length: int,
                       batch_size: int = 32) -> np.ndarray:
    """``len(pairs) x 3`` float32 probabilities of (entailment, neutral, contradiction) for each
    ``(premise, hypothesis)``, batched by token count (little padding)."""
    import torch

    from ragtruth_spans.detectors.shared.encoder import length_batches

    out = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
    if not pairs:
        return out
    encoded = encode_pairs(tokenizer, [p for p, _ in pairs], [h for _, h in pairs], max_length)
    lengths = [len(ids) for ids in encoded["input_ids"]]
    device = next(model.parameters()).device
    model.eval()
    for chunk in length_batches(lengths, batch_size):
        features = [{name: encoded[name][i] for name in encoded} for i in chunk]
        batch = tokenizer.pad(features, return_tensors="pt")
        with torch.inference_mode():
            logits = model(**{k: v.to(device) for k, v in batch.items()}).logits
        out[chunk] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    return out
