"""The generative family: a (Q)LoRA-fine-tuned causal LM that writes out the hallucinated spans.

Options of :func:`load` (``load_detector(run_dir, **options)``): ``backend`` (``hf``, default, CPU or GPU; or
``vllm``, GPU, optional extra), ``device`` (hf), ``batch_size`` (hf), ``max_new_tokens``, ``load_in_4bit``
(override the recipe's quantization), ``score_clean`` (compute the response score ``1 - P(clean)``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import check_choice
from ragtruth_spans.detectors.base import Detector
from ragtruth_spans.detectors.family import Family, check_options
from ragtruth_spans.detectors.generative.recipe import GenerativeRecipe

BACKENDS: tuple[str, ...] = ("hf", "vllm")
_OPTIONS = {"hf": {"backend", "device", "batch_size", "max_new_tokens", "load_in_4bit", "score_clean"},
            "vllm": {"backend", "max_new_tokens", "load_in_4bit", "score_clean"}}


def load(run_dir: str | Path, *, backend: str = "hf", **options: Any) -> Detector:
    """A generative detector from a run directory, on the ``backend`` named (see the module docstring)."""
    check_choice(backend, BACKENDS, "backend", field="backend")
    check_options(f"generative ({backend} backend)", {"backend": backend, **options}, _OPTIONS[backend])
    if backend == "vllm":
        from ragtruth_spans.detectors.generative.vllm import VLLMDetector

        return VLLMDetector.from_pretrained(run_dir, **options)
    from ragtruth_spans.detectors.generative.hf import GenerativeDetector

    return GenerativeDetector.from_pretrained(run_dir, **options)


def train(recipe: GenerativeRecipe, **kwargs: Any) -> Any:
    from ragtruth_spans.detectors.generative.train import train as train_generative

    return train_generative(recipe, **kwargs)


FAMILY = Family(kind="generative", summary="QLoRA-fine-tuned causal LM that writes out the hallucinated spans",
                load=load, recipe=GenerativeRecipe, train=train, extra_sources="unweighted")
