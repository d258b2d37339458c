"""The settings of an LLM judge: which endpoint and model, which mode, how to sample, how to talk to the endpoint.

They come from ``load_detector("llm-judge", **options)`` (or ``--option KEY=VALUE`` on the command line), or from
a **judge directory**: a folder holding ``recipe.yaml`` with ``kind: llm-judge`` and the same keys, which pins the
endpoint, model, mode, prompt version and sampling for a reproducible run (options given when loading it override
its keys). Every key is checked: an unknown key or a bad value is an :class:`InputError` naming it.

The API key is never a setting: ``api_key_env`` names the environment variable that holds it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ragtruth_spans.core.cache import cache_root
from ragtruth_spans.core.errors import InputError
from ragtruth_spans.detectors.family import check_options
from ragtruth_spans.detectors.judge.prompts import PROMPT_VERSIONS

KIND = "llm-judge"
JUDGE_FILE = "recipe.yaml"
"""The file of a judge directory (named like a run directory's recipe, so the loader finds its ``kind``)."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_RESERVED_BODY_KEYS = ("model", "messages", "stream", "n")


class JudgeSettings(BaseModel):
    """Everything that decides what a judge sends and how (see docs/JUDGE.md for each key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str = Field(description="OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1.")
    model: str = Field(min_length=1, description="Model name as the endpoint knows it.")
    mode: Literal["span", "claims"] = "span"
    api_key_env: str | None = Field(None, description="Environment variable holding the API key (sent as Bearer).")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    seed: int | None = None
    max_tokens: int = Field(1024, ge=0, description="Completion budget per request; 0 = not sent.")
    claims_per_request: int = Field(20, ge=1, description="Claims mode: statements judged in one request.")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="Extra request fields, sent as given.")
    concurrency: int = Field(4, ge=1, le=256, description="Requests in flight at once.")
    timeout: float = Field(120.0, gt=0.0, description="Seconds one request may take.")
    max_retries: int = Field(5, ge=0, le=20, description="Retries of a request on 429, 5xx, timeouts and "
                                                          "connection errors.")
    backoff_base: float = Field(1.0, ge=0.0, description="First retry delay (seconds); doubles each retry.")
    backoff_max: float = Field(60.0, ge=0.0, description="Longest retry delay, Retry-After included.")
    max_consecutive_failures: int = Field(5, ge=1, description="Stop the run after this many requests in a row "
                                                               "failed even after their retries.")
    cache: bool = True
    cache_dir: str | None = Field(None, description="Answer cache; default: see judge_cache_dir().")
    price_prompt_per_1k: float | None = Field(None, ge=0.0)
    price_completion_per_1k: float | None = Field(None, ge=0.0)
    prompt_version: str | None = Field(None, description="If set, must equal the version this code sends.")

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("must be an http(s) URL such as http://127.0.0.1:8000/v1")
        return value.rstrip("/")

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_NAME.fullmatch(value):
            raise ValueError("must be the NAME of an environment variable (e.g. OPENAI_API_KEY), never the key")
        return value

    @field_validator("extra_body")
    @classmethod
    def _extra_body(cls, value: dict[str, Any]) -> dict[str, Any]:
        reserved = [key for key in _RESERVED_BODY_KEYS if key in value]
        if reserved:
            raise ValueError(f"may not set {', '.join(reserved)} (the judge sets them)")
        return value

    @field_validator("prompt_version")
    @classmethod
    def _pinned_prompt(cls, value: str | None, info: ValidationInfo) -> str | None:
        mode = info.data.get("mode", "span")
        if value is not None and value != PROMPT_VERSIONS[mode]:
            raise ValueError(f"{value!r} is pinned, but this version of ragtruth-spans sends prompt "
                             f"{PROMPT_VERSIONS[mode]!r} in {mode} mode")
        return value

    @property
    def current_prompt_version(self) -> str:
        """The prompt version this code sends in the settings' mode."""
        return PROMPT_VERSIONS[self.mode]

    def api_key(self) -> str | None:
        """The API key from the environment variable ``api_key_env`` (None when no variable is named); a named
        variable that is unset or empty is an :class:`InputError`."""
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key.strip():
            raise InputError(f"the environment variable {self.api_key_env} (api_key_env) is not set or empty",
                             field="api_key_env")
        return key.strip()


def judge_cache_dir() -> Path:
    """Where answers are cached when no ``cache_dir`` is given: ``judge/`` under
    :func:`~ragtruth_spans.core.cache.cache_root`."""
    return cache_root() / "judge"


def judge_settings(options: Mapping[str, Any], *, source: str = "options") -> JudgeSettings:
    """Validated settings from ``options``; an unknown key (:func:`check_options`) or a bad value is an
    :class:`InputError` naming the key."""
    check_options(KIND, options, set(JudgeSettings.model_fields))
    for required in ("base_url", "model"):
        if required not in options:
            raise InputError(f"an llm-judge needs {required} (e.g. --option {required}=...) in {source}",
                             field=required)
    try:
        return JudgeSettings(**options)
    except ValidationError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg'].removeprefix('Value error, ')}"
                    for e in exc.errors()]
        first = exc.errors()[0]["loc"]
        raise InputError(f"invalid llm-judge {source}: " + "; ".join(problems),
                         field=str(first[0]) if first else None) from None


def read_judge_dir(judge_dir: str | Path, overrides: Mapping[str, Any]) -> JudgeSettings:
    """Settings of a judge directory (``recipe.yaml``, ``kind: llm-judge``) with ``overrides`` applied."""
    import yaml

    from ragtruth_spans.training.recipe_files import load_yaml

    path = Path(judge_dir) / JUDGE_FILE
    if not path.is_file():
        raise InputError(f"a judge directory needs {JUDGE_FILE} with kind: {KIND}", path=path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"invalid YAML: {exc}", path=path) from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise InputError(f"expected a mapping with kind: {KIND}", path=path, field="kind")
    settings = {key: value for key, value in data.items() if key != "kind"} | dict(overrides)
    if settings.get("cache_dir") is None and settings.get("cache", True):
        settings["cache_dir"] = str(Path(judge_dir).resolve() / "cache")
    return judge_settings(settings, source=str(path))
