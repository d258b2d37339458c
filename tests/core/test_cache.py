from __future__ import annotations

from pathlib import Path

import pytest

from ragtruth_spans.core.cache import CACHE_ENV, cache_root
from ragtruth_spans.detectors.judge.settings import judge_cache_dir


def test_the_cache_root_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "mine"))
    assert cache_root() == tmp_path / "mine"
    assert judge_cache_dir() == tmp_path / "mine" / "judge"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "ragtruth-spans"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "ragtruth-spans"
