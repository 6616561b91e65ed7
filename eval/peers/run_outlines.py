"""Outlines (1.x) on a Lark grammar: outlines.types.CFG through its default CFG backend.

    eval/.venvs/outlines/bin/python eval/peers/run_outlines.py --grammar java --tokenizer llama3

Outlines 1.x has no CFG engine of its own: `Generator(model, CFG(text))` builds
`backends.llguidance.LLGuidanceLogitsProcessor` (CFG_DEFAULT_BACKEND = "llguidance"; the grammar
text is tried as llguidance "grammar", then "lark"). The model is only needed for its tokenizer and
tensor library, so a stand-in Llama with random weights, built locally from a tiny config, is used
(nothing is downloaded; building it is left out of preprocess_s). A "mask" is one call of the logits
processor as a generation loop makes it: consume the previous token (from input_ids), fill the
bitmask, apply it to the logits. Like a generation loop, the processor is handed every program
token, refused or not (Outlines has no way to leave a token out), so a refused token puts the
llguidance matcher into its error state; that is recorded, not worked around.
"""

from __future__ import annotations

import time
import warnings

from common import Peer, Unsupported, main


class Outlines(Peer):
    tool = "outlines"
    api = ("outlines.from_transformers(stand-in LlamaForCausalLM, AutoTokenizer.from_pretrained(dir)); "
           "outlines.Generator(model, outlines.types.CFG(lark_text)).logits_processor(input_ids, logits)")

    def version(self) -> str:
        import importlib.metadata as md

        return md.version("outlines")

    def load(self) -> None:
        import outlines  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401

    def preprocess(self) -> dict:
        import outlines
        import torch
        import transformers
        from outlines.types import CFG

        if self.args.variant:
            raise ValueError(f"unknown variant {self.args.variant!r}")
        self.torch = torch
        st = {}
        t = time.perf_counter()
        hf = transformers.AutoTokenizer.from_pretrained(str(self.tok_dir))
        st["hf_tokenizer_load"] = time.perf_counter() - t
        t = time.perf_counter()
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(vocab_size=len(hf), hidden_size=8, intermediate_size=8, num_hidden_layers=1,
                                       num_attention_heads=1, num_key_value_heads=1)
        stand_in = transformers.LlamaForCausalLM(cfg)
        st["not_counted"] = time.perf_counter() - t
        t = time.perf_counter()
        self.model = outlines.from_transformers(stand_in, hf)
        st["from_transformers"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            self.gen = outlines.Generator(self.model, CFG(self.grammar_text))
        except ValueError as exc:
            raise Unsupported(f"outlines.Generator(model, CFG(...)): {exc}") from None
        st["generator"] = time.perf_counter() - t
        self.proc = self.gen.logits_processor
        self.backend = type(self.proc).__module__ + "." + type(self.proc).__name__
        self.width = len(hf)
        self.eos = [hf.eos_token_id]
        self.errors = []
        self.grammar_error = None
        return st

    def start(self) -> None:
        self.proc.reset()
        self.ids = [0]  # a one-token "prompt"; the processor never consumes it
        self.pending_error = False

    def before_mask(self) -> None:
        self.x = self.torch.tensor([self.ids], dtype=self.torch.long)
        self.logits = self.torch.zeros((1, self.width), dtype=self.torch.float32)

    def mask(self):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = self.proc(self.x, self.logits)
        for w in caught:
            msg = str(w.message)
            if msg.startswith("Error in LLMatcher") and len(self.errors) < 5 and msg[:300] not in self.errors:
                self.errors.append(msg[:300])
        if self.grammar_error is None:  # right after the first call: did the matcher take the grammar?
            m = self.proc.ll_matchers[0]
            self.grammar_error = m.get_error() if m.is_error() else ""
        return out

    def allowed(self, mask, token: int) -> bool:
        return token < self.width and bool(mask[0, token] != float("-inf"))

    def advance(self, token: int, allowed: bool) -> bool:
        self.ids.append(token)  # the processor consumes it on the next call, refused or not
        return allowed

    def eos_ids(self) -> list[int]:
        return self.eos

    def verdict(self):
        if self.grammar_error:
            return ("unsupported", "Outlines took CFG(text) without an error, but its llguidance matcher rejected the "
                    f"grammar, so every token was refused (figures are for that): {self.grammar_error}")
        return None

    def extra(self) -> dict:
        out = {"backend": getattr(self, "backend", None), "grammar_error": getattr(self, "grammar_error", None)}
        if getattr(self, "errors", None):
            out["matcher_errors"] = self.errors
        return out


if __name__ == "__main__":
    main(Outlines)
