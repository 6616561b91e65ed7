"""llguidance on a Lark grammar: LLMatcher(LLTokenizer, lark_text), masks via fill_next_token_bitmask.

    eval/.venvs/llguidance/bin/python eval/peers/run_llguidance.py --grammar java --tokenizer llama3
    ... --variant stripped     # MODIFIED grammar: Lark priorities (NAME.2:) removed

The grammar text is passed unmodified (llguidance reads Lark syntax itself); a grammar error is
reported by the matcher (is_error/get_error) and recorded verbatim as "unsupported".
"""

from __future__ import annotations

import time

from common import Peer, Unsupported, main, strip_priorities


class LLGuidance(Peer):
    tool = "llguidance"
    api = ("llguidance.hf.from_tokenizer(AutoTokenizer.from_pretrained(dir)); LLMatcher(tok, lark_text); "
           "llguidance.numpy.fill_next_token_bitmask; LLMatcher.consume_token")

    def version(self) -> str:
        import importlib.metadata as md

        return md.version("llguidance")

    def load(self) -> None:
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        import transformers  # noqa: F401

    def preprocess(self) -> dict:
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        from transformers import AutoTokenizer

        self.llg = llguidance
        self.fill = llguidance.numpy.fill_next_token_bitmask
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
        self.tok = llguidance.hf.from_tokenizer(hf)
        st["llg_tokenizer"] = time.perf_counter() - t
        t = time.perf_counter()
        err = llguidance.LLMatcher.validate_grammar(text, self.tok)
        st["validate_grammar"] = time.perf_counter() - t
        if err and not err.startswith("WARNING"):
            raise Unsupported(f"LLMatcher.validate_grammar: {err}")
        self.warnings = err or None
        self.text = text
        t = time.perf_counter()
        m = llguidance.LLMatcher(self.tok, text, log_level=0)
        st["matcher"] = time.perf_counter() - t
        if m.is_error():
            raise Unsupported(f"LLMatcher: {m.get_error()}")
        self.vocab = self.tok.vocab_size
        self.bitmask = llguidance.numpy.allocate_token_bitmask(1, self.vocab)
        self.matcher_errors = []
        return st

    def start(self) -> None:
        self.m = self.llg.LLMatcher(self.tok, self.text, log_level=0)

    def mask(self):
        self.fill(self.m, self.bitmask, 0)
        return self.bitmask

    def allowed(self, mask, token: int) -> bool:
        return token < self.vocab and bool((int(mask[0, token >> 5]) >> (token & 31)) & 1)

    def advance(self, token: int, allowed: bool) -> bool:
        if not allowed:
            return False  # consume_token would put the matcher into its error state for good
        ok = self.m.consume_token(token)
        if not ok and len(self.matcher_errors) < 5:
            self.matcher_errors.append(self.m.get_error()[:300])
        return ok

    def eos_ids(self) -> list[int]:
        return [self.tok.eos_token]

    def extra(self) -> dict:
        out = {}
        if getattr(self, "warnings", None):
            out["grammar_warnings"] = self.warnings[:500]
        if getattr(self, "matcher_errors", None):
            out["matcher_errors"] = self.matcher_errors
        return out


if __name__ == "__main__":
    main(LLGuidance)
