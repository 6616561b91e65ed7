"""What a serving engine needs around the masks: compiled grammars shared across requests, compiled off the decoding path, and batches of masks computed in worker processes."""

from .compile_worker import GrammarSpec
from .grammar_cache import CompileTimeoutError, GrammarCache
from .mask_workers import MaskWorkers

__all__ = ["CompileTimeoutError", "GrammarCache", "GrammarSpec", "MaskWorkers"]
