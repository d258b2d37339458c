"""A sentence encoder's transformer run with ONNX Runtime: exported once from its weights with torch's ONNX
exporter, checked against torch, cached, then run without importing torch or transformers — which is what makes a
cold ``detect`` fast (importing torch and transformers alone takes ~4 s on 2 cores; ONNX Runtime ~0.1 s).

The export (:func:`exported_model`) is keyed by the SHA-256 of the folder's ``model.safetensors`` and
``config.json``, the torch and transformers versions and the opset; it is written to
``<cache>/onnx/<key>/`` (:func:`~ragtruth_spans.core.cache.cache_root`) through a temporary folder renamed into
place, and kept only when its last hidden states equal torch's within :data:`TOLERANCE` on a padded probe batch.
:class:`OnnxTransformer` tokenizes with the folder's ``tokenizer.json`` through the ``tokenizers`` library (the
same tokenizer transformers' fast tokenizer wraps) and returns the last hidden states as NumPy arrays.

Only BERT-type transformers take this path (all-MiniLM-L6-v2 is one); others stay on torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.cache import cache_root
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256

logger = logging.getLogger(__name__)

OPSET = 18
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
MODEL_FILE = "model.onnx"
RECORD_FILE = "source.json"
TOLERANCE = 1e-3
"""Largest absolute difference from torch's last hidden states an export may show on the probe batch."""
PROBE = ("A short probe sentence.", "A longer probe sentence, padded against the short one, with a number: 1,240.")


def onnx_ready(*, export: bool) -> bool:
    """Whether ONNX Runtime is installed (and, with ``export``, torch's ONNX exporter's dependencies)."""
    needed = ("onnxruntime", "tokenizers") + (("onnx", "onnxscript", "torch", "transformers") if export else ())
    return all(find_spec(name) is not None for name in needed)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


def export_key_inputs(folder: str | Path, weights_sha256: str | None = None) -> dict[str, str] | None:
    """What an export of ``folder`` depends on (weights and config hashes, library versions, opset); None when
    the folder holds no ``model.safetensors``, ``config.json`` and ``tokenizer.json`` or is not a BERT-type
    transformer (such a model stays on torch). ``weights_sha256`` spares hashing weights already verified."""
    folder = Path(folder)
    weights, config = folder / "model.safetensors", folder / "config.json"
    if not weights.is_file() or not (folder / "tokenizer.json").is_file() or _model_type(config) != "bert":
        return None
    return {"weights_sha256": weights_sha256 or str(file_sha256(weights)), "config_sha256": str(file_sha256(config)),
            "torch": _version("torch"), "transformers": _version("transformers"), "opset": str(OPSET)}


def _model_type(config: Path) -> str | None:
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def _key(inputs: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]


def cached_export(inputs: dict[str, str]) -> Path | None:
    """The cached export made from ``inputs``, None when there is none yet; an export whose SHA-256 is not the
    one recorded beside it is an :class:`InputError`."""
    final = cache_root() / "onnx" / _key(inputs)
    if not (final / RECORD_FILE).is_file() or not (final / MODEL_FILE).is_file():
        return None
    try:
        recorded = json.loads((final / RECORD_FILE).read_text(encoding="utf-8")).get("onnx_sha256")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if recorded != file_sha256(final / MODEL_FILE):
        raise InputError("the cached ONNX encoder does not match its record (changed or incomplete): delete its "
                         "folder and run again", path=final)
    return final / MODEL_FILE


def exported_model(folder: str | Path, inputs: dict[str, str]) -> Path:
    """``<cache>/onnx/<key>/model.onnx``: the transformer of ``folder`` exported (done once; a finished export is
    reused, keyed by ``inputs`` from :func:`export_key_inputs`). An export whose outputs differ from torch's by
    more than :data:`TOLERANCE` is an :class:`InputError` and is not kept."""
    found = cached_export(inputs)
    if found is not None:
        return found
    final = cache_root() / "onnx" / _key(inputs)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name[:16]}-", dir=final.parent))
    try:
        started = time.perf_counter()
        difference = _export(Path(folder), tmp / MODEL_FILE)
        record = {**inputs, "folder": str(folder), "max_abs_difference": difference,
                  "onnx_sha256": file_sha256(tmp / MODEL_FILE)}
        (tmp / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        tmp.chmod(0o755)  # mkdtemp makes it private
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first
            if cached_export(inputs) is None:
                raise InputError("the cache folder exists but holds no finished export: delete it and run again",
                                 path=final) from None
        logger.info("sentence encoder exported to ONNX once in %.1f s (outputs within %.1e of torch's): %s",
                    time.perf_counter() - started, difference, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final / MODEL_FILE


def _last_hidden(model: Any) -> Any:
    """``model`` with plain tensor inputs and its last hidden state as the one output (what is exported)."""
    import torch

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    return LastHidden().eval()


def _export(folder: Path, out: Path) -> float:
    """Export ``folder``'s transformer to ``out``; the largest absolute difference from torch on :data:`PROBE`."""
    import contextlib
    import sys
    import warnings

    import torch
    from transformers import AutoModel

    wrapped = _last_hidden(AutoModel.from_pretrained(folder, local_files_only=True).eval())
    batch = FastTokenizer(folder, max_length=64)(list(PROBE))
    tensors = tuple(torch.from_numpy(batch[name]) for name in INPUTS)
    batch_dim, seq_dim = torch.export.Dim("batch"), torch.export.Dim("sequence", max=4096)
    # stdout carries results (detect's JSON): whatever the exporter prints goes to stderr
    with warnings.catch_warnings(), torch.no_grad(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")  # the exporter's notes on axis names and optional torchvision ops
        program = torch.onnx.export(wrapped, tensors, input_names=list(INPUTS), output_names=["last_hidden_state"],
                                    dynamic_shapes=({0: batch_dim, 1: seq_dim},) * 3, opset_version=OPSET,
                                    dynamo=True, verbose=False)
        program.save(str(out))
        expected = wrapped(*tensors).numpy()
    got = OnnxTransformer(out, folder, max_length=64, threads=1).hidden(batch)
    difference = float(np.abs(got - expected).max())
    if not difference <= TOLERANCE:
        raise InputError(f"the ONNX export differs from torch by {difference:.2e} (> {TOLERANCE}); not kept",
                         path=folder)
    return difference


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
        pad = _pad_token(folder)
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


def _pad_token(folder: Path) -> str:
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
    ``$OMP_NUM_THREADS`` when set, else ONNX Runtime's default), with the folder's tokenizer."""

    def __init__(self, model_file: str | Path, folder: str | Path, *, max_length: int,
                 threads: int | None = None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: ONNX Runtime's notes stay out of the user's output
        wanted = threads if threads is not None else int(os.environ.get("OMP_NUM_THREADS") or 0)
        options.intra_op_num_threads = max(wanted, 0)
        try:
            self._session = onnxruntime.InferenceSession(str(model_file), options,
                                                         providers=["CPUExecutionProvider"])
        except Exception as exc:
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise InputError(f"cannot load the cached ONNX encoder ({message}): delete its folder and run again",
                             path=Path(model_file).parent) from None
        self.tokenizer = FastTokenizer(folder, max_length=max_length)
        self.dimension = int(json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))["hidden_size"])

    def hidden(self, batch: Batch | Mapping[str, np.ndarray]) -> np.ndarray:
        """The last hidden states (``b x s x dim`` float32) of a tokenized batch (:class:`Batch` or its arrays)."""
        return self._session.run(None, {name: batch[name] for name in INPUTS})[0]
