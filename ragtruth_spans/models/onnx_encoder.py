"""A sentence encoder's transformer run with ONNX Runtime: exported once from its weights with torch's ONNX
exporter, checked against torch, cached, then run without importing torch or transformers — which is what makes a
cold ``detect`` fast (importing torch and transformers alone takes ~4 s on 2 cores; ONNX Runtime ~0.1 s).

Two precisions (:data:`PRECISIONS`): ``fp32``, the export itself (equal to torch's last hidden states within
:data:`TOLERANCE` on a padded probe batch), and ``int8``, that export quantized by ONNX Runtime's dynamic
quantization (:data:`QUANTIZATION`: the weight matrices of MatMul, per output channel; embeddings, LayerNorm,
attention's own products and softmax stay fp32), kept only when its sentence embeddings of :data:`VERIFY_TEXTS`
are at cosine >= :data:`INT8_MIN_COSINE` of fp32's (the mean and the minimum are recorded beside it).

The cache (:func:`load_onnx`). An export is keyed by the SHA-256 of the folder's ``model.safetensors`` and
``config.json``, the torch and transformers versions and the opset (and, for int8, ONNX Runtime's version and the
quantization settings; the layers kept, when an encoder runs only its first ones: :func:`export_key_inputs`); it
is written to ``<cache>/onnx/<key>/`` (:func:`~ragtruth_spans.core.cache.cache_root`) through a temporary folder
renamed into place, with a record
(``source.json``: those inputs, the export's SHA-256, its measured differences). **The cache is not trusted**: it
can be rewritten whole, record included. So each time an export is loaded, its outputs on :data:`PROBE` are
compared with a reference the cache cannot rewrite — the packaged one for packaged weights
(:mod:`~ragtruth_spans.models.probe_reference`), else torch's when torch is installed — and an export that does
not reproduce it (or whose file is not the one its record names, or that does not load) is logged, set aside and
made again from the weights. Without the exporter it is one error line instead. An export of weights with no
packaged reference loaded without torch is checked against its own record only (said at debug level).

An export runs in :class:`~ragtruth_spans.models.onnx_session.OnnxTransformer` (:mod:`.onnx_session`: the session,
the folder's tokenizer through the ``tokenizers`` library, the same one transformers' fast tokenizer wraps).

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
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.cache import cache_root
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.jsonl import file_sha256
from ragtruth_spans.models.onnx_session import INPUTS, FastTokenizer, OnnxTransformer, mean_pooled

logger = logging.getLogger(__name__)

OPSET = 18
MODEL_FILE = "model.onnx"
RECORD_FILE = "source.json"
TOLERANCE = 1e-3
"""Largest absolute difference from torch's last hidden states an export may show on the probe batch."""
PROBE = ("A short probe sentence.", "A longer probe sentence, padded against the short one, with a number: 1,240.")
PRECISIONS = ("fp32", "int8")
QUANTIZATION: dict[str, Any] = {"op_types_to_quantize": ["MatMul"], "per_channel": True, "reduce_range": False,
                                "weight_type": "QInt8", "extra_options": {"MatMulConstBOnly": True}}
"""``onnxruntime.quantization.quantize_dynamic``'s settings for ``int8``: only MatMul by a weight matrix, int8
weights per output channel, activations quantized per batch (uint8). Measured on 400 RAGTruth response sentences
(docs/lab/NOTEBOOK.md): sentence cosine to fp32 mean 0.992 / min 0.974 this way, 0.961 / 0.842 with ONNX Runtime's
defaults (every op, per tensor; embeddings too), 0.981 / 0.920 with uint8 weights; keeping the last layer in fp32
gained 0.001 and cost speed."""
INT8_MIN_COSINE = 0.95
"""The lowest cosine to fp32's sentence embedding an int8 export may show on any text of :data:`VERIFY_TEXTS`."""
PROBE_MIN_COSINE = {"fp32": 0.9999, "int8": 0.97}
"""The lowest cosine to the reference an export's :data:`PROBE` embedding may show when it is loaded."""
VERIFY_TEXTS = (
    "The bridge has 14 towers and opened in 1932.",
    "It was designed by a team of three engineers from Oslo.",
    "Revenue rose 12% to $4.1 billion in the third quarter, beating forecasts.",
    "The museum is closed on Mondays and on public holidays.",
    "Take two tablets every six hours, but no more than eight in 24 hours.",
    "She was born in 1967 in Lyon and moved to Montreal at the age of nine.",
    "The restaurant serves Italian food and has outdoor seating.",
    "Customers praised the friendly staff but complained about the slow service.",
    "No, the warranty does not cover water damage.",
    "The study found no significant difference between the two groups (p = 0.21).",
    '{"name": "Blue Lagoon Cafe", "city": "Reykjavik", "rating": 4.5, "price": "$$", "wifi": true}',
    "name: Grand Hotel | rooms: 120 | floors: 6 | opened: 1999",
    "What time does the pharmacy on Main Street open on Sundays?",
    "Overall, the reviews are mostly positive, with a few concerns about parking.",
    "According to the passage, the treaty was signed by 42 countries.",
    "Ünïcode, emoji 🙂 and a URL: https://example.org/a?b=1",
    "x",
    "In summary, the company plans to cut 300 jobs and close two factories by 2025, while investing in "
    "automation at its remaining sites; unions have called the decision a betrayal and threatened strikes.",
    "Photosynthesis converts light energy into chemical energy stored in glucose.",
    "The team lost 3-1 after a late goal in extra time.",
    "Mix the flour and the butter, then add one egg and a pinch of salt.",
    "The river floods every spring, so the village was built on the hill.",
    "He denied the allegations and said he would appeal the ruling.",
    "Passage 2: The library holds 2.3 million books and 40,000 maps. " * 6,
)
"""The fixed texts an int8 export is measured on against fp32 (short and long, numbers, records, questions)."""


