"""An entailment run's NLI model run with ONNX Runtime (``load_detector(run, runtime="onnx-int8")``), without torch.

``onnx-fp32`` is torch's export of the run's classifier (probabilities within :data:`TOLERANCE` of torch's on the
:data:`PROBE` pairs); ``onnx-int8`` that export quantized by ONNX Runtime's dynamic quantization with the sentence
encoder's settings (:data:`~ragtruth_spans.models.onnx_encoder.QUANTIZATION`), kept when no probe probability
moves by more than :data:`INT8_MAX_DIFFERENCE`. On int8 each pair runs alone: dynamic quantization scales a
batch's activations by the whole batch, so a pair's probabilities would depend on what it is batched with.

An export is made on first use (torch needed then) and written into the run directory, ``onnx/model-<precision>
.onnx`` with its record ``onnx/model-<precision>.json`` (the SHA-256 of the weights it came from and of itself, the
library versions, the measured differences), each through a temporary file renamed into place. At every load the
record must name the run's weights (the manifest's ``model.safetensors``) and the file its own SHA-256; an export
of other weights is made again, never used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.core.files import atomic_write_json
from ragtruth_spans.detectors.entailment.pairs import LABELS
from ragtruth_spans.models.onnx_encoder import quantize_file, with_plain_inputs
from ragtruth_spans.models.onnx_session import INPUTS

logger = logging.getLogger(__name__)

RUNTIMES = ("torch", "onnx-fp32", "onnx-int8")
OPSET = 18
TOLERANCE = 1e-3
INT8_MAX_DIFFERENCE = 0.25
"""The most any probe probability of an int8 export may move from fp32's: a check against a broken quantization,
not an accuracy gate. Measured on the 1,300 pool-dev sentence pairs (docs/lab/NOTEBOOK.md): mean 0.011, 99th
percentile 0.093, largest 0.207, three-way accuracy 0.810 against fp32's 0.807."""
PROBE = (("The museum opened in 1950 beside the river.", "The museum opened in 1950."),
         ("The museum opened in 1950 beside the river.", "The museum opened in 1962."),
         ("The garden behind it has two fountains and a pond.", "The garden has a cafe."),
         ('{"name": "Blue Door", "price": "$$", "wifi": false}', "The Blue Door offers free wifi."),
         ("Sales rose 12% to 4.1 million units in the second quarter, the company said on Monday.",
          "Sales fell in the second quarter."),
         ("A man in a red jacket is riding a bicycle down a hill.", "A person is cycling."))
"""Fixed (premise, hypothesis) pairs every export is checked on."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("torch", "transformers", "onnxruntime", "onnx")}


def onnx_model(run_dir: Path, precision: str, weights_sha256: str, max_length: int) -> Path:
    """The run's ``precision`` export (``fp32`` or ``int8``), made when missing or not of these weights."""
    folder = run_dir / "onnx"
    model, record = folder / f"model-{precision}.onnx", folder / f"model-{precision}.json"
    problem = _record_problem(model, record, weights_sha256)
    if problem is None:
        return model
    logger.info("exporting the NLI model to ONNX (%s) into %s (%s)", precision, folder, problem)
    try:
        import torch  # noqa: F401
    except ImportError:
        raise InputError(f"no usable ONNX export of the NLI model ({problem}); making one needs torch: pip "
                         f"install torch, or load with runtime=torch", path=model) from None
    folder.mkdir(exist_ok=True)
    if precision == "fp32":
        made = _export_fp32(run_dir, model, max_length)
    else:
        base = onnx_model(run_dir, "fp32", weights_sha256, max_length)
        made = _quantize(run_dir, base, model, max_length)
    atomic_write_json(record, {"weights_sha256": weights_sha256, "sha256": sha256(model), "precision": precision,
                               "opset": OPSET, "versions": _versions(), "probe_pairs": len(PROBE), **made})
    return model


def _record_problem(model: Path, record: Path, weights_sha256: str) -> str | None:
    """Why an existing export cannot be used (None: it can)."""
    if not model.is_file() or not record.is_file():
        return "none yet"
    try:
        kept = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "its record does not read"
    if not isinstance(kept, dict) or kept.get("weights_sha256") != weights_sha256:
        return "it was made from other weights"
    if kept.get("sha256") != sha256(model):
        return "the file is not the one its record names"
    return None


