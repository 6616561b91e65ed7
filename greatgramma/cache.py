"""The one cache of the runtime: a dict bounded by bytes and entries, oldest entries out first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class BoundedCache(dict):
    """A dict whose entries are charged an estimate of their bytes as they go in (or grow); past
    ``budget`` bytes or ``max_entries`` entries the oldest go. A hit is one plain ``dict.get``.

    Safe to share between threads: additions take a lock; lookups see a consistent dict. Every
    cache and memo of the masker and the parser is one of these, each with its share of the
    masker's ``cache_bytes``.
    """

    def __init__(self, budget: int, max_entries: int = 1 << 62) -> None:
        super().__init__()
        self.budget, self.max_entries, self.nbytes = budget, max_entries, 0
        self._charged: OrderedDict = OrderedDict()  # key -> bytes charged, oldest first
        self._lock = threading.Lock()

    def put(self, key: Any, value: Any, nbytes: int) -> Any:
        """Store ``value`` unless ``key`` is already in (then keep that one); return what is stored.
        The oldest entries go until the cache fits (one oversized entry may stay)."""
        with self._lock:
            got = dict.get(self, key)
            if got is not None:
                return got
            self[key] = value
            self._charged[key] = nbytes
            self.nbytes += nbytes
            self._evict()
        return value

    def charge(self, key: Any, nbytes: int) -> None:
        """The entry under ``key`` grew by about ``nbytes`` (a memo row got one more answer)."""
        with self._lock:
            if key in self._charged:
                self._charged[key] += nbytes
                self.nbytes += nbytes
                self._evict()

    def _evict(self) -> None:
        charged = self._charged
        while (self.nbytes > self.budget or len(charged) > self.max_entries) and len(charged) > 1:
            old, n = charged.popitem(last=False)
            del self[old]
            self.nbytes -= n

    def clear(self) -> None:
        with self._lock:
            super().clear()
            self._charged.clear()
            self.nbytes = 0
