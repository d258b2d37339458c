"""Reading an entailment run directory back into a detector (the family's ``load``).

The directory is a standard Hugging Face sequence-classification folder (``config.json`` with ``id2label``,
``model.safetensors``, tokenizer files) beside ``recipe.yaml``, ``run_info.json`` and ``metrics.json``; the
loader (:func:`ragtruth_spans.load_detector`) has verified every file against the run's manifest first.
"""

from __future__ import annotations

import json
from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.entailment.detector import EntailmentDetector
from ragtruth_spans.detectors.entailment.model import load_classifier, load_tokenizer
from ragtruth_spans.detectors.entailment.onnx import RUNTIMES, OnnxClassifier, onnx_model, sha256
from ragtruth_spans.detectors.entailment.pairs import LABELS
from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe
from ragtruth_spans.detectors.recipes import read_finished_run
from ragtruth_spans.models.hf_models import check_model_folder, check_tokenizer_folder
from ragtruth_spans.runs.manifest import MANIFEST_KEY


def load_run(path: str | Path, *, device: str | None = None, batch_size: int = 32,
             threshold: float | None = None, runtime: str | None = None, windows: int | None = None,
             window_sentences: int | None = None) -> EntailmentDetector:
    """The detector of a finished run directory; ``threshold``, ``windows`` and ``window_sentences`` override the
    run's ``detection`` values; ``runtime``: ``torch``, or ``onnx-fp32`` / ``onnx-int8`` (:mod:`.onnx`: on the
    CPU, without torch once exported); None: torch."""
    path, runtime = Path(path), runtime or "torch"
    for name, value in (("windows", windows), ("window_sentences", window_sentences)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise InputError(f"option {name} must be a whole number of at least 1, got {value!r}", field=name)
    recipe, info = read_finished_run(path, EntailmentRecipe, "detection", dict)
    check_model_folder(path, what="trained NLI model")
    if not (path / "model.safetensors").is_file():
        raise InputError("the model weights are missing (no model.safetensors)", path=path)
    check_tokenizer_folder(path)
    labels = _labels(path)
    if labels != list(LABELS):
        raise InputError(f"config.json's id2label must be {list(LABELS)}, got {labels}", path=path / "config.json")
    if runtime not in RUNTIMES:
        raise InputError(f"runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}", field="runtime")
    if runtime == "torch":
        import torch

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model, tokenizer = load_classifier(str(path), device=device).eval(), load_tokenizer(str(path))
    else:
        if device not in (None, "cpu"):
            raise InputError(f"runtime={runtime} runs on the CPU; got device {device!r}", field="device")
        weights = (info.get(MANIFEST_KEY) or {}).get("model.safetensors") or sha256(path / "model.safetensors")
        precision = runtime.removeprefix("onnx-")
        model_file = onnx_model(path, precision, weights, recipe.model.max_length)
        model, tokenizer = OnnxClassifier(model_file, path, max_length=recipe.model.max_length,
                                          alone=precision == "int8"), None
    d = recipe.detection
    saved = info["detection"].get("threshold", d.threshold)
    return EntailmentDetector(
        model, tokenizer, max_length=recipe.model.max_length,
        threshold=threshold if threshold is not None else saved, windows=windows or d.windows,
        window_sentences=window_sentences or d.window_sentences, window_fields=d.window_fields, encoder=d.encoder,
        device=device, batch_size=batch_size, runtime=runtime,
        run_info={"run_dir": str(path.resolve()), "fingerprint": info.get("fingerprint")})


def _labels(path: Path) -> list[str]:
    """config.json's labels in order (read without transformers)."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        names = config["id2label"]
        return [names[str(i)] for i in range(len(names))]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"config.json has no readable id2label ({type(exc).__name__})",
                         path=path / "config.json") from None
