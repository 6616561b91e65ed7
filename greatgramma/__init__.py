"""greatgramma: exact grammar-constrained decoding for Lark LALR grammars over LLM tokenizers."""

from .artifact import load
from .compiled import CompiledGrammar, compile
from .errors import (
    ArtifactError,
    GrammarError,
    GreatGrammaError,
    ResourceLimitError,
    TokenizerError,
    TokenRejectedError,
    UnsupportedRegexError,
)
from .grammar import Grammar
from .masker import Masker, State
from .vocab import Vocabulary

__version__ = "0.1.0"

__all__ = [
    "ArtifactError",
    "CompiledGrammar",
    "Grammar",
    "GrammarError",
    "GreatGrammaError",
    "Masker",
    "ResourceLimitError",
    "State",
    "TokenRejectedError",
    "TokenizerError",
    "UnsupportedRegexError",
    "Vocabulary",
    "compile",
    "load",
]