def onnx_ready(*, export: bool) -> bool:
    """Whether ONNX Runtime is installed (and, with ``export``, torch's ONNX exporter's dependencies)."""
    needed = ("onnxruntime", "tokenizers") + (("onnx", "onnxscript", "torch", "transformers") if export else ())
    return all(find_spec(name) is not None for name in needed)


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


def export_key_inputs(folder: str | Path, weights_sha256: str | None = None, precision: str = "fp32",
                      layers: int | None = None) -> dict[str, str] | None:
    """What an export of ``folder`` depends on (weights and config hashes, library versions, opset; for ``int8``
    also ONNX Runtime's version and :data:`QUANTIZATION`; ``layers``: only the first that many transformer layers
    are exported, None: all); None when the folder holds no ``model.safetensors``, ``config.json`` and
    ``tokenizer.json`` or is not a BERT-type transformer (such a model stays on torch). ``weights_sha256`` spares
    hashing weights already verified."""
    if precision not in PRECISIONS:
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}", field="precision")
    folder = Path(folder)
    weights, config = folder / "model.safetensors", folder / "config.json"
    if not weights.is_file() or not (folder / "tokenizer.json").is_file() or _model_type(config) != "bert":
        return None
    inputs = {"weights_sha256": weights_sha256 or str(file_sha256(weights)), "config_sha256": str(file_sha256(config)),
              "torch": _version("torch"), "transformers": _version("transformers"), "opset": str(OPSET)}
    if layers is not None:  # absent for the whole model: the keys of exports made before layers could be chosen
        inputs["layers"] = str(layers)
    if precision == "int8":  # the fp32 export's inputs stay its key: an int8 export is made from it
        inputs |= {"precision": "int8", "onnxruntime": _version("onnxruntime"),
                   "quantization": json.dumps(QUANTIZATION, sort_keys=True)}
    return inputs


def _model_type(config: Path) -> str | None:
    try:
        return json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):
        return None


def _key(inputs: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:32]


def _precision(inputs: dict[str, str]) -> str:
    return inputs.get("precision", "fp32")


def _layers(inputs: dict[str, str]) -> int | None:
    return int(inputs["layers"]) if "layers" in inputs else None


def _fp32_inputs(inputs: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in inputs.items() if k not in ("precision", "onnxruntime", "quantization")}


def _find(inputs: dict[str, str]) -> tuple[Path | None, str | None]:
    """``(model file, problem)`` of the cached export of ``inputs``: ``(None, None)`` when there is none; the
    problem when the file is not the one its record names or the record is of other inputs."""
    final = cache_root() / "onnx" / _key(inputs)
    if not (final / RECORD_FILE).is_file() or not (final / MODEL_FILE).is_file():
        return None, None
    try:
        record = json.loads((final / RECORD_FILE).read_text(encoding="utf-8"))
        recorded = record.get("onnx_sha256")
        same_inputs = all(record.get(k) == v for k, v in inputs.items())
    except (OSError, ValueError, AttributeError):
        recorded, same_inputs = None, False
    if recorded != file_sha256(final / MODEL_FILE) or not same_inputs:
        return final / MODEL_FILE, "does not match its record (changed or incomplete)"
    return final / MODEL_FILE, None


