"""Shared fixtures. Model fixtures (tiny Llama, overfit run) live here too, session-scoped, so the suite
trains each tiny model once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_SAMPLE = REPO_ROOT.parent / "shared" / "data" / "ragtruth_sample"

# Two cores: keep torch from oversubscribing when it is imported by a test.
os.environ.setdefault("OMP_NUM_THREADS", "2")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_DISABLED", "true")


@pytest.fixture(scope="session")
def shared_sample_dir() -> Path:
    """The real 142-response RAGTruth sample beside the checkout; tests using it skip when it is absent."""
    if not (SHARED_SAMPLE / "response.jsonl").is_file():
        pytest.skip("../shared/data/ragtruth_sample is not present")
    return SHARED_SAMPLE
