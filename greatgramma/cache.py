"""The one cache of the runtime: a dict bounded by bytes and entries, oldest entries out first."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any


class BoundedCache(dict):
    """A dict whose entries are charged an estimate of their bytes as they go in; past ``budget``
    bytes or ``max_entries`` entries the oldest go. A hit is one plain ``dict.get``.

    For memos whose entries are rows that grow (a dict of answers per key), ``item_bytes(key)``
    is what one more answer in the row under ``key`` costs: :meth:`grew` charges it, and an
    evicted row gives back its length times that.

    Safe to share between threads: a new key goes in at once (``setdefault``: one value per key
    wins), its charge and the evictions under a lock; lookups see a consistent dict. Every
    cache and memo of the masker and the parser is one of these, each with its share of the
    masker's ``cache_bytes``.
    """

    def __init__(self, budget: int, max_entries: int = 1 << 62, item_bytes: Callable[[Any], int] | None = None) -> None:
        super().__init__()
        self.budget, self.max_entries, self.nbytes = budget, max_entries, 0
        self.item_bytes = item_bytes
        self._charged: OrderedDict = OrderedDict()  # key -> bytes charged when it went in, oldest first
        self._lock = threading.Lock()

    def put(self, key: Any, value: Any, nbytes: int) -> Any:
        """Store ``value`` unless ``key`` is already in (then keep that one); return what is stored.
        The oldest entries go until the cache fits (one oversized entry may stay)."""
        got = self.setdefault(key, value)
        if got is not value:
            return got
        with self._lock:
            self._charged[key] = nbytes
            self.nbytes += nbytes
            if self.nbytes > self.budget or len(self._charged) > self.max_entries:
                self._evict()
        return value

    def grew(self, key: Any) -> None:
        """The row under ``key`` got one more answer. On the memos' hot path, so without the lock:
        the next :meth:`put` evicts, and a race only blurs the count."""
        self.nbytes += self.item_bytes(key)

    def _evict(self) -> None:
        charged, item_bytes = self._charged, self.item_bytes
        while (self.nbytes > self.budget or len(charged) > self.max_entries) and len(charged) > 1:
            old, n = charged.popitem(last=False)
            row = self.pop(old, ())
            self.nbytes -= n if item_bytes is None else n + len(row) * item_bytes(old)

    def clear(self) -> None:
        with self._lock:
            super().clear()
            self._charged.clear()
            self.nbytes = 0
