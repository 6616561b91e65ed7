"""MaskWorkers: a batch's masks computed in worker processes beside the caller.

A mask is computed mostly in Python, which holds the GIL (the viable rows' walk and the words'
packing release it, about a third of a step): threads measured slower than one
(eval/batch_scaling.md), processes run masks in parallel. Each worker holds its own copy of
every compiled grammar it is given (the artifact, saved once per grammar and loaded with the
worker's copy of the vocabulary, so the token trie is built once per worker) and its own caches.
Rows whose masks the caller's masker holds (most rows of a warm batch: a copy each) are filled
in the caller; a fill sends each worker the states of the other rows (small values: a lexer
state, by its key where it is an extended state, which each process numbers as it meets them,
and the parser stack's frames that the worker does not hold yet: a stack goes as the number of
its deepest frame sent before and the states pushed since, usually one or two) and the worker
writes the masks into a file in shared memory that the caller reads, and keeps in its masker, so
that the next steps find them there; the caller computes rows itself meanwhile. Row ``i`` is
dealt to the same process every step, so the caches a worker warms are the ones its rows need
next; each worker's list ends with a part of the caller's rows, and the caller takes jobs from
the lists' ends while the workers take them from the front, so whoever is free takes the next.
"""

from __future__ import annotations

import gc
import mmap
import multiprocessing
import os
import pickle
import shutil
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GreatGrammaError
from ..indenter import IndentedStack
from ..matcher import write_rows
from ..stack import Frame

if TYPE_CHECKING:
    from ..matcher import Matcher

__all__ = ["MaskWorkers"]

MIN_BATCH = 4  # smaller batches are filled in the caller alone
# so are batches whose masks are expected to take less: below it the second process computes
# more than it saves (eval/batch_scaling.md)
MIN_SECONDS = 4e-3
STEAL_WAIT = 1.0  # seconds the caller waits for the jobs' lock (held only for a few instructions)
SPIN_SECONDS = 2e-3  # how long the caller watches the rows file for a worker's answer without a pause
PIPE_SECONDS = 1e-3  # then it sleeps between looks, and this often looks at the pipe (where a failure comes)
FRAMES_KEPT = 1 << 16  # parser stack frames a worker holds between steps, then both sides start over (about 16 MB each)