def _export_fp32(run_dir: Path, out: Path, max_length: int) -> dict[str, Any]:
    """Export the run's classifier (logits) to ``out``; its largest probability difference from torch on
    :data:`PROBE`."""
    import contextlib
    import sys
    import warnings

    import torch

    from ragtruth_spans.detectors.entailment.model import load_classifier, load_tokenizer

    model = load_classifier(str(run_dir), device="cpu").eval()
    tokenizer = load_tokenizer(str(run_dir))
    batch = tokenizer([p for p, _ in PROBE], [h for _, h in PROBE], truncation="longest_first",
                      max_length=max_length, padding=True, return_tensors="pt")
    tensors = tuple(batch[name] for name in INPUTS)

    wrapped = with_plain_inputs(model, "logits")
    batch_dim, seq_dim = torch.export.Dim("batch"), torch.export.Dim("sequence", max=4096)
    with tempfile.TemporaryDirectory(dir=out.parent) as scratch, warnings.catch_warnings(), torch.no_grad(), \
            contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(wrapped, tensors, input_names=list(INPUTS), output_names=["logits"],
                                    dynamic_shapes=({0: batch_dim, 1: seq_dim},) * 3, opset_version=OPSET,
                                    dynamo=True, verbose=False)
        made = Path(scratch) / out.name
        program.save(str(made))
        expected = torch.softmax(wrapped(*tensors).float(), dim=-1).numpy()
        got = OnnxClassifier(made, run_dir, max_length=max_length, alone=False).probabilities(PROBE)
        difference = float(np.abs(got - expected).max())
        if not difference <= TOLERANCE:
            raise InputError(f"the ONNX export differs from torch by {difference:.2e} (> {TOLERANCE}); not kept",
                             path=run_dir)
        made.replace(out)
    return {"max_difference_to_torch": difference}


def _quantize(run_dir: Path, base: Path, out: Path, max_length: int) -> dict[str, Any]:
    """Quantize the fp32 export ``base`` into ``out``; its largest probability difference from fp32 on
    :data:`PROBE` (over :data:`INT8_MAX_DIFFERENCE`: an :class:`InputError`)."""
    with tempfile.TemporaryDirectory(dir=out.parent) as scratch:
        made = Path(scratch) / out.name
        quantize_file(base, made)
        reference = OnnxClassifier(base, run_dir, max_length=max_length).probabilities(PROBE)
        got = OnnxClassifier(made, run_dir, max_length=max_length).probabilities(PROBE)
        difference = float(np.abs(got - reference).max())
        if not difference <= INT8_MAX_DIFFERENCE:
            raise InputError(f"the int8 NLI model moves a probe probability by {difference:.3f} from fp32's "
                             f"(> {INT8_MAX_DIFFERENCE}); not kept", path=run_dir)
        made.replace(out)
    return {"max_difference_to_fp32": difference, "labels_agree_with_fp32":
            float((got.argmax(1) == reference.argmax(1)).mean())}


class OnnxClassifier:
    """An exported NLI model in an ONNX Runtime session, with the run's ``tokenizer.json`` (pairs cut to
    ``max_length`` tokens, the longer side first, as :func:`~.model.encode_pairs` cuts them). ``alone``: each pair
    runs by itself (int8; see the module docstring), else pairs run in batches of similar length."""

    def __init__(self, model_file: Path, folder: Path, *, max_length: int, alone: bool = True,
                 threads: int | None = None) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        from ragtruth_spans.models.onnx_session import pad_token

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.intra_op_num_threads = max(threads or 0, 0)
        try:
            self._session = onnxruntime.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            message = " ".join(str(exc).split())[:300] or type(exc).__name__
            raise InputError(f"does not load ({message})", path=model_file) from None
        self._tokenizer = Tokenizer.from_file(str(Path(folder) / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
        self._pad = self._tokenizer.token_to_id(pad_token(Path(folder))) or 0
        self.alone = alone

    def probabilities(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> np.ndarray:
        """``len(pairs) x 3`` float32 probabilities of (entailment, neutral, contradiction)."""
        from ragtruth_spans.detectors.shared.encoder import length_batches

        out = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
        if not pairs:
            return out
        encoded = self._tokenizer.encode_batch([(p, h) for p, h in pairs])
        lengths = [len(e.ids) for e in encoded]
        chunks = [[i] for i in range(len(pairs))] if self.alone else length_batches(lengths, batch_size)
        for chunk in chunks:
            width = max(lengths[i] for i in chunk)
            arrays = {name: np.full((len(chunk), width), self._pad if name == "input_ids" else 0, dtype=np.int64)
                      for name in INPUTS}
            for row, i in enumerate(chunk):
                e = encoded[i]
                for name, values in zip(INPUTS, (e.ids, e.attention_mask, e.type_ids)):
                    arrays[name][row, :len(values)] = values
            logits = self._session.run(None, arrays)[0].astype(np.float64)
            logits -= logits.max(axis=1, keepdims=True)
            odds = np.exp(logits)
            out[chunk] = (odds / odds.sum(axis=1, keepdims=True)).astype(np.float32)
        return out