def cached_export(inputs: dict[str, str]) -> Path | None:
    """The cached export made from ``inputs``, None when there is none yet; an export whose SHA-256 or inputs
    are not the ones recorded beside it is an :class:`InputError` (a record that agrees proves nothing about the
    export's outputs: :func:`load_onnx` checks those)."""
    found, problem = _find(inputs)
    if problem is not None and found is not None:
        raise InputError(f"the cached ONNX encoder {problem}: delete its folder and run again", path=found.parent)
    return found


def exported_model(folder: str | Path, inputs: dict[str, str]) -> Path:
    """``<cache>/onnx/<key>/model.onnx``: the transformer of ``folder`` exported (fp32), or that export quantized
    (``int8`` inputs) — made once; a finished one is reused, keyed by ``inputs`` from :func:`export_key_inputs`.
    An fp32 export whose outputs differ from torch's by more than :data:`TOLERANCE`, or an int8 one further than
    :data:`INT8_MIN_COSINE` from fp32, is an :class:`InputError` and is not kept."""
    found = cached_export(inputs)
    if found is not None:
        return found
    base = exported_model(folder, _fp32_inputs(inputs)) if _precision(inputs) == "int8" else None
    final = cache_root() / "onnx" / _key(inputs)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name[:16]}-", dir=final.parent))
    try:
        started = time.perf_counter()
        if base is None:
            measured: dict[str, Any] = {"max_abs_difference": _export(Path(folder), tmp / MODEL_FILE,
                                                                          _layers(inputs))}
        else:
            measured = _quantize(Path(folder), base, tmp / MODEL_FILE)
        record = {**inputs, "folder": str(folder), **measured, "onnx_sha256": file_sha256(tmp / MODEL_FILE)}
        (tmp / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        tmp.chmod(0o755)  # mkdtemp makes it private
        try:
            os.rename(tmp, final)
        except OSError:  # another process finished first
            if cached_export(inputs) is None:
                raise InputError("the cache folder exists but holds no finished export: delete it and run again",
                                 path=final) from None
        logger.info("sentence encoder made for ONNX Runtime (%s) once in %.1f s (%s): %s", _precision(inputs),
                    time.perf_counter() - started, ", ".join(f"{k} {v:.4g}" for k, v in measured.items()
                                                             if isinstance(v, float)), final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final / MODEL_FILE


def _quantize(folder: Path, base: Path, out: Path) -> dict[str, Any]:
    """Quantize the fp32 export ``base`` into ``out`` (:data:`QUANTIZATION`); its sentence embeddings' cosines to
    fp32's on :data:`VERIFY_TEXTS` (mean, min; below :data:`INT8_MIN_COSINE` is an :class:`InputError`)."""
    quantize_file(base, out)
    reference = OnnxTransformer(base, folder, max_length=256, threads=1).pooled(VERIFY_TEXTS)
    cosines = (OnnxTransformer(out, folder, max_length=256, threads=1).pooled(VERIFY_TEXTS) * reference).sum(1)
    worst = float(cosines.min())
    if not worst >= INT8_MIN_COSINE:
        raise InputError(f"the int8 encoder's embeddings are at cosine {worst:.4f} of fp32's on a verification "
                         f"text (< {INT8_MIN_COSINE}); not kept", path=folder)
    return {"verify_texts": len(VERIFY_TEXTS), "mean_cosine_to_fp32": float(cosines.mean()),
            "min_cosine_to_fp32": worst}


def quantize_file(base: Path, out: Path) -> None:
    """The fp32 model ``base`` quantized into ``out`` by ONNX Runtime's dynamic quantization (:data:`QUANTIZATION`;
    its shape-inferred copy is made beside ``out`` and removed)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    prepared = out.with_name(f"{out.stem}.prepared.onnx")
    settings = {**QUANTIZATION, "weight_type": getattr(QuantType, QUANTIZATION["weight_type"])}
    previous = logging.root.manager.disable
    logging.disable(logging.INFO)  # the quantizer logs a line per tensor to the root logger
    try:
        quant_pre_process(str(base), str(prepared), skip_symbolic_shape=True)
        quantize_dynamic(str(prepared), str(out), **settings)
    finally:
        logging.disable(previous)
        prepared.unlink(missing_ok=True)


def load_onnx(folder: str | Path, inputs: dict[str, str], *, max_length: int,
              threads: int | None = None) -> OnnxTransformer | None:
    """The export of ``inputs`` in an :class:`OnnxTransformer`, checked on :data:`PROBE` against the reference
    (:func:`probe_reference`; see the module docstring): a cached export that fails a check is logged, set
    aside and made again (an :class:`InputError` without the exporter). None when none is cached and the exporter's
    packages are missing."""
    for attempt in (1, 2):
        found, problem = _find(inputs)
        if found is None:
            if not onnx_ready(export=True):
                return None
            found = exported_model(folder, inputs)
        if problem is None:
            try:
                model = OnnxTransformer(found, folder, max_length=max_length, threads=threads)
            except InputError as exc:
                problem = exc.message
            else:
                problem = _probe_problem(model, folder, inputs)
                if problem is None:
                    return model
        if attempt == 2 or not onnx_ready(export=True):
            raise InputError(f"the cached ONNX encoder {problem}: delete its folder and run again",
                             path=found.parent)
        logger.warning("the cached ONNX encoder %s %s: set aside and made again from the weights", found.parent,
                       problem)
        _set_aside(found.parent)
    return None  # not reached: the second attempt returns or raises


def _set_aside(folder: Path) -> None:
    """Move a refused export out of the cache's way (renamed, then removed)."""
    aside = folder.with_name(f".refused-{folder.name}-{os.getpid()}")
    try:
        os.rename(folder, aside)
    except OSError:
        return  # another process set it aside first
    shutil.rmtree(aside, ignore_errors=True)


def _probe_problem(model: OnnxTransformer, folder: str | Path, inputs: dict[str, str]) -> str | None:
    """What is wrong with ``model``'s outputs on :data:`PROBE` against the reference (None: nothing, or no
    reference to check against)."""
    reference, source = probe_reference(folder, inputs["weights_sha256"], _layers(inputs))
    if reference is None:
        logger.debug("the ONNX encoder of %s is checked against its record only (no packaged reference, no torch)",
                     folder)
        return None
    got = model.pooled(PROBE)
    worst = float((got * reference).sum(1).min()) if got.shape == reference.shape else -1.0
    wanted = PROBE_MIN_COSINE[_precision(inputs)]
    if worst >= wanted:
        return None
    return f"does not reproduce {source} on the probe texts (cosine {worst:.4f} < {wanted})"


def probe_reference(folder: str | Path, weights_sha256: str,
                    layers: int | None = None) -> tuple[np.ndarray | None, str]:
    """``(reference, what it is)``: the probe embeddings an export of these weights (its first ``layers``
    transformer layers; None: all) must give — the packaged ones (:mod:`~ragtruth_spans.models.probe_reference`),
    else torch's when torch and transformers are installed, else ``(None, "")``."""
    from ragtruth_spans.models.probe_reference import reference

    packaged = reference(weights_sha256, layers)
    if packaged is not None:
        return packaged, "the packaged reference"
    if find_spec("torch") is None or find_spec("transformers") is None:
        return None, ""
    return torch_probe(folder, layers), "torch's outputs"


def load_transformer(folder: str | Path, layers: int | None = None) -> Any:
    """The folder's transformer (transformers' ``AutoModel``, in eval mode), cut to its first ``layers`` layers
    (None: all of them); a cut needs a BERT-style ``encoder.layer`` stack (an :class:`InputError` otherwise)."""
    from transformers import AutoModel

    model = AutoModel.from_pretrained(folder, local_files_only=True).eval()
    if layers is None:
        return model
    stack = getattr(getattr(model, "encoder", None), "layer", None)
    if stack is None or layers > len(stack):
        raise InputError(f"cannot keep the first {layers} layers of this transformer", path=folder, field="layers")
    model.encoder.layer = stack[:layers]  # the loading report of the later layers would be noise: cut after loading
    model.config.num_hidden_layers = layers
    return model


def torch_probe(folder: str | Path, layers: int | None = None) -> np.ndarray:
    """The mean-pooled, unit-length last hidden states of :data:`PROBE` from the folder's weights on torch (the
    first ``layers`` transformer layers; None: all)."""
    import torch

    model = load_transformer(folder, layers)
    batch = FastTokenizer(folder, max_length=64)(list(PROBE))
    with torch.no_grad():
        hidden = model(**{name: torch.from_numpy(batch[name]) for name in INPUTS}).last_hidden_state.numpy()
    return mean_pooled(hidden, batch["attention_mask"])


def with_plain_inputs(model: Any, output: str = "last_hidden_state") -> Any:
    """``model`` with plain tensor inputs and its ``output`` (a field of its output object) as the one output: what
    is exported."""
    import torch

    class Plain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return getattr(self.model(input_ids=input_ids, attention_mask=attention_mask,
                                      token_type_ids=token_type_ids), output)

    return Plain().eval()


def _export(folder: Path, out: Path, layers: int | None = None) -> float:
    """Export ``folder``'s transformer (its first ``layers`` layers; None: all) to ``out``; the largest absolute
    difference from torch on :data:`PROBE`."""
    import contextlib
    import sys
    import warnings

    import torch

    wrapped = with_plain_inputs(load_transformer(folder, layers))
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