class MaskWorkers:
    """``processes`` worker processes (default: one fewer than the CPUs, at least one) that fill a
    batch's masks together with the calling thread: ``gg.fill_next_token_bitmasks(matchers,
    bitmask, workers=pool)``.

    The workers start when the pool is made (spawn: a script must create the pool under ``if
    __name__ == "__main__":``); until a worker has started (about a second: Python and
    greatgramma are imported), the caller fills its rows, and ``wait()`` waits for them. Each
    grammar is saved once, at its first fill, to a temporary artifact that the workers load (the
    tables filled so far travel with it; each worker fills the rest itself). At most
    ``max_grammars`` grammars are kept in the workers, the least recently used forgotten first.
    Batches of fewer than ``min_batch`` rows are filled in the caller alone, and so are batches
    whose masks the caller's maskers hold but for at most one, or whose other masks are expected
    to take less than ``min_seconds`` (the cost of such a row is learned as the caller fills its
    share), and the batch after one filled in the caller in under ``min_seconds / 2`` (at once,
    as :func:`~greatgramma.fill_next_token_bitmasks` does: cached masks cost microseconds). The masks the workers compute go into the caller's maskers' caches. The workers'
    maskers have the default cache sizes. A worker that dies is replaced (a warning says so), and
    rows it had been given are filled in the caller; a failure in a worker is raised in the
    caller. While a worker loads a grammar it has not had, the caller takes its jobs (the worker
    takes each job when it begins it, the caller from the end of its list).
    ``close()`` (or a ``with`` block) stops the workers and removes the files. For measuring:
    ``rows_from_workers`` counts the rows the workers computed, ``seconds_in_workers`` and
    ``seconds_here`` the time the jobs took in the workers and in the caller.
    """

    def __init__(
        self, processes: int | None = None, *, min_batch: int = MIN_BATCH, min_seconds: float = MIN_SECONDS,
        max_grammars: int = 64,
    ) -> None:  # fmt: skip
        if processes is None:
            processes = max(1, (os.cpu_count() or 2) - 1)
        if processes < 1:
            raise ValueError(f"processes must be >= 1, got {processes}")
        if max_grammars < 1:
            raise ValueError(f"max_grammars must be >= 1, got {max_grammars}")
        self.processes = processes
        self.min_batch = min_batch
        self.max_grammars = max_grammars
        self._dir = tempfile.mkdtemp(prefix="gg-mask-workers-")
        self._shared = tempfile.mkdtemp(prefix="gg-mask-rows-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self._workers = [_Worker(k, self._shared) for k in range(processes)]
        self._grammars: OrderedDict[int, tuple[Any, str]] = OrderedDict()  # identity -> (compiled, artifact)
        self._lock = threading.Lock()
        self._closed = False
        self.min_seconds = min_seconds
        self._row_seconds = 1e-3  # what computing a row's mask costs in this process, learned as it goes
        self._cheap = False  # the last fill took under min_seconds / 2 in the caller: the next one goes there at once
        self.rows_from_workers = 0  # rows whose masks the workers computed (for measuring and tests)
        # seconds spent computing the masks of rows sent as jobs, by the workers and by the caller (for measuring)
        self.seconds_in_workers = self.seconds_here = 0.0
        for worker in self._workers:
            worker.ready()  # start them now: they are ready in about a second

    # ------------------------------------------------------------ public API

    def fill(self, matchers: Sequence[Matcher | None], bitmask: Any) -> None:
        """What :func:`~greatgramma.fill_next_token_bitmasks` does, with the rows spread over the processes."""
        rows = [i for i, m in enumerate(matchers) if m is not None]
        with self._lock:
            if self._closed:
                raise GreatGrammaError("this MaskWorkers was closed")
            start = time.perf_counter()
            if len(rows) < max(self.min_batch, 2) or self._cheap:  # as fill_next_token_bitmasks does
                write_rows(bitmask, rows, self._masks_here(matchers, rows, learn=False))
                self._cheap = time.perf_counter() - start < self.min_seconds / 2
                return
            masks, live, twins = _sort_rows(matchers, rows)
            here = len(live) < 2 or self._row_seconds * len(live) < self.min_seconds
            if here:
                masks.update(zip(live, self._masks_here(matchers, live)))  # too little work to pay for a round trip
            else:
                self._spread(matchers, live, masks)
            for i, j in twins.items():
                masks[i] = masks[j]
            # one write (one host-to-device copy for an accelerator's tensor)
            write_rows(bitmask, list(masks), list(masks.values()))
            self._cheap = here and time.perf_counter() - start < self.min_seconds / 2

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every worker has started (at most ``timeout`` seconds); whether they all have."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            for worker in self._workers:
                while not worker.ready():
                    if deadline is not None and time.monotonic() > deadline:
                        return False
                    time.sleep(0.01)
        return True

    def clear_caches(self) -> None:
        """Drop the workers' mask caches (each grammar gets a fresh Masker; its filled tables stay);
        returns when they have let the old ones go (a full collection each)."""
        with self._lock:
            for worker in self._workers:
                worker.clear()

    def close(self) -> None:
        """Stop the workers and remove the pool's files."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for worker in self._workers:
                worker.stop()
            shutil.rmtree(self._dir, ignore_errors=True)
            shutil.rmtree(self._shared, ignore_errors=True)

    def __enter__(self) -> MaskWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        return f"MaskWorkers(processes={self.processes}, grammars={len(self._grammars)}, closed={self._closed})"

    # ------------------------------------------------------------ internals

    def _spread(self, matchers: Sequence[Any], live: list[int], masks: dict[int, np.ndarray]) -> None:
        """The masks of the rows ``live`` into ``masks``, computed by the workers and the caller."""
        share = 1 + len(self._workers)
        mine = [i for i in live if i % share == 0]  # the caller's rows, dealt among the workers' lists' ends
        own, asked = [], []
        try:
            for k, worker in enumerate(self._workers, start=1):
                # its own rows first (it takes from the front), then a part of the caller's,
                # last first (the caller takes from the end): whoever is free takes the next job
                jobs = [i for i in live if i % share == k] + mine[k - 1 :: len(self._workers)][::-1]
                if jobs and worker.ready() and worker.ask(self, [matchers[i] for i in jobs]):
                    asked.append((worker, jobs))
                else:
                    own += jobs  # the worker is starting or could not be reached: the caller fills its rows
            start = time.perf_counter()
            masks.update(zip(own, self._masks_here(matchers, own)))
            taking = list(asked)
            while taking:  # the jobs a worker has not begun, from the end of its list, in turn
                for entry in list(taking):
                    worker, jobs = entry
                    j = worker.steal()
                    if j is None:
                        taking.remove(entry)
                    else:
                        masks[jobs[j]] = self._masks_here(matchers, [jobs[j]])[0]
            self.seconds_here += time.perf_counter() - start
            failure = None
            for worker, jobs in asked:
                try:
                    n, words, seconds = worker.answer()
                except Exception as exc:  # noqa: BLE001 - raised once every worker has answered
                    failure = failure or exc
                    continue
                if words is None:  # the worker died: the rows it may not have filled are filled here
                    masks.update(zip(jobs[:n], self._masks_here(matchers, jobs[:n])))
                    continue
                self.rows_from_workers += n
                self.seconds_in_workers += seconds
                _take_answers(matchers, jobs, words, masks)
        except BaseException:
            for worker, _ in asked:  # interrupted before they all answered: out of step with the pipe
                worker.stop()
            raise
        if failure is not None:
            raise failure

    def _masks_here(self, matchers: Sequence[Any], rows: list[int], *, learn: bool = True) -> list[np.ndarray]:
        """The masks of ``rows``, computed in the calling process; with ``learn`` (rows whose masks
        were not cached), learns what a row costs, as a moving average of what rows cost that a
        rare slow row (a lexer view built, caches started over) moves little: a batch of rows
        that cost a tenth of a millisecond each goes to the workers only when it is large."""
        start = time.perf_counter()
        masks = [matchers[i]._mask_to_copy() for i in rows]
        if learn and rows:
            seconds = min((time.perf_counter() - start) / len(rows), 4 * self._row_seconds)
            self._row_seconds += (seconds - self._row_seconds) / 8
        return masks

    def artifact(self, compiled: Any) -> str:
        """The artifact of ``compiled`` for the workers (saved at its first use); may forget the oldest grammar."""
        key = compiled.identity
        got = self._grammars.get(key)
        if got is not None:
            self._grammars.move_to_end(key)
            return got[1]
        path = os.path.join(self._dir, f"{key}.gg")
        compiled.save(path)
        self._grammars[key] = (compiled, path)
        while len(self._grammars) > self.max_grammars:
            old, (_, old_path) = self._grammars.popitem(last=False)
            for worker in self._workers:
                worker.forget(old)
            os.unlink(old_path)
        return path


def _sort_rows(matchers: Sequence[Any], rows: list[int]) -> tuple[dict[int, np.ndarray], list[int], dict[int, int]]:
    """The masks the rows' maskers hold (their caches' own words; finished rows' too), the rows
    whose masks must be computed (one per distinct state: rows of a batch often share one), and
    each other row, with the row of the same state whose mask it takes."""
    masks: dict[int, np.ndarray] = {}
    live: list[int] = []
    twins: dict[int, int] = {}
    first: dict[tuple, int] = {}
    for i in rows:
        m = matchers[i]
        state = m.state
        words = m._mask_to_copy() if state.finished else m.masker._cached_mask(state)
        if words is not None:
            masks[i] = words
            continue
        j = first.setdefault((id(m.masker), state.lexer, state.stack), i)
        if j == i:
            live.append(i)
        else:
            twins[i] = j
    return masks, live, twins


def _take_answers(matchers: Sequence[Any], jobs: list[int], words: list[np.ndarray], masks: dict[int, np.ndarray]) -> None:
    """A worker's masks of ``jobs`` into ``masks`` (views of its rows file, written again only at
    its next fill), and into the rows' maskers: the next fill finds them there."""
    for w, i in zip(words, jobs):
        matcher = matchers[i]
        masks[i] = w[: _words(matcher)]
        matcher.masker._keep_mask(matcher.state, masks[i])


