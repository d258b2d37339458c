"""The on-disk cache of the judge's answers, so an interrupted run resumes and a re-run sends nothing.

One JSON file per answer, ``<cache_dir>/<key[:2]>/<key>.json``, where ``key`` is the sha256 of the exact request:
the endpoint URL, the whole request body (model, messages, temperature, max_tokens, top_p, seed, extra_body) and
the prompt version. A changed setting, prompt or input is another key, so an answer is only ever reused for the
very request that produced it. Only answers the endpoint returned (HTTP 200 with a chat completion) are stored,
garbage included (it is the model's answer to that request); failures are never cached.

Files are written to a temporary name and renamed, so a kill never leaves a half-written entry and several
processes may share a cache. Clearing it is deleting the directory (or any of its files).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ragtruth_spans.core.errors import InputError

CACHE_FORMAT = 1


def request_key(endpoint: str, body: dict[str, Any], prompt_version: str) -> str:
    """sha256 (hex) of the canonical JSON of ``endpoint``, ``body`` and ``prompt_version``."""
    canonical = json.dumps({"format": CACHE_FORMAT, "endpoint": endpoint, "body": body,
                            "prompt_version": prompt_version}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class AnswerCache:
    """Answers by request key, stored under ``directory`` (created on first write)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None when absent or unreadable (an unreadable entry is ignored and rewritten)."""
        try:
            entry = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("content"), str):
            return None
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` (JSON-ready, with ``content``) atomically; a cache that cannot be written (permissions,
        a full disk) is an :class:`InputError` naming the directory."""
        target = self.path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        except OSError as exc:
            raise InputError(f"cannot write the judge's answer cache ({exc.strerror}); choose another cache_dir or "
                             "set cache=false", path=self.directory) from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump({"key": key, **entry}, fh, ensure_ascii=False)
            os.replace(tmp, target)
        except OSError as exc:
            Path(tmp).unlink(missing_ok=True)
            raise InputError(f"cannot write the judge's answer cache ({exc.strerror}); choose another cache_dir or "
                             "set cache=false", path=self.directory) from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
