"""The one cache of the runtime: a dict bounded by bytes and entries, that starts over when full; and a memo per live object."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class BoundedCache(dict):
    """A dict whose entries are charged an estimate of their bytes as they go in (or grow); an
    addition that would pass ``budget`` bytes or ``max_entries`` entries first empties it. A hit
    is one plain ``dict.get``, an addition a few operations: these caches sit on the masker's and
    the parser's hot paths, where evicting one by one cost more than the entries saved (what
    they hold is recomputed from the cheaper caches below them).

    Safe to share between threads without a lock: each operation on the dict is atomic, so a
    race can only blur the count or drop entries early, never give a wrong value. Every cache and
    memo of the masker and the parser is one of these, each with its share of the masker's
    ``cache_bytes``.
    """

    __slots__ = ("budget", "max_entries", "nbytes", "_held")

    def __init__(self, budget: int, max_entries: int = 1 << 62) -> None:
        super().__init__()
        self.budget, self.max_entries, self.nbytes = budget, max_entries, 0
        self._held: dict[int, Any] = {}  # the shared parts charged (put_shared), by id; kept alive with it

    def put(self, key: Any, value: Any, nbytes: int) -> Any:
        """Store ``value`` unless ``key`` is already in (then keep that one, charged nothing more);
        return what is stored."""
        if key in self:
            return self[key]
        if self.nbytes + nbytes > self.budget or len(self) >= self.max_entries:
            self.clear()
        self.nbytes += nbytes
        self[key] = value
        return value

    def put_shared(self, key: Any, value: Any, charge: Callable[[dict], int]) -> Any:
        """:meth:`put` of an entry whose parts other entries hold too (a words array, a stack's
        frames): ``charge(held)`` is its bytes, counting only the parts not in ``held`` (by id),
        which it adds there (:func:`held_bytes`), so each shared part is charged once per
        generation of the cache."""
        if key in self:
            return self[key]
        if len(self) >= self.max_entries:
            self.clear()
        nbytes = charge(self._held)
        if self.nbytes + nbytes > self.budget and self:
            self.clear()
            nbytes = charge(self._held)  # everything is new again
        self.nbytes += nbytes
        self[key] = value
        return value

    def grew(self, nbytes: int) -> None:
        """An entry grew by about ``nbytes`` (a memo row got one more answer)."""
        self.nbytes += nbytes

    def clear(self) -> None:
        super().clear()
        self._held = {}
        self.nbytes = 0


class LruCache(BoundedCache):
    """A :class:`BoundedCache` that, when full, lets go of its least recently used entries one at
    a time instead of starting over: for a few costly entries (lexer views: ~1 ms and 0.5 MB each
    at 128K tokens), where a start-over rebuilt the whole working set at once (~0.1 s) whenever
    the working set passed the budget by one entry. A hit costs a move to the end of the order."""

    __slots__ = ("_order",)

    def __init__(self, budget: int, max_entries: int = 1 << 62) -> None:
        super().__init__(budget, max_entries)
        self._order: OrderedDict[Any, int] = OrderedDict()  # key -> its charge, least recently used first

    def get(self, key: Any, default: Any = None) -> Any:
        got = dict.get(self, key, default)
        if got is not default:
            try:
                self._order.move_to_end(key)
            except KeyError:  # let go of by another thread meanwhile
                pass
        return got

    def put(self, key: Any, value: Any, nbytes: int) -> Any:
        if key in self:
            return self[key]
        while self._order and (self.nbytes + nbytes > self.budget or len(self) >= self.max_entries):
            try:
                old, charge = self._order.popitem(last=False)
            except KeyError:  # emptied by another thread meanwhile
                break
            dict.pop(self, old, None)
            self.nbytes -= charge
        self.nbytes += nbytes
        self[key] = value
        self._order[key] = nbytes
        return value

    def clear(self) -> None:
        super().clear()
        self._order.clear()


def held_bytes(held: dict[int, Any], part: Any, nbytes: int) -> int:
    """``nbytes`` if ``part`` is not in ``held`` yet (it is added, and kept alive there), else 0."""
    if id(part) in held:
        return 0
    held[id(part)] = part
    return nbytes


def stack_entry_charge(
    part: Any, part_nbytes: int, stack: Any, stack_bytes: Callable[[Any, dict], int]
) -> Callable[[dict], int]:
    """The ``charge`` (:meth:`BoundedCache.put_shared`) of an entry keyed by ``stack`` that holds
    ``part``: the part once, and the stack's frames not charged yet (``stack_bytes`` is the
    parser's :meth:`~greatgramma.parser.LalrParser.stack_bytes`)."""
    return lambda held: held_bytes(held, part, part_nbytes) + stack_bytes(stack, held)


def per_object(factory: Callable[[K], V]) -> Callable[[K], V]:
    """``factory(obj)`` made once per live ``obj`` (held weakly, so it goes with ``obj``) and
    shared by every thread: one Masker per compiled grammar, one token index per vocabulary."""
    made: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
    lock = threading.Lock()

    def get(obj: K) -> V:
        with lock:
            got = made.get(obj)
            if got is None:
                got = made[obj] = factory(obj)
            return got

    return get
