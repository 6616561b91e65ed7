"""Error types: one root class, subclasses that also inherit the matching builtin.

Every error survives pickling (a server may raise it in a worker process and report it in
another), whatever arguments its constructor takes.
"""

from __future__ import annotations

from typing import NamedTuple


def _restore(cls, args, state):
    err = cls.__new__(cls)
    Exception.__init__(err, *args)
    err.__dict__.update(state)
    return err


class Hint(NamedTuple):
    """How to fix an error, said for each interface: the Python API's words end the message,
    the ``gg`` command shows its own (:meth:`GreatGrammaError.for_cli`)."""

    api: str
    cli: str


START_HINT = Hint("pass start= the name of a rule", "pass --start with the name of a rule")
UNDEFINED_START_HINT = Hint("define it or " + START_HINT.api, "define it or " + START_HINT.cli)
INDENTER_HINT = Hint(
    "for an indenter pass Grammar(..., indenter=gg.Indenter(...)) (gg.Indenter.python() for Python grammars)",
    "for Python's indentation pass --indenter python",
)


class GreatGrammaError(Exception):
    """Root of every error greatgramma raises on purpose. ``hint``: a :class:`Hint`, or None."""

    hint: Hint | None = None

    def for_cli(self) -> str:
        """The message with the hint in the command line's words."""
        text, hint = str(self), self.hint
        if hint is None or not text.endswith(hint.api):
            return text
        return text[: len(text) - len(hint.api)] + hint.cli


class _RestoredByState:
    """Pickle support for errors whose constructor does not take the message back."""

    def __reduce__(self):
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class GrammarError(GreatGrammaError, ValueError):
    """The grammar cannot be compiled (syntax, LALR conflict, bad terminal...).

    Besides the message, what is known about the place: ``source`` (file name or
    ``"<string>"``), ``line`` and ``column`` (1-based), ``symbol`` (the rule or terminal at
    fault) and ``kind`` (a short tag such as ``"syntax"``, ``"undefined"``, ``"conflict"``,
    ``"empty-language"``, ``"empty-terminal"``, ``"duplicate"``, ``"start"``); None when unknown.
    ``hint``: how to fix it (:class:`Hint`); its API wording ends the message.
    """

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        column: int | None = None,
        symbol: str | None = None,
        kind: str | None = None,
        hint: Hint | None = None,
    ):
        super().__init__(f"{message}; {hint.api}" if hint is not None else message)
        self.hint = hint
        self.source = source
        self.line = line
        self.column = column
        self.symbol = symbol
        self.kind = kind


class UnsupportedRegexError(_RestoredByState, GrammarError):
    """A terminal uses a regex construct that the byte-level lexer cannot represent exactly."""

    def __init__(self, terminal: str, construct: str, pattern: str | None = None):
        where = f" in pattern {pattern!r}" if pattern is not None else ""
        super().__init__(
            f"terminal {terminal}: unsupported regex construct {construct}{where}",
            symbol=terminal,
            kind="unsupported-regex",
        )
        self.terminal = terminal
        self.construct = construct
        self.pattern = pattern


class GrammarWarning(UserWarning):
    """Something in the grammar is probably not what its author meant, but Lark accepts it too."""


class TokenizerError(GreatGrammaError, ValueError):
    """The tokenizer file or object cannot be turned into a vocabulary, or no tokens spell a text exactly."""


class ResourceLimitError(GreatGrammaError, MemoryError):
    """A table would grow past a configured limit."""


class ArtifactError(GreatGrammaError, ValueError):
    """A saved compiled grammar is corrupt, of another version, or for other inputs."""


class TokenRejectedError(_RestoredByState, GreatGrammaError, ValueError):
    """A token was fed that the grammar does not allow at this point.

    ``offset``: how many of the token's bytes keep the output viable (the fault is at the
    next one); ``reason``: what is wrong there; ``expected``: what could come instead, named
    for people.
    """

    def __init__(
        self, token_id: int, token_bytes: bytes | None, expected: list[str], reason: str = "", *, offset: int = 0
    ):
        self.token_id = token_id
        self.token_bytes = token_bytes
        self.expected = expected
        self.reason = reason
        self.offset = offset
        shown = "special token (no bytes)" if token_bytes is None else repr(token_bytes)
        msg = f"token {token_id} {shown} is not allowed here"
        if reason:
            msg += f": {reason}" if offset == 0 else f": at its byte {offset}, {reason}"
        if expected:
            msg += f"; expected one of: {', '.join(expected)}"
        super().__init__(msg)
