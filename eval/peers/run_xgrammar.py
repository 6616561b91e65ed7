"""XGrammar on a Lark grammar: its own Lark front end (GrammarCompiler.compile_lark, new in 0.2.x),
masks via GrammarMatcher.fill_next_token_bitmask.

    eval/.venvs/xgrammar/bin/python eval/peers/run_xgrammar.py --grammar java --tokenizer llama3
    ... --variant stripped     # MODIFIED grammar: priorities and !/? rule prefixes removed

No hand translation to EBNF is needed: XGrammar reads Lark syntax itself and converts it to its
EBNF internally. An unmodified grammar it refuses is recorded verbatim as "unsupported".
"""

from __future__ import annotations

import os
import time

from common import Peer, Unsupported, main, strip_priorities


class XGrammar(Peer):
    tool = "xgrammar"
    api = ("xgrammar.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(dir)); "
           "GrammarCompiler(info, max_threads=cpu_count, cache_enabled=False).compile_lark(text); "
           "GrammarMatcher.fill_next_token_bitmask; GrammarMatcher.accept_token")

    def version(self) -> str:
        import importlib.metadata as md

        return md.version("xgrammar")

    def load(self) -> None:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import xgrammar  # noqa: F401

    def preprocess(self) -> dict:
        import xgrammar as xgr
        from transformers import AutoTokenizer

        self.xgr = xgr
        text = self.grammar_text
        if self.args.variant == "stripped":
            text = strip_priorities(text)
        elif self.args.variant:
            raise ValueError(f"unknown variant {self.args.variant!r}")
        st = {}
        t = time.perf_counter()
        hf = AutoTokenizer.from_pretrained(str(self.tok_dir))
        st["hf_tokenizer_load"] = time.perf_counter() - t
        t = time.perf_counter()
        self.info = xgr.TokenizerInfo.from_huggingface(hf)
        st["tokenizer_info"] = time.perf_counter() - t
        t = time.perf_counter()
        compiler = xgr.GrammarCompiler(self.info, max_threads=os.cpu_count() or 1, cache_enabled=False)
        try:
            self.compiled = compiler.compile_lark(text)
        except RuntimeError as exc:
            raise Unsupported(f"compile_lark: {exc}") from None
        st["compile_lark"] = time.perf_counter() - t
        self.vocab = self.info.vocab_size
        self.bitmask = xgr.allocate_token_bitmask(1, self.vocab)
        return st

    def start(self) -> None:
        self.m = self.xgr.GrammarMatcher(self.compiled)

    def mask(self):
        self.m.fill_next_token_bitmask(self.bitmask)
        return self.bitmask

    def allowed(self, mask, token: int) -> bool:
        return token < self.vocab and bool((int(mask[0, token >> 5]) >> (token & 31)) & 1)

    def advance(self, token: int, allowed: bool) -> bool:
        if not allowed:
            return False  # accept_token would refuse it and leave the state as it is
        return self.m.accept_token(token)

    def eos_ids(self) -> list[int]:
        return list(self.info.stop_token_ids)

    def extra(self) -> dict:
        return {"threads": os.cpu_count()}


if __name__ == "__main__":
    main(XGrammar)
