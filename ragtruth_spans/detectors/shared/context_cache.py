"""A bounded cache of context encodings: what the sentence encoder computed for one context, kept by the
SHA-256 of the encoder's identity and the context's units, so that candidates sharing a context, a context sent
again and the sentences of one stream each encode the context once.

The bound is in **bytes** (the NumPy arrays held), not entries: a 100,000-character context holds ~40 MB of
token embeddings, a 2,000-character one under 1 MB, so a count bound would bound nothing. Least recently used
entries go first; an entry larger than the whole cache is not kept. A cache of 0 bytes keeps nothing (every
context is encoded again): results are the same with and without the cache, only the time differs (tested).
Thread-safe (one lock): the HTTP service's batcher thread and the evidence threads may share an encoder.
:meth:`ContextCache.get_or_make` makes each entry once even when threads ask for it together: a thread that finds
another one making it waits for that result instead of encoding the context a second time — what lets a context be
encoded ahead (:meth:`Detector.prepare_context <ragtruth_spans.detectors.base.Detector.prepare_context>`, while an
answer is still being written) and the answer's check take it over wherever that encoding has got to.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ragtruth_spans.core.lru import MakeOnce

logger = logging.getLogger(__name__)

DEFAULT_CACHE_BYTES = 256 * 1024 * 1024
"""The default bound: 256 MiB (about 300 contexts of 2,000 characters with their token embeddings)."""


def context_key(identity: str, kind: str, units: Sequence[str]) -> str:
    """The cache key of a context's encoding: SHA-256 over the encoder's ``identity``, what is kept (``kind``)
    and every unit's text (length-prefixed, so no two different unit lists share a key).

    >>> context_key("minilm@r1", "tokens", ["A.", "B."]) == context_key("minilm@r1", "tokens", ["A.", "B."])
    True
    >>> context_key("minilm@r1", "tokens", ["A.", "B."]) == context_key("minilm@r1", "tokens", ["A.B."])
    False
    """
    digest = hashlib.sha256()
    for part in (identity, kind, *units):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


@dataclass
class CacheStats:
    """Lookups that found their entry (``hits``) or not (``misses``), entries dropped to stay in bounds
    (``evictions``), and what is held now (``entries``, ``bytes``) against ``max_bytes``."""

    hits: int = 0
    misses: int = 0
    evictions: int = 0
    entries: int = 0
    bytes: int = 0
    max_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        lookups = self.hits + self.misses
        return asdict(self) | {"hit_rate": round(self.hits / lookups, 4) if lookups else None}


def _size(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_size(v) for v in value)
    return 64  # a small Python object: counted, never exact


class ContextCache:
    """A least-recently-used map from :func:`context_key` keys to arrays, at most ``max_bytes`` of them.

    >>> cache = ContextCache(max_bytes=1000)
    >>> cache.put("a", np.zeros(100, dtype=np.float32))  # 400 bytes
    >>> cache.get("a").shape, cache.get("b")
    ((100,), None)
    >>> cache.put("b", np.zeros(200, dtype=np.float32))  # 800 bytes: "a" goes to make room
    >>> cache.get("a") is None, cache.stats.to_dict()["bytes"]
    (True, 800)
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self._entries: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._once = MakeOnce()
        self.stats = CacheStats(max_bytes=max_bytes)

    @property
    def max_bytes(self) -> int:
        return self.stats.max_bytes

    def resize(self, max_bytes: int) -> None:
        """Set the bound (``0``: keep nothing); entries beyond it are dropped at once."""
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        with self._lock:
            self.stats.max_bytes = max_bytes
            self._shrink()

    def get(self, key: str) -> Any:
        """The value kept under ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                self.stats.misses += 1
                return None
            self._entries.move_to_end(key)
            self.stats.hits += 1
            return found[0]

    def get_or_make(self, key: str, make: Callable[[], Any]) -> Any:
        """The value under ``key``; when there is none, ``make()``'s, kept. While one thread makes a key, another
        that asks for it waits and then reads it (one miss, then one hit); if the maker fails or its value is too
        large to keep, the waiter makes it itself.

        >>> cache = ContextCache(max_bytes=1000)
        >>> cache.get_or_make("a", lambda: np.ones(3)).sum(), cache.get_or_make("a", lambda: 1 / 0).sum()
        (np.float64(3.0), np.float64(3.0))
        """
        return self._once(key, self.get, self.put, make)

    def put(self, key: str, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used entries to stay within the bound (a
        value larger than the bound is not kept)."""
        size = _size(value)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.stats.bytes -= old[1]
            if size > self.stats.max_bytes:
                self.stats.entries = len(self._entries)
                return
            self._entries[key] = (value, size)
            self.stats.bytes += size
            self._shrink()

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        with self._lock:
            self._entries.clear()
            self.stats.bytes = self.stats.entries = 0

    def _shrink(self) -> None:
        while self._entries and self.stats.bytes > self.stats.max_bytes:
            _, (_, size) = self._entries.popitem(last=False)
            self.stats.bytes -= size
            self.stats.evictions += 1
        self.stats.entries = len(self._entries)
