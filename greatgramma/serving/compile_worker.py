"""Compiling in a worker process: the parent's decoding threads keep the GIL while a grammar compiles.

A :class:`WorkerSlot` owns one spawned process, started on first use; the vocabulary is sent to
it once, when it starts (1.2 MB pickled at 128K ids, 15 ms). ``compile`` sends it a :class:`GrammarSpec`; the worker builds the
grammar, compiles it and saves the artifact to the path it is given; the parent loads it. A
compile that passes its deadline, or whose caller cancels it, is stopped by killing the process
(the next compile starts a fresh one): a pure-Python compile cannot be interrupted any other way.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..compiled import compile as compile_grammar
from ..errors import GreatGrammaError
from ..grammar import Grammar
from ..indenter import Indenter
from ..postlexer import Postlexer
from ..vocab import Vocabulary

POLL_SECONDS = 0.02  # how often a waiting slot looks at its deadline and cancel flag


@dataclass(frozen=True)
class GrammarSpec:
    """A grammar as plain data (picklable), built into a :class:`Grammar` where it is compiled.

    ``kind`` is ``"lark"`` (Lark text); a front end for other sources (JSON Schema) adds its kind
    here and a branch in :meth:`grammar`.
    """

    text: str
    start: str = "start"
    indenter: Indenter | None = None
    source: str = "<string>"
    strict: bool = False
    kind: str = "lark"
    postlexer: Postlexer | None = None  # any other postlexer (gg.Semicolons)
    # the Grammar it was made from, if any: compiled on a thread of this process, it is used as it
    # is (Lark ran when it was made); never pickled, so a worker process runs Lark on the text
    built: Grammar | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, grammar: Grammar | str | GrammarSpec, **options: Any) -> GrammarSpec:
        """From a Grammar, Lark text (with ``start``, ``indenter``, ``source``, ``strict``) or a spec."""
        if isinstance(grammar, GrammarSpec):
            return grammar
        if isinstance(grammar, Grammar):
            if options:
                raise TypeError(f"grammar options {sorted(options)} are given twice: the Grammar already has them")
            other = None if grammar.indenter is not None else grammar.postlexer
            return cls(
                grammar.text, grammar.start, grammar.indenter, grammar.source, grammar.strict, postlexer=other, built=grammar
            )  # fmt: skip
        if isinstance(grammar, str):
            return cls(grammar, **options)
        raise TypeError(f"a grammar is a gg.Grammar, Lark text (str) or a GrammarSpec, got {type(grammar).__name__}")

    def __getstate__(self) -> dict:
        return {**self.__dict__, "built": None}

    def grammar(self) -> Grammar:
        """The checked Grammar (runs Lark, seconds for large grammars, unless made from one)."""
        if self.built is not None:
            return self.built
        if self.kind != "lark":
            raise GreatGrammaError(f"no front end for grammar kind {self.kind!r}")
        return Grammar(
            self.text, start=self.start, indenter=self.indenter, postlexer=self.postlexer, source=self.source,
            strict=self.strict,
        )  # fmt: skip

    def fingerprint(self) -> str:
        """Grammar.fingerprint() of the grammar, without running Lark."""
        return Grammar.from_saved(
            self.text, start=self.start, source=self.source, indenter=self.indenter, postlexer=self.postlexer
        ).fingerprint()

    def name(self) -> str:
        """How messages name it: the file, or the start of the text and the fingerprint."""
        if self.source != "<string>":
            return self.source
        text = " ".join(self.text.split())
        shown = repr(text if len(text) <= 60 else text[:57] + "...")
        return f"{shown} (fingerprint {self.fingerprint()[:12]})"


def compile_to_file(spec: GrammarSpec, vocab: Vocabulary, options: dict[str, Any], path: str) -> list[str]:
    """Compile and save to ``path``; the warnings the grammar gave, as text (they do not cross processes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compile_grammar(spec.grammar(), vocab, **options).save(path)
    return [str(w.message) for w in caught]


def _worker_main(conn: Any) -> None:
    """The worker's loop: the vocabulary first, then (spec, options, path) in, ("ok", warnings) or
    ("error", exception) out."""
    try:
        vocab = conn.recv()
    except EOFError:
        return
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            conn.send(("ok", compile_to_file(*job[:1], vocab, *job[1:])))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
            try:
                conn.send(("error", exc))
            except Exception:  # noqa: BLE001 - an exception that does not pickle
                conn.send(("error", GreatGrammaError(f"{type(exc).__name__}: {exc}")))


class Stopped(Exception):
    """The compile was stopped (``reason``: "timeout" or "cancelled") and its worker killed."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WorkerSlot:
    """One worker process, used by one thread at a time."""

    def __init__(self, vocab: Vocabulary) -> None:
        self._vocab = vocab
        self._proc: Any = None
        self._conn: Any = None
        self._lock = threading.Lock()

    def compile(
        self, spec: GrammarSpec, options: dict[str, Any], path: str, timeout: float | None, stop: Callable[[], bool]
    ) -> list[str]:
        """Compile in the worker to ``path``; raises :class:`Stopped` after ``timeout`` seconds (not
        counting a worker's start) or once ``stop()`` is true, the compile's error otherwise."""
        with self._lock:
            try:
                self._start()
                deadline = None if timeout is None else time.monotonic() + timeout
                self._conn.send((spec, options, path))
                while not self._conn.poll(POLL_SECONDS):
                    if stop() or (deadline is not None and time.monotonic() > deadline):
                        self.kill()
                        raise Stopped("cancelled" if stop() else "timeout")
                    if not self._proc.is_alive():
                        raise EOFError
                status, value = self._conn.recv()
            except (EOFError, OSError):
                code = None if self._proc is None else self._proc.exitcode
                self.kill()
                raise GreatGrammaError(
                    f"the compile worker died (exit code {code}) compiling {spec.name()}; a script that uses "
                    "worker processes must start them under `if __name__ == '__main__':` (spawn runs it again)"
                ) from None
            if status == "error":
                raise value
            return value

    def _start(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            return
        ctx = multiprocessing.get_context("spawn")  # fork would copy the parent's threads and locks
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_worker_main, args=(child,), daemon=True, name="gg-compile")
        self._proc.start()
        child.close()
        # Sent on our pipe, not in the process arguments: if the child dies while starting,
        # CPython's spawn blocks writing large arguments to it; our pipe reports the death.
        self._conn.send(self._vocab)

    def kill(self) -> None:
        """Stop the process now (a running compile is lost)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.join()
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Ask an idle worker to exit, and kill it if it does not."""
        if self._proc is not None and self._proc.is_alive() and self._lock.acquire(blocking=False):
            try:
                self._conn.send(None)
                self._proc.join(timeout=2)
            except OSError:
                pass
            finally:
                self._lock.release()
        self.kill()


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
