"""Reading an entailment run directory back into a detector (the family's ``load``).

The directory is a standard Hugging Face sequence-classification folder (``config.json`` with ``id2label``,
``model.safetensors``, tokenizer files) beside ``recipe.yaml``, ``run_info.json`` and ``metrics.json``; the
loader (:func:`ragtruth_spans.load_detector`) has verified every file against the run's manifest first.
"""

from __future__ import annotations

from pathlib import Path

from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.entailment.detector import EntailmentDetector
from ragtruth_spans.detectors.entailment.model import load_classifier, load_tokenizer
from ragtruth_spans.detectors.entailment.pairs import LABELS
from ragtruth_spans.detectors.entailment.recipe import EntailmentRecipe
from ragtruth_spans.detectors.recipes import read_finished_run
from ragtruth_spans.models.hf_models import check_model_folder, check_tokenizer_folder


def load_run(path: str | Path, *, device: str | None = None, batch_size: int = 32,
             threshold: float | None = None) -> EntailmentDetector:
    """The detector of a finished run directory; ``threshold`` overrides the run's."""
    import torch

    path = Path(path)
    recipe, info = read_finished_run(path, EntailmentRecipe, "detection", dict)
    check_model_folder(path, what="trained NLI model")
    if not (path / "model.safetensors").is_file():
        raise InputError("the model weights are missing (no model.safetensors)", path=path)
    check_tokenizer_folder(path)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    model = load_classifier(str(path), device=device).eval()
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    if labels != list(LABELS):
        raise InputError(f"config.json's id2label must be {list(LABELS)}, got {labels}", path=path / "config.json")
    d = recipe.detection
    saved = info["detection"].get("threshold", d.threshold)
    return EntailmentDetector(
        model, load_tokenizer(str(path)), max_length=recipe.model.max_length,
        threshold=threshold if threshold is not None else saved, windows=d.windows,
        window_sentences=d.window_sentences, window_fields=d.window_fields, encoder=d.encoder, device=device,
        batch_size=batch_size, run_info={"run_dir": str(path.resolve()), "fingerprint": info.get("fingerprint")})
