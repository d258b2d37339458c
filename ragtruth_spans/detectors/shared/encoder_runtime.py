"""Where a sentence encoder runs and what it loads: the runtimes (:data:`RUNTIMES`) and the features each gives
(:data:`PRECISION`), the runtime a build runs on (:func:`runtime_for_build`), the folder layouts read without
sentence-transformers (:func:`mean_pooling_layout`), a cut to the first layers (:func:`checked_layers`) and the
ONNX Runtime transformer (:func:`onnx_transformer`). :class:`~.encoder.SentenceEncoder` is built from these."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError

logger = logging.getLogger(__name__)

RUNTIMES = ("auto", "onnx-fp32", "onnx-int8", "torch")
"""Where the transformer runs: ``auto`` (ONNX Runtime on the CPU when it is installed and the model allows it:
:func:`onnx_transformer`; else torch — the same embeddings to ~1e-5), ``onnx-fp32`` (ONNX Runtime or an error),
``onnx-int8`` (the export quantized to int8: :data:`~ragtruth_spans.models.onnx_encoder.QUANTIZATION`; different
embeddings, at cosine ~0.99 of fp32's, so a detector trained on fp32 features must not silently get them:
:func:`runtime_for_build`) or ``torch``."""

PRECISION = {"auto": "fp32", "onnx-fp32": "fp32", "onnx-int8": "int8", "torch": "fp32"}
"""The features each runtime gives: fp32 (torch and ONNX Runtime agree to ~1e-5) or int8."""


def runtime_for_build(precision: str, runtime: str | None) -> str:
    """The runtime a detector built on ``precision`` features (``fp32``/``int8``: its recipe's
    ``features.precision``) runs its encoder on when asked for ``runtime``: None or ``auto`` give the build's own
    features (``onnx-int8`` for an int8 build); an explicit runtime of the other precision is honoured with a
    warning, since the combiner was not trained on its features."""
    if runtime not in (None, *RUNTIMES):
        raise InputError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}", field="runtime")
    if runtime in (None, "auto"):
        return "onnx-int8" if precision == "int8" else "auto"
    if PRECISION[runtime] != precision:
        logger.warning("runtime %s gives %s sentence-encoder features to a detector built on %s ones: its scores "
                       "shift from the measured ones (rebuild it with features.precision=%s to trust them)",
                       runtime, PRECISION[runtime], precision, PRECISION[runtime])
    return runtime


def mean_pooling_layout(path: str | Path) -> int | None:
    """The ``max_seq_length`` of a local sentence-transformers folder whose modules are a transformer at its root,
    mean pooling and (optionally) normalisation, without lower-casing — what all-MiniLM-L6-v2 and all-mpnet-base-v2
    are; None for any other folder or a hub name (those load through sentence-transformers)."""
    folder = Path(path)
    try:
        modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
        kinds = [str(m["type"]).rsplit(".", 1)[-1] for m in modules]
        if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or \
                modules[0].get("path", "") not in ("", "."):
            return None
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text(encoding="utf-8"))
        config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
    mean = modes == {"pooling_mode_mean_tokens"} or pooling.get("pooling_mode") == "mean"
    if not mean or config.get("do_lower_case") or not isinstance(config.get("max_seq_length"), int):
        return None
    return int(config["max_seq_length"])


def checked_layers(layers: int | None, path: str, max_length: int | None) -> int | None:
    """``layers`` when this encoder can run only its first that many (a mean-pooled transformer that has them),
    else an :class:`InputError` naming the field."""
    if layers is None:
        return None
    if isinstance(layers, bool) or not isinstance(layers, int) or layers < 1:
        raise InputError(f"layers must be a whole number >= 1, got {layers!r}", field="layers")
    total = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get("num_hidden_layers")
    if max_length is None or not isinstance(total, int):
        raise InputError("layers needs a mean-pooled transformer folder (all-MiniLM-L6-v2's layout)", field="layers")
    if layers > total:
        raise InputError(f"layers must be at most the encoder's {total}, got {layers}", field="layers")
    return layers


def onnx_transformer(name_or_path: str, path: str, max_length: int, precision: str = "fp32",
                      layers: int | None = None, *, threads: int | None = None) -> Any:
    """The folder's transformer on ONNX Runtime at ``precision`` (exported once, cached and checked on every load:
    :func:`~ragtruth_spans.models.onnx_encoder.load_onnx`), or None when ONNX Runtime is not installed, the model
    cannot take that path, or no export is cached and the exporter's packages are missing or the export fails (a
    warning says why)."""
    from ragtruth_spans.models import onnx_encoder
    from ragtruth_spans.models.pretrained import PACKAGED_MODELS

    if not onnx_encoder.onnx_ready(export=False):
        return None
    verified = PACKAGED_MODELS[name_or_path].sha256 if name_or_path in PACKAGED_MODELS else None
    inputs = onnx_encoder.export_key_inputs(path, verified, precision, layers)
    if inputs is None:
        return None
    try:
        found = onnx_encoder.load_onnx(path, inputs, max_length=max_length, threads=threads)
    except InputError:
        raise
    except Exception as exc:  # an unwritable cache, an exporter that fails on this model: torch still serves
        logger.warning("sentence encoder on torch: the ONNX export failed (%s: %s)", type(exc).__name__,
                       " ".join(str(exc).split())[:200])
        return None
    if found is None:
        logger.info("sentence encoder on torch: no ONNX export cached and no exporter (onnx, onnxscript)")
    return found


def load_sentence_transformer(path: str, device: str | None) -> Any:
    """A folder or hub name through sentence-transformers (an encoder whose layout :func:`mean_pooling_layout` does
    not read), in eval mode on ``device``."""
    from sentence_transformers import SentenceTransformer

    from ragtruth_spans.models.hf_models import is_local_reference

    model = SentenceTransformer(path, device=device or "cpu", local_files_only=is_local_reference(path))
    return model.eval()