def _words(matcher: Any) -> int:
    return (matcher.vocab_size + 31) // 32


class _Worker:
    """One worker process, its pipe, the grammars and vocabularies it holds, and its rows file."""

    def __init__(self, index: int, shared_dir: str) -> None:
        self.index = index
        self._shared_dir = shared_dir
        self._proc: Any = None
        self._conn: Any = None
        self._grammars: set[int] = set()
        self._vocabs: set[str] = set()
        # (1 + rows, width) int32 words shared with the worker: row 0 holds how many jobs it has
        # begun, where its jobs end (the caller takes jobs from the end), the number of the last
        # fill it finished and the microseconds it spent on it, then a row per job
        self._rows: np.ndarray | None = None
        self._rows_path: str | None = None
        self._turn: Any = None
        self._sent = _SentFrames()
        self._fills = 0  # fills asked of this worker: it writes the number of each when done
        self._ready = False
        self._generation = 0
        self._warned = False

    def ready(self) -> bool:
        """Whether the worker can take jobs: started now if it was not (or had died), and done starting."""
        try:
            self._start()
            if not self._ready and self._conn.poll():
                self._conn.recv()  # its first message: started
                self._ready = True
        except (OSError, EOFError):
            self._lost()
            return False
        return self._ready

    def ask(self, pool: MaskWorkers, matchers: list[Matcher]) -> bool:
        """Send the rows' states; False if the worker cannot be reached."""
        try:
            jobs = []
            for m in matchers:
                compiled = m.compiled
                key = compiled.identity
                if key not in self._grammars:
                    vocab = compiled.vocab
                    fingerprint = vocab.fingerprint()
                    if fingerprint not in self._vocabs:
                        self._conn.send(("vocab", fingerprint, vocab))
                        self._vocabs.add(fingerprint)
                    self._conn.send(("grammar", key, pool.artifact(compiled), fingerprint))
                    self._grammars.add(key)
                lexer = m.state.lexer
                if lexer >= compiled.lexer.num_states:  # extended states are numbered per process: send its key
                    lexer = compiled.lexer.extended_key(lexer)
                jobs.append((key, lexer, m.state.stack))
            self._ensure_rows(len(jobs), max(4, *(_words(m) for m in matchers)))
            self._fills = self._fills % (1 << 30) + 1  # an int32 in the rows file
            self._rows[0, :3] = (0, len(jobs), 0)  # type: ignore[index]  # jobs begun by the worker, jobs left to it, fill done
            if len(self._sent) > FRAMES_KEPT:
                self._sent.clear()
                self._conn.send(("frames",))  # the worker forgets its frames too, before the next jobs
            # the frames are noted as sent: they must arrive
            encoded = [(key, lexer, *self._sent.encode(stack)) for key, lexer, stack in jobs]
            data = pickle.dumps(("masks", self._fills, encoded), pickle.HIGHEST_PROTOCOL)
            try:
                self._conn.send_bytes(data)
            except (OSError, EOFError):
                raise
            except BaseException:
                self._kill()  # interrupted: the worker may lack frames the next message names
                raise
            return True
        except (OSError, EOFError):
            self._lost()
            return False

    def steal(self) -> int | None:
        """Take the last job the worker has not begun (the caller fills it); None when there is none."""
        if not self._turn.acquire(timeout=STEAL_WAIT):  # a worker that died holding the lock
            return None
        try:
            begun, end = self._rows[0, :2]  # type: ignore[index]
            if begun >= end:
                return None
            self._rows[0, 1] = end - 1  # type: ignore[index]
            return int(end) - 1
        finally:
            self._turn.release()

    def answer(self) -> tuple[int, list[np.ndarray] | None, float]:
        """``(n, masks, seconds)``: the worker filled the first ``n`` jobs (``masks``, views of the
        rows file) in ``seconds``; ``masks`` is None if it died meanwhile, and ``n`` then counts the
        jobs it may not have filled.

        A worker says it is done in the rows file, not through the pipe: the caller has nothing
        else to do, and watching memory costs nothing where waking from a blocked read (and
        reading the message) cost ~0.1 ms a fill. Past ``SPIN_SECONDS`` it sleeps between looks
        (``time.sleep(0)``, the shortest sleep: waiting on the pipe with a timeout would round it up
        to a millisecond, which cost ~0.5 ms a fill) and every ``PIPE_SECONDS`` looks at the pipe,
        through which only a failure or the worker's end comes."""
        control = self._rows[0]  # type: ignore[index]
        spin_until = look_at = time.perf_counter() + SPIN_SECONDS
        while control[2] != self._fills:
            now = time.perf_counter()
            if now < spin_until:
                continue
            time.sleep(0)
            if now < look_at:
                continue
            look_at = now + PIPE_SECONDS
            try:
                if self._conn.poll(0):
                    status, value = self._conn.recv()
                    raise value if status == "error" else GreatGrammaError(f"mask worker: unexpected {status!r}")
            except (OSError, EOFError):
                end = int(control[1])
                self._lost()
                return end, None, 0.0
        done = int(control[0])
        return done, list(self._rows[1 : 1 + done]), int(control[3]) * 1e-6  # type: ignore[index]

    def clear(self) -> None:
        """Fresh maskers in the worker, once it answers (a starting worker holds none)."""
        if self._proc is None or not self._ready:
            return
        try:
            self._conn.send(("clear",))
            self._conn.recv()  # ("cleared", None)
        except (OSError, EOFError):
            self._lost()

    def forget(self, key: int) -> None:
        if key in self._grammars:
            self._grammars.discard(key)
            self.send(("forget", key))

    def send(self, message: tuple) -> None:
        """A message that needs no answer, if the worker is running."""
        if self._proc is not None:
            try:
                self._conn.send(message)
            except (OSError, EOFError):
                self._lost()

    def stop(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            try:
                self._conn.send(None)
                self._proc.join(timeout=2)
            except (OSError, EOFError):
                pass
        self._kill()

    def _start(self) -> None:
        if self._proc is not None:
            if self._proc.is_alive():
                return
            self._lost()
        ctx = multiprocessing.get_context("spawn")  # fork would copy the parent's threads and locks
        self._conn, child = ctx.Pipe()
        self._turn = ctx.Lock()  # guards the rows file's first row: which jobs are taken
        self._rows = None  # a new process maps a new file
        self._ready = False
        self._proc = ctx.Process(
            target=_worker_main, args=(child, self._turn), daemon=True, name=f"gg-masks-{self.index}"
        )
        self._proc.start()
        child.close()

    def _ensure_rows(self, rows: int, width: int) -> None:
        """A rows file with room for ``rows`` x ``width`` words, shared with the worker."""
        have = self._rows
        if have is not None and have.shape[0] > rows and have.shape[1] >= width:
            return
        if have is not None:
            rows, width = max(rows, have.shape[0] - 1), max(width, have.shape[1])
        rows = max(rows, 8)
        self._generation += 1
        path = os.path.join(self._shared_dir, f"{self.index}-{self._generation}.rows")
        self._rows = shared_rows(path, 1 + rows, width, create=True)
        self._conn.send(("rows", path, 1 + rows, width))
        self._remove_rows()
        self._rows_path = path

    def _lost(self) -> None:
        """The worker is gone: forget what it held; the next fill starts a fresh one."""
        code = None if self._proc is None else self._proc.exitcode
        self._kill()
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"greatgramma mask worker {self.index} stopped (exit code {code}); the rows it had are filled "
                "in the calling process, and a new worker takes its place. A script that uses worker "
                "processes must create them under `if __name__ == '__main__':` (spawn runs it again).",
                RuntimeWarning,
                stacklevel=4,
            )

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.join()
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._grammars.clear()
        self._vocabs.clear()
        self._sent.clear()
        self._remove_rows()
        self._rows = None

    def _remove_rows(self) -> None:
        if self._rows_path is not None:
            try:
                os.unlink(self._rows_path)
            except OSError:
                pass
            self._rows_path = None


