"""A bounded, thread-safe least-recently-used map (what the detectors keep per context) and the make-once rule
it shares with the context cache of encodings.

:class:`BoundedCache` keeps at most ``size`` entries; :meth:`BoundedCache.get_or_make` makes a missing entry once
even when threads ask for it together (a context prepared ahead while its answer is still being written, and the
check that then needs it). Values are any objects; None is never kept. A pickled copy starts empty.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any


class MakeOnce:
    """Each missing key made by one thread at a time: a thread asking for a key another thread is making waits
    for it, then reads it; if that maker fails (or its value is not kept), the waiter makes it itself."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._making: dict[Hashable, threading.Event] = {}

    def __call__(self, key: Hashable, get: Callable[[Hashable], Any], put: Callable[[Hashable, Any], None],
                 make: Callable[[], Any]) -> Any:
        """``get(key)``; when it is None, ``make()``'s value, given to ``put`` (see the class docstring)."""
        found = get(key)
        while found is None:
            with self._lock:
                event = self._making.get(key)
                mine = event is None
                if mine:
                    event = self._making[key] = threading.Event()
            if mine:
                try:
                    found = make()
                    put(key, found)
                finally:
                    with self._lock:
                        del self._making[key]
                    event.set()
                return found
            event.wait()
            found = get(key)
        return found


class BoundedCache:
    """At most ``size`` entries, the least recently used dropped first; one lock, so threads may share it.

    >>> cache = BoundedCache(2)
    >>> cache.put("a", 1); cache.put("b", 2); cache.get("a"); cache.put("c", 3)
    1
    >>> cache.get("b") is None, len(cache)
    (True, 2)
    """

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self.size = size
        self._data: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._once = MakeOnce()

    def get(self, key: Hashable) -> Any:
        """The value under ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._data.get(key)
            if value is not None:
                self._data.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        """Keep ``value`` under ``key``, dropping the least recently used entries beyond ``size``."""
        if value is None:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value under ``key``; when there is none, ``make()``'s, kept. A thread asking for a key another
        thread is making waits for it; if that maker fails, the waiter makes it itself.

        >>> BoundedCache(4).get_or_make("a", lambda: [1, 2])
        [1, 2]
        """
        return self._once(key, self.get, self.put, make)

    def __getstate__(self) -> dict[str, Any]:
        return {"size": self.size}  # a copy (pickled for another process) starts empty: entries are not state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["size"])  # type: ignore[misc]

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
