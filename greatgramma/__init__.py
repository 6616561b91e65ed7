"""greatgramma: exact grammar-constrained decoding for Lark LALR grammars over LLM tokenizers."""

from .compiled import CompiledGrammar, compile, load
from .errors import (
    ArtifactError,
    GrammarError,
    GrammarWarning,
    GreatGrammaError,
    ResourceLimitError,
    TokenizerError,
    TokenRejectedError,
    UnsupportedRegexError,
)
from .grammar import Grammar
from .indenter import Indenter
from .masker import Masker, State
from .postlexer import Postlexer
from .semicolons import Semicolons
from .version import __version__
from .vocab import Vocabulary

__all__ = [
    "ArtifactError",
    "CompiledGrammar",
    "Grammar",
    "GrammarError",
    "GrammarWarning",
    "GreatGrammaError",
    "Indenter",
    "Masker",
    "Postlexer",
    "ResourceLimitError",
    "Semicolons",
    "State",
    "TokenRejectedError",
    "TokenizerError",
    "UnsupportedRegexError",
    "Vocabulary",
    "compile",
    "load",
]

from .bitmask import allocate_token_bitmask, bitmask_to_bool, bool_to_bitmask, get_bitmask_shape
from .kernels import apply_token_bitmask_inplace
from .matcher import Matcher, fill_next_token_bitmasks

__all__ += [
    "Matcher",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_to_bool",
    "bool_to_bitmask",
    "fill_next_token_bitmasks",
    "get_bitmask_shape",
]