def shared_rows(path: str, rows: int, width: int, *, create: bool = False) -> np.ndarray:
    """A (rows, width) int32 array over the file at ``path`` (created and sized with ``create``),
    mapped shared: what one process writes there the other reads."""
    with open(path, "w+b" if create else "r+b") as f:
        if create:
            f.truncate(rows * width * 4)
        mapped = mmap.mmap(f.fileno(), rows * width * 4)
    return np.frombuffer(mapped, dtype=np.int32).reshape(rows, width)


class _SentFrames:
    """The caller's side of a worker's stack frames: the frames sent to it, by object, with the
    number each has there. A stack goes as ``(extra, base, states, first)``: the indenter's
    bracket depth and levels (None for a plain LALR stack), the number of the deepest frame of
    its stack that the worker holds (-1: none), the states pushed above it (bottom first) and the
    number the first of them gets. A row's stack at the next step is last step's plus a push or
    two, so a step sends a few ints a row. The frames are held here (so their ids stay theirs)
    until :meth:`clear`."""

    def __init__(self) -> None:
        self._number: dict[int, tuple[Frame, int]] = {}  # id(frame) -> (frame, its number in the worker)

    def __len__(self) -> int:
        return len(self._number)

    def clear(self) -> None:
        self._number.clear()

    def encode(self, stack: Any) -> tuple[tuple[int, tuple[int, ...]] | None, int, tuple[int, ...], int]:
        """``stack`` (a :class:`Frame` or an :class:`IndentedStack`) as ints; its frames are noted as sent."""
        extra = None
        if type(stack) is not Frame:
            extra, stack = (stack.brackets, stack.levels), stack.lalr
        number, new, frame = self._number, [], stack
        while frame is not None and id(frame) not in number:
            new.append(frame)
            frame = frame.parent
        base = -1 if frame is None else number[id(frame)][1]
        first = len(number)
        for k, f in enumerate(reversed(new)):
            number[id(f)] = (f, first + k)
        return extra, base, tuple(f.state for f in reversed(new)), first


