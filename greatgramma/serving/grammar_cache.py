"""GrammarCache: compile each (grammar, vocabulary, options) once, share it, and never stall the requests that are ready.

A serving engine asks for a request's compiled grammar when the request arrives. ``get_async``
returns a future at once; a background thread loads the artifact from the cache's directory or
compiles it, and every request that asked for the same key waits on that one compile
(single-flight). With ``workers > 0`` the compile runs in worker processes
(:mod:`greatgramma.serving.compile_worker`), so the decoding threads of the engine's process do not
wait for the GIL while it runs; only loading the finished artifact happens in the process.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import tempfile
import threading
import time
import warnings
from collections import OrderedDict
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from ..compiled import CompiledGrammar, load
from ..compiled import compile as compile_grammar
from ..errors import ArtifactError, GrammarWarning, GreatGrammaError
from ..grammar import Grammar
from ..version import __version__
from ..vocab import Vocabulary
from .compile_worker import GrammarSpec, Stopped, WorkerSlot, remove_quietly

__all__ = ["CompileTimeoutError", "GrammarCache", "GrammarSpec"]

_COMPILE_OPTIONS = frozenset({"max_dfa_states", "max_token_table_entries", "max_seconds", "eager"})


class CompileTimeoutError(GreatGrammaError, TimeoutError):
    """A grammar did not compile within the time allowed; the message names it."""


class _Job:
    """One compile and the futures waiting for it (one per caller, so that one caller's cancel
    stops the compile only when no one else waits)."""

    def __init__(self, key: str, spec: GrammarSpec) -> None:
        self.key, self.spec = key, spec
        self.waiters: list[Future] = []
        self.stopped = threading.Event()  # every waiter cancelled, or the cache closed

    def live(self) -> list[Future]:
        return [w for w in self.waiters if not w.cancelled()]


class GrammarCache:
    """Compiled grammars for one vocabulary, keyed by (grammar fingerprint, vocabulary
    fingerprint, compile options); thread-safe.

    ``max_entries``: compiled grammars kept in memory (least recently used first out).
    ``directory``: where artifacts are kept across processes (``<key>.gg``; a file that does not
    load, e.g. from another version, is compiled again). ``workers``: 0 compiles on one
    background thread of this process; N > 0 compiles in N worker processes (spawned on first
    use; each gets the vocabulary once). ``compile_timeout``: seconds a compile may take; past
    it (not counting a worker process's start) the futures fail with :class:`CompileTimeoutError`
    and the worker process is killed (a compile on a thread cannot be stopped: it runs to its end
    and its result is dropped). Cancelling a future withdraws its caller; when none is left, a
    compile not started yet is skipped and one in a worker process is killed.
    ``compile_options``: passed to :func:`greatgramma.compile` (``max_dfa_states``,
    ``max_token_table_entries``, ``max_seconds``, ``eager``); part of the key. With worker
    processes, ``eager=True`` fills the token tables in the worker too (the artifact then holds
    them), so that decoding in this process never walks the trie; by default they are filled
    on first use, here.
    """

    def __init__(
        self,
        vocab: Vocabulary,
        *,
        max_entries: int = 32,
        directory: str | os.PathLike | None = None,
        workers: int = 0,
        compile_timeout: float | None = None,
        compile_options: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(vocab, Vocabulary):
            raise TypeError(f"GrammarCache needs a gg.Vocabulary, got {type(vocab).__name__}")
        if not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be an int >= 1, got {max_entries!r}")
        if not isinstance(workers, int) or workers < 0:
            raise ValueError(f"workers must be an int >= 0 (0: compile on a thread), got {workers!r}")
        if compile_timeout is not None and not compile_timeout > 0:
            raise ValueError(f"compile_timeout must be > 0 seconds or None, got {compile_timeout!r}")
        options = dict(compile_options or {})
        unknown = set(options) - _COMPILE_OPTIONS
        if unknown:
            raise TypeError(f"unknown compile option(s) {sorted(unknown)}; known: {sorted(_COMPILE_OPTIONS)}")
        self.vocab, self.max_entries, self.workers = vocab, max_entries, workers
        self.compile_timeout, self.compile_options = compile_timeout, options
        self.directory = None if directory is None else Path(directory)
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
        self._tmp = tempfile.TemporaryDirectory(prefix="gg-cache-") if workers and self.directory is None else None
        self._ready: OrderedDict[str, CompiledGrammar] = OrderedDict()
        self._jobs: dict[str, _Job] = {}
        self._lock = threading.Lock()
        self._slots: queue.Queue[WorkerSlot] = queue.Queue()
        self._all_slots = [WorkerSlot(vocab) for _ in range(workers)]
        for slot in self._all_slots:
            self._slots.put(slot)
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="gg-grammar-cache")
        self._closed = False
        self.stats = {"hits": 0, "misses": 0, "compiled": 0, "loaded": 0, "timeouts": 0, "cancelled": 0, "failed": 0}

    # ------------------------------------------------------------ public API

    def key(self, grammar: Grammar | str | GrammarSpec, **grammar_options: Any) -> str:
        """The cache key (hex): grammar fingerprint, vocabulary fingerprint, compile options, version."""
        return self._key(GrammarSpec.of(grammar, **grammar_options))

    def get_async(self, grammar: Grammar | str | GrammarSpec, **grammar_options: Any) -> Future:
        """A future of the compiled grammar, returned at once.

        ``grammar``: a :class:`Grammar`, Lark text (``start=``, ``indenter=``, ``source=``,
        ``strict=`` as for Grammar), or a :class:`GrammarSpec`. Lark text is checked where it is
        compiled, so a bad grammar fails the future with its :class:`GrammarError`. Cancelling
        the future withdraws this caller; the compile stops when no caller is left.
        """
        spec = GrammarSpec.of(grammar, **grammar_options)
        key = self._key(spec)
        waiter: Future = Future()
        with self._lock:
            if self._closed:
                raise GreatGrammaError("this GrammarCache is closed")
            ready = self._ready.get(key)
            if ready is not None:
                self._ready.move_to_end(key)
                self.stats["hits"] += 1
                waiter.set_running_or_notify_cancel()
                waiter.set_result(ready)
                return waiter
            job = self._jobs.get(key)
            if job is not None and job.stopped.is_set():
                job = None  # its callers all left and it is being stopped: start over
            self.stats["misses" if job is None else "hits"] += 1
            if job is None:
                job = self._jobs[key] = _Job(key, spec)
                self._pool.submit(self._run, job)
            job.waiters.append(waiter)
        waiter.add_done_callback(lambda w, job=job: self._withdrawn(job) if w.cancelled() else None)
        return waiter

    def get(self, grammar: Grammar | str | GrammarSpec, *, timeout: float | None = None, **grammar_options: Any) -> CompiledGrammar:
        """The compiled grammar, waiting at most ``timeout`` seconds (then CompileTimeoutError, and
        this caller is withdrawn as by a cancel)."""
        future = self.get_async(grammar, **grammar_options)
        try:
            return future.result(timeout)
        except FutureTimeout:
            if future.done():
                raise  # the compile's own CompileTimeoutError (a TimeoutError too)
            future.cancel()
            spec = GrammarSpec.of(grammar, **grammar_options)
            raise CompileTimeoutError(f"grammar {spec.name()} was not ready within {timeout} s") from None

    def __contains__(self, grammar: Grammar | str | GrammarSpec) -> bool:
        """Whether the grammar is compiled and in memory."""
        with self._lock:
            return self.key(grammar) in self._ready

    def __len__(self) -> int:
        return len(self._ready)

    def clear(self) -> None:
        """Forget the compiled grammars in memory (the directory's files stay)."""
        with self._lock:
            self._ready.clear()

    def close(self) -> None:
        """Stop every compile (their futures are cancelled), end the worker processes."""
        with self._lock:
            self._closed = True
            jobs = list(self._jobs.values())
        for job in jobs:
            job.stopped.set()
            for w in job.waiters:
                w.cancel()
        self._pool.shutdown(wait=True)
        for slot in self._all_slots:
            slot.close()
        if self._tmp is not None:
            self._tmp.cleanup()

    def __enter__(self) -> GrammarCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ internals

    def _key(self, spec: GrammarSpec) -> str:
        parts = [spec.kind, spec.fingerprint(), str(spec.strict), self.vocab.fingerprint(), __version__]
        parts.append(json.dumps(self.compile_options, sort_keys=True))
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]

    def _withdrawn(self, job: _Job) -> None:
        """A waiter was cancelled: stop the compile if none is left."""
        with self._lock:
            if job.live():
                return
            job.stopped.set()

    def _run(self, job: _Job) -> None:
        """On a pool thread: load or compile, then answer every waiter."""
        try:
            if job.stopped.is_set():
                raise Stopped("cancelled")
            compiled = self._load_or_compile(job)
        except Stopped as stop:
            self._finish(job, None, None, stop.reason)
        except BaseException as exc:  # noqa: BLE001 - the waiters get it
            self._finish(job, None, exc, "failed")
        else:
            self._finish(job, compiled, None, None)

    def _load_or_compile(self, job: _Job) -> CompiledGrammar:
        path = None if self.directory is None else self.directory / f"{job.key}.gg"
        if path is not None and path.is_file():
            try:
                compiled = load(path, vocab=self.vocab)
                self.stats["loaded"] += 1
                return compiled
            except ArtifactError:
                pass  # another version's file, or damaged: compile again
        if not self.workers:
            compiled = self._compile_here(job, time.monotonic() + self.compile_timeout if self.compile_timeout else None)
            if path is not None:
                compiled.save(path)
            return compiled
        target = str(path) if path is not None else os.path.join(self._tmp.name, f"{job.key}.gg")  # type: ignore[union-attr]
        slot = self._slots.get()
        try:
            for message in slot.compile(job.spec, self.compile_options, target, self.compile_timeout, job.stopped.is_set):
                warnings.warn(f"{job.spec.name()}: {message}", GrammarWarning, stacklevel=1)
            self.stats["compiled"] += 1
            return load(target, vocab=self.vocab)
        finally:
            self._slots.put(slot)
            if path is None:
                remove_quietly(target)

    def _compile_here(self, job: _Job, deadline: float | None) -> CompiledGrammar:
        """Compile on this thread; past the deadline the waiters are answered and the result dropped."""
        timer = None
        if deadline is not None:
            timer = threading.Timer(max(0.0, deadline - time.monotonic()), self._finish, (job, None, None, "timeout"))
            timer.daemon = True
            timer.start()
        try:
            compiled = compile_grammar(job.spec.grammar(), self.vocab, **self.compile_options)
        finally:
            if timer is not None:
                timer.cancel()
        self.stats["compiled"] += 1
        if job.stopped.is_set():
            raise Stopped("cancelled")
        return compiled

    def _finish(self, job: _Job, compiled: CompiledGrammar | None, error: BaseException | None, why: str | None) -> None:
        """Answer the job's waiters once (a timer and the compile may both try)."""
        with self._lock:
            if self._jobs.get(job.key) is not job:
                return  # already answered
            del self._jobs[job.key]
            if compiled is not None:
                self._ready[job.key] = compiled
                while len(self._ready) > self.max_entries:
                    self._ready.popitem(last=False)
            if why is not None:
                self.stats["timeouts" if why == "timeout" else why] += 1
            waiters = job.waiters
        if why == "timeout":
            error = CompileTimeoutError(f"grammar {job.spec.name()} did not compile within {self.compile_timeout} s")
        elif why == "cancelled":
            error = CancelledError()
        for w in waiters:
            if w.set_running_or_notify_cancel():
                if error is None:
                    w.set_result(compiled)
                else:
                    w.set_exception(error)

