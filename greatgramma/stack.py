"""Parser stacks as persistent chains of frames: a push makes one frame, old stacks stay valid and shared."""

from __future__ import annotations

Known = tuple[int, ...]  # the top segment of a stack, bottom first
FRAME_BYTES = 256  # memory of one frame (object, hash and depth ints, top segment), for the caches' bounds
MEMO_ENTRIES = 32  # outcomes of deep reductions remembered per frame (then it starts over)
SEGMENT = 8  # top states a live feed is memoized on (deeper reductions: the frames' memos)
HELD_WALK = 32  # frames a cache walks to find those it has charged (frames_bytes)


def frames_bytes(frame: Frame | None, held: dict[int, object] | None = None) -> int:
    """What the frames from ``frame`` down are charged in a cache: all of them, or with ``held``
    (a cache's parts already charged, by id) those not in it, which are added (the frames below
    a held one are held): a stack shares all but its top frame or two with stacks met before. Past
    ``HELD_WALK`` new frames the rest of the stack is charged whole and held as one part, so a
    deep stack costs a bounded walk."""
    if held is None:
        return 0 if frame is None else FRAME_BYTES * frame.depth
    n = 0
    while frame is not None and id(frame) not in held:
        held[id(frame)] = frame
        if n == HELD_WALK:
            return FRAME_BYTES * (n + frame.depth)
        frame, n = frame.parent, n + 1
    return FRAME_BYTES * n


class Frame:
    """A parser state over the stack below it (``parent``; None at the bottom): a persistent stack.

    ``hash`` is computed once, from the parent's. Two frames are equal when their stacks hold the
    same states: the same object, or the same hash and depth and the same states down to a frame
    both share. After such a walk the other stack's frames are re-linked onto this one's (an
    equal value, so invisible), and the same walk is never made twice. ``memo`` holds outcomes of
    reductions that pop into this frame (:meth:`LalrParser.feed`), at most ``MEMO_ENTRIES``;
    ``segment`` is the stack's top ``SEGMENT`` states, bottom first (what most feeds depend on).
    """

    __slots__ = ("state", "parent", "depth", "hash", "memo", "segment")

    def __init__(self, state: int, parent: Frame | None = None) -> None:
        self.state = state
        self.parent = parent
        self.memo: dict | None = None
        if parent is None:
            self.depth = 1
            self.hash = hash((state,))
            self.segment: Known = (state,)
        else:
            self.depth = parent.depth + 1
            self.hash = hash((state, parent.hash))
            seg = parent.segment
            self.segment = (seg[1:] if len(seg) == SEGMENT else seg) + (state,)

    def __hash__(self) -> int:
        return self.hash

    def __len__(self) -> int:
        return self.depth

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if type(other) is not Frame or other.hash != self.hash or other.depth != self.depth:
            return False
        a, b = self, other
        while a is not b:
            if a.state != b.state:
                return False
            a, b = a.parent, b.parent
        self._relink(other)
        return True

    def _relink(self, other: Frame) -> None:
        """Point each frame of ``other``'s chain (equal to this one) at this chain's parent."""
        a, b = self, other
        while a is not b:
            pa, pb = a.parent, b.parent
            b.parent = pa
            a, b = pa, pb

    def states(self) -> Known:
        """The stack's states, bottom first (walks the whole stack: for tests and messages)."""
        out, f = [], self
        while f is not None:
            out.append(f.state)
            f = f.parent
        return tuple(reversed(out))

    def __repr__(self) -> str:
        return f"Frame(top={self.state}, depth={self.depth})"

    def __reduce__(self):
        return frames_of, (self.states(),)  # flat: pickling a deep chain would recurse


def frames_of(states: Known) -> Frame:
    """The stack of ``states`` (bottom first), as frames."""
    frame = None
    for state in states:
        frame = Frame(state, frame)
    return frame


Stack = Frame  # a live parser stack
