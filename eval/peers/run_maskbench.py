"""MaskBench for one peer, and the per-schema walk every engine shares (standard library only).

    eval/.venvs/llguidance/bin/python eval/peers/run_maskbench.py --peer llguidance --tokenizer llama3 --cases cases.json

``cases.json`` is written by ``eval/maskbench.py``: a list of ``{"file", "schema" (JSON text),
"tests": [{"valid", "ids"}], "error"}`` where ``ids`` are the instance's token ids as greatgramma
tokenizes it (so every engine walks identical sequences) and ``error`` is set when the instance
could not be tokenized. Prints a line ``{"ready": ...}`` once the tokenizer is loaded, then ONE
JSON line per schema, as soon as it is done (the parent times out and restarts on a hung schema).

``run_case`` is the classification of eval/maskbench.py for every engine: TTFM (the engine's
``compile``: compile the schema fresh + first mask), then every instance walked token by token,
every mask timed (TBM); outcome passing, compile_error (the engine's refusal, verbatim),
validation_error, invalidation_error or crash.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ERROR_CHARS = 300


def run_case(engine, case: dict) -> dict:
    """One schema: compile it (timed with the first mask), walk every test instance (every mask timed)."""
    rec = {"file": case["file"], "outcome": "passing", "tests": len(case["tests"])}
    t0 = time.perf_counter()
    try:
        handle = engine.compile(case["schema"])
    except engine.refusals as exc:
        rec.update(outcome="compile_error", error=(str(exc).strip().splitlines() or [type(exc).__name__])[0][:ERROR_CHARS])
        return rec
    except Exception as exc:  # noqa: BLE001 - a crash is a result here
        rec.update(outcome="crash", error=f"{type(exc).__name__}: {exc}"[:ERROR_CHARS])
        return rec
    rec["ttfm_ms"] = (time.perf_counter() - t0) * 1000
    times: list[float] = []
    for i, test in enumerate(case["tests"]):
        try:
            if test.get("error"):
                raise ValueError(f"instance not tokenized: {test['error']}")
            ok = engine.walk(handle, test["ids"], times)
        except Exception as exc:  # noqa: BLE001
            rec.update(outcome="crash", test=i, error=f"test {i}: {type(exc).__name__}: {exc}"[:ERROR_CHARS])
            break
        if test["valid"] and not ok:
            rec.update(outcome="validation_error", test=i, error=f"test {i}: valid instance refused")
            break
        if not test["valid"] and ok:
            rec.update(outcome="invalidation_error", test=i, error=f"test {i}: invalid instance accepted")
            break
    rec["tbm_ms"] = [round(t * 1000, 4) for t in times]
    return rec


def _bit(words, t: int) -> bool:
    return bool((int(words[t >> 5]) >> (t & 31)) & 1)


class _Peer:
    """The walk both peers share: a stateful matcher, a one-row bitmask (``words`` views it),
    ``fill(m)`` and ``accept(m, t)``, each peer's own."""

    words: object
    eos: list[int]

    def walk(self, m, ids: list[int], times: list[float]) -> bool:
        """True when every token is allowed and EOS is allowed at the end."""
        m.reset()
        for t in ids:
            t0 = time.perf_counter()
            self.fill(m)
            times.append(time.perf_counter() - t0)
            if not _bit(self.words, t):
                return False
            self.accept(m, t)
        t0 = time.perf_counter()
        self.fill(m)
        times.append(time.perf_counter() - t0)
        return any(_bit(self.words, e) for e in self.eos)


class XGrammar(_Peer):
    """GrammarCompiler(info, max_threads=1, cache_enabled=False).compile_json_schema(text, strict_mode=False)."""

    def __init__(self, tok_dir: Path):
        import xgrammar as xgr
        from transformers import AutoTokenizer

        self.xgr = xgr
        self.info = xgr.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(str(tok_dir)))
        self.compiler = xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        self.bitmask = xgr.allocate_token_bitmask(1, self.info.vocab_size)
        self.words = self.bitmask.numpy()[0]  # shares the tensor's memory
        self.eos = list(self.info.stop_token_ids)
        self.refusals = (Exception,)  # whatever compile_json_schema raises is its refusal

    def compile(self, text: str):
        # strict_mode=False: properties the schema does not forbid are allowed, as the standard says
        # (and as greatgramma's additional_properties=True and llguidance's default do)
        m = self.xgr.GrammarMatcher(self.compiler.compile_json_schema(text, strict_mode=False))
        self.fill(m)
        return m

    def fill(self, m) -> None:
        m.fill_next_token_bitmask(self.bitmask)

    def accept(self, m, t: int) -> None:
        if not m.accept_token(t):
            raise RuntimeError(f"accept_token({t}) refused a token its mask allowed")


class LLGuidance(_Peer):
    """LLMatcher(tok, LLMatcher.grammar_from_json_schema(text)), default JSON options."""

    def __init__(self, tok_dir: Path):
        import llguidance
        import llguidance.hf
        import llguidance.numpy
        from transformers import AutoTokenizer

        self.llg = llguidance
        self.tok = llguidance.hf.from_tokenizer(AutoTokenizer.from_pretrained(str(tok_dir)))
        self.bitmask = llguidance.numpy.allocate_token_bitmask(1, self.tok.vocab_size)
        self.words = self.bitmask[0].view("uint32")
        self._fill = llguidance.numpy.fill_next_token_bitmask
        self.eos = [self.tok.eos_token]
        self.refusals = (Exception,)

    def compile(self, text: str):
        m = self.llg.LLMatcher(self.tok, self.llg.LLMatcher.grammar_from_json_schema(text), log_level=0)
        if m.is_error():
            raise ValueError(m.get_error())
        self.fill(m)
        return m

    def fill(self, m) -> None:
        self._fill(m, self.bitmask, 0)

    def accept(self, m, t: int) -> None:
        if not m.consume_token(t):
            raise RuntimeError(f"consume_token({t}) refused a token its mask allowed: {m.get_error()}")


PEERS = {"xgrammar": XGrammar, "llguidance": LLGuidance}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peer", required=True, choices=sorted(PEERS))
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--cases", required=True, type=Path)
    args = ap.parse_args()
    import importlib.metadata as md

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from common import make_tokenizer_dir

    cases = json.loads(args.cases.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as work:
        t = time.perf_counter()
        engine = PEERS[args.peer](make_tokenizer_dir(args.tokenizer, Path(work) / "tok"))
        print(json.dumps({"ready": {"peer": args.peer, "version": md.version(args.peer), "api": PEERS[args.peer].__doc__,
                                    "tokenizer_seconds": round(time.perf_counter() - t, 3)}}), flush=True)
        for case in cases:
            print(json.dumps(run_case(engine, case)), flush=True)


if __name__ == "__main__":
    main()
