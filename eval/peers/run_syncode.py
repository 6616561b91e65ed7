"""SynCode on a Lark grammar: SyncodeLogitsProcessor(Grammar(name), tokenizer) called as a
transformers logits processor.

    eval/.venvs/syncode/bin/python eval/peers/run_syncode.py --grammar go --tokenizer llama2

The grammars in grammars/bench/ are SynCode's built-in ones (checked at run time by SHA-256:
byte-identical, or for python.lark the SynCode file our copy was edited from, the same language;
see grammars/bench/README.md), so SynCode is given the grammar by NAME ("go", "java", "json",
"python"): that is how it picks its Go parser and its Python parser with an indenter. Defaults of
syncode.Syncode are used (parser="lalr", mode="grammar_mask", indent=False,
parse_output_only=True); use_cache=False and a fresh SYNCODE_CACHE make every run cold. A "mask" is one call of the processor (it decodes the
output so far, parses it incrementally and looks up the mask store). SynCode reads the text, so it
always goes on with the program's token. When it finds no acceptable token (or its parse fails)
it leaves the scores unmasked: those steps are counted in "unconstrained_masks".
"""

from __future__ import annotations

import hashlib
import time

from common import Peer, main

# SHA-256 of SynCode's own python.lark, which grammars/bench/python.lark was edited from without
# changing its language (an alternative that never parses anything dropped; grammars/bench/README.md)
EDITED_FROM = {"python": "3a2b08b0bf659321f6c15fa50df1ec26e86da7967d4a286897a014496cc671b5"}


class SynCode(Peer):
    tool = "syncode"
    api = ("syncode.SyncodeLogitsProcessor(syncode.parsers.grammars.Grammar(name), "
           "AutoTokenizer.from_pretrained(dir), use_cache=False)(input_ids, scores)")

    def version(self) -> str:
        import importlib.metadata as md

        return md.version("syncode")

    def load(self) -> None:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        from syncode import SyncodeLogitsProcessor  # noqa: F401
        from syncode.parsers.grammars import Grammar  # noqa: F401

    def preprocess(self) -> dict:
        import torch
        from syncode import SyncodeLogitsProcessor
        from syncode.parsers.grammars import Grammar
        from transformers import AutoTokenizer

        if self.args.variant:
            raise ValueError(f"unknown variant {self.args.variant!r}")
        self.torch = torch
        st = {}
        t = time.perf_counter()
        hf = AutoTokenizer.from_pretrained(str(self.tok_dir))
        st["hf_tokenizer_load"] = time.perf_counter() - t
        grammar = Grammar(self.args.grammar)
        ours = hashlib.sha256(self.grammar_text.encode()).hexdigest()
        theirs = hashlib.sha256(grammar.ebnf.encode()).hexdigest()
        self.identical = ours == theirs or EDITED_FROM.get(self.args.grammar) == theirs
        if not self.identical:  # fall back to the file itself (loses SynCode's per-language parser)
            grammar = Grammar(str(self.grammar_path))
        t = time.perf_counter()
        self.proc = SyncodeLogitsProcessor(grammar=grammar, tokenizer=hf, use_cache=False)
        st["logits_processor"] = time.perf_counter() - t
        self.width = len(hf)
        self.eos = [hf.eos_token_id]
        self.unconstrained = 0
        return st

    def start(self) -> None:
        self.proc.reset()
        self.ids = [0]  # a one-token "prompt"; parse_output_only=True leaves it out

    def before_mask(self) -> None:
        self.x = self.torch.tensor([self.ids], dtype=self.torch.long)
        self.logits = self.torch.zeros((1, self.width), dtype=self.torch.float32)

    def mask(self):
        return self.proc(self.x, self.logits)

    def allowed(self, mask, token: int) -> bool:
        if not bool(self.torch.isinf(mask[0]).any()):
            self.unconstrained += 1
        return token < self.width and bool(mask[0, token] != float("-inf"))

    def advance(self, token: int, allowed: bool) -> bool:
        self.ids.append(token)
        return True

    def eos_ids(self) -> list[int]:
        return self.eos

    def extra(self) -> dict:
        return {"grammar_by_name": getattr(self, "identical", None),
                "unconstrained_masks": getattr(self, "unconstrained", None)}


if __name__ == "__main__":
    main(SynCode)
