"""What a serving engine needs around the masks: compiled grammars shared across requests, compiled off the decoding path."""

from .compile_worker import GrammarSpec
from .grammar_cache import CompileTimeoutError, GrammarCache

__all__ = ["CompileTimeoutError", "GrammarCache", "GrammarSpec"]
