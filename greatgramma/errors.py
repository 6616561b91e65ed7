"""Error types: one root class, subclasses that also inherit the matching builtin."""

from __future__ import annotations


class GreatGrammaError(Exception):
    """Root of every error greatgramma raises on purpose."""


class GrammarError(GreatGrammaError, ValueError):
    """The grammar cannot be compiled (syntax, LALR conflict, bad terminal...)."""


class UnsupportedRegexError(GrammarError):
    """A terminal uses a regex construct that the byte-level lexer cannot represent exactly."""

    def __init__(self, terminal: str, construct: str, pattern: str | None = None):
        self.terminal = terminal
        self.construct = construct
        self.pattern = pattern
        where = f" in pattern {pattern!r}" if pattern is not None else ""
        super().__init__(f"terminal {terminal}: unsupported regex construct {construct}{where}")


class TokenizerError(GreatGrammaError, ValueError):
    """The tokenizer file or object cannot be turned into a vocabulary."""


class ResourceLimitError(GreatGrammaError, MemoryError):
    """A table would grow past a configured limit."""


class ArtifactError(GreatGrammaError, ValueError):
    """A saved compiled grammar is corrupt, of another version, or for other inputs."""


class TokenRejectedError(GreatGrammaError, ValueError):
    """A token was fed that the grammar does not allow at this point."""

    def __init__(self, token_id: int, token_bytes: bytes | None, expected: list[str], reason: str = ""):
        self.token_id = token_id
        self.token_bytes = token_bytes
        self.expected = expected
        shown = "special token (no bytes)" if token_bytes is None else repr(token_bytes)
        msg = f"token {token_id} {shown} is not allowed here"
        if reason:
            msg += f": {reason}"
        if expected:
            msg += f"; expected one of: {', '.join(expected)}"
        super().__init__(msg)