class _Frames:
    """The worker's side: its frames by number, built as :class:`_SentFrames` sends them and
    hash-consed (a state pushed on a frame is one frame here, whichever caller frame it stands
    for), so rows whose stacks begin alike share frames, and the reductions memoized on them
    (:meth:`~greatgramma.parser.LalrParser.feed`) and the mask caches keyed by them serve every
    such row and the next steps."""

    def __init__(self) -> None:
        self._by_number: list[Frame] = []
        self._made: dict[tuple[int, int], Frame] = {}  # (id of the parent frame, state) -> frame

    def clear(self) -> None:
        self._by_number.clear()
        self._made.clear()

    def decode(self, extra: tuple[int, tuple[int, ...]] | None, base: int, states: tuple[int, ...], first: int) -> Any:
        """The stack that :meth:`_SentFrames.encode` gave these ints for."""
        by_number = self._by_number
        frame = None if base < 0 else by_number[base]
        if first != len(by_number) and states:
            raise GreatGrammaError(f"mask worker: frame {first} sent out of order (it holds {len(by_number)})")
        made = self._made
        for state in states:
            key = (id(frame), state)  # the parent is alive: its children here point to it
            child = made.get(key)
            if child is None:
                child = made[key] = Frame(state, frame)
            frame = child
            by_number.append(frame)
        return frame if extra is None else IndentedStack(*extra, frame)


