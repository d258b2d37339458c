"""A transformer exported to ONNX, run by ONNX Runtime on the CPU without torch or transformers: its session
(:class:`OnnxTransformer`), the folder's tokenizer through the ``tokenizers`` library (:class:`FastTokenizer`, equal
to transformers' fast tokenizer) and mean pooling. Exports are made and checked in :mod:`.onnx_encoder`."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.threads import omp_threads

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
"""The inputs of every export, in order."""


def mean_pooled(hidden: np.ndarray, attention_mask: np.ndarray) -> np.ndarray:
    """Unit-length mean of each text's hidden states over its attended tokens (``b x dim`` float32)."""
    mask = attention_mask[..., None].astype(np.float32)
    pooled = (hidden * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
    return (pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)).astype(np.float32)


@dataclass
class Batch:
    """A tokenized batch: ``input_ids``, ``attention_mask``, ``token_type_ids``, ``special_tokens_mask``
    (``b x s`` int64) and ``offset_mapping`` (``b x s x 2``, character intervals ``[start, end)``)."""

    arrays: dict[str, np.ndarray]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]


class FastTokenizer:
    """The folder's ``tokenizer.json`` through the ``tokenizers`` library, cutting at ``max_length`` tokens and
    padding to the longest text of a batch — what transformers' fast tokenizer gives with ``padding=True,
    truncation=True`` (tested equal)."""

    def __init__(self, folder: str | Path, *, max_length: int) -> None:
        from tokenizers import Tokenizer

        folder = Path(folder)
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        pad = pad_token(folder)
        pad_id = self._tokenizer.token_to_id(pad)
        if pad_id is None:
            raise InputError(f"the tokenizer has no pad token {pad!r}", path=folder / "tokenizer.json")
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.enable_padding(pad_id=pad_id, pad_token=pad)

    def __call__(self, texts: Sequence[str]) -> Batch:
        encodings = self._tokenizer.encode_batch(list(texts))
        arrays = {name: np.asarray([getattr(e, attr) for e in encodings], dtype=np.int64)
                  for name, attr in (("input_ids", "ids"), ("attention_mask", "attention_mask"),
                                     ("token_type_ids", "type_ids"), ("special_tokens_mask", "special_tokens_mask"))}
        arrays["offset_mapping"] = np.asarray([e.offsets for e in encodings], dtype=np.int64).reshape(
            len(encodings), -1, 2)
        return Batch(arrays)


def pad_token(folder: Path) -> str:
    """The folder's pad token (its special-tokens map or tokenizer config; ``[PAD]`` when neither names one)."""
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        try:
            pad = json.loads((folder / name).read_text(encoding="utf-8")).get("pad_token")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(pad, dict):
            pad = pad.get("content")
        if isinstance(pad, str):
            return pad
    return "[PAD]"


class OnnxTransformer:
    """An exported transformer in an ONNX Runtime session on the CPU (``threads``: its intra-op threads; None:
    ``$OMP_NUM_THREADS`` when set to a whole number, else ONNX Runtime's default), with the folder's tokenizer."""

    def __init__(self, model_file: str | Path, folder: str | Path, *, max_length: int,
                 threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: ONNX Runtime's notes stay out of the user's output
        options.intra_op_num_threads = threads if threads is not None else omp_threads() or 0  # 0: ORT's default
        try:
            self._session = onnxruntime.InferenceSession(str(model_file), options,
                                                         providers=["CPUExecutionProvider"])
        except Exception as exc:
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise InputError(f"does not load ({message})", path=Path(model_file).parent) from None
        self.tokenizer = FastTokenizer(folder, max_length=max_length)
        self.dimension = int(json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))["hidden_size"])

    def hidden(self, batch: Batch | Mapping[str, np.ndarray]) -> np.ndarray:
        """The last hidden states (``b x s x dim`` float32) of a tokenized batch (:class:`Batch` or its arrays)."""
        return self._session.run(None, {name: batch[name] for name in INPUTS})[0]

    def pooled(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length mean-pooled embeddings of ``texts`` (one padded batch: a probe, not the encoder's path)."""
        batch = self.tokenizer(list(texts))
        return mean_pooled(self.hidden(batch), batch["attention_mask"])