def _worker_main(conn: Any, turn: Any) -> None:
    """A worker's loop: messages in order. The jobs of a "masks" it takes one by one from the
    front (``turn`` guards the count) while the caller may take them from the end; then it
    writes the fill's number in the rows file, or sends ("error", exception) on the pipe."""
    from ..compiled import load
    from ..masker import Masker, State

    conn.send(("ready", None))
    vocabs: dict[str, Any] = {}
    maskers: dict[int, Any] = {}  # grammar identity in the caller -> Masker, or the exception loading it
    rows: np.ndarray | None = None
    frames = _Frames()
    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        kind = message[0]
        if kind == "vocab":
            vocabs[message[1]] = message[2]
        elif kind == "grammar":
            _, key, path, fingerprint = message
            try:
                maskers[key] = Masker(load(path, vocab=vocabs[fingerprint]))
            except Exception as exc:  # noqa: BLE001 - reported when its masks are asked for
                maskers[key] = exc
            gc.freeze()  # the grammars' objects live on: the collector need not walk them
        elif kind == "forget":
            maskers.pop(message[1], None)
            _collect_frozen()  # the forgotten grammar's cycles
        elif kind == "clear":
            maskers = {k: m if isinstance(m, Exception) else Masker(m.compiled) for k, m in maskers.items()}
            _collect_frozen()
            conn.send(("cleared", None))
        elif kind == "frames":
            frames.clear()
        elif kind == "rows":
            rows = shared_rows(*message[1:])
        elif kind == "masks":
            fill, jobs, control = message[1], message[2], rows[0]  # type: ignore[index]
            try:
                start = time.perf_counter()
                stacks = [frames.decode(*job[2:]) for job in jobs]  # all of them, in order, before any is taken
                while True:
                    with turn:
                        slot = int(control[0])
                        if slot >= control[1]:
                            break
                        control[0] = slot + 1
                    key, lexer = jobs[slot][:2]
                    masker = maskers[key]
                    if isinstance(masker, Exception):
                        raise masker
                    if isinstance(lexer, tuple):
                        lexer = masker.compiled.lexer.extended(*lexer)
                    words = masker._mask_words(State(lexer, stacks[slot], False, masker.compiled.identity))  # copied once, here
                    rows[1 + slot, : len(words)] = words  # type: ignore[index]
                control[3] = min(int((time.perf_counter() - start) * 1e6), (1 << 31) - 1)
                control[2] = fill  # the answer: the caller watches for it (the masks are written)
                # what the masks left behind is cache entries that live on, and no cycles: the
                # collector would walk them all again and again (a full collection of a worker
                # with warm caches pauses it for ~0.1 s) and never find garbage
                gc.freeze()
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
                try:
                    conn.send(("error", exc))
                except Exception:  # noqa: BLE001 - an exception that does not pickle
                    conn.send(("error", GreatGrammaError(f"{type(exc).__name__}: {exc}")))


def _collect_frozen() -> None:
    """A full collection of a worker's heap, frozen again after it (objects were let go)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
