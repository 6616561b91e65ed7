"""A peer's compile time with its tokenizer already loaded: compile + first mask, per grammar.

    eval/.venvs/xgrammar/bin/python eval/peers/run_compile.py --peer xgrammar --tokenizer llama3 --cases cases.json

``cases.json`` (written by ``eval/compile_time.py``) lists ``{"name", "kind", "text"}``: kind
``lark`` (grammar text; each run gets a fresh comment line, so nothing is served from a cache),
``json_schema`` (schema text) or ``builtin_json`` (the peer's own any-JSON grammar). Prints ONE
JSON line: per case the seconds of each run, or the peer's error. Runs in the peer's venv
(stdlib + the peer); XGrammar's compiler cache is off.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import make_tokenizer_dir  # noqa: E402


def xgrammar_session(tok_dir: Path):
    import xgrammar as xgr
    from transformers import AutoTokenizer

    info = xgr.TokenizerInfo.from_huggingface(AutoTokenizer.from_pretrained(str(tok_dir)))
    compiler = xgr.GrammarCompiler(info, max_threads=os.cpu_count() or 1, cache_enabled=False)
    bitmask = xgr.allocate_token_bitmask(1, info.vocab_size)
    make = {
        "lark": compiler.compile_lark,
        "json_schema": lambda text: compiler.compile_json_schema(text),
        "builtin_json": lambda _text: compiler.compile_builtin_json_grammar(),
    }

    def first_mask(kind: str, text: str) -> None:
        xgr.GrammarMatcher(make[kind](text)).fill_next_token_bitmask(bitmask)

    return first_mask


def llguidance_session(tok_dir: Path):
    import llguidance
    import llguidance.hf
    import llguidance.numpy
    from transformers import AutoTokenizer

    tok = llguidance.hf.from_tokenizer(AutoTokenizer.from_pretrained(str(tok_dir)))
    bitmask = llguidance.numpy.allocate_token_bitmask(1, tok.vocab_size)
    make = {
        "lark": lambda text: text,
        "json_schema": lambda text: llguidance.LLMatcher.grammar_from_json_schema(text),
        "builtin_json": lambda _text: llguidance.LLMatcher.grammar_from_json_schema("{}"),
    }

    def first_mask(kind: str, text: str) -> None:
        m = llguidance.LLMatcher(tok, make[kind](text), log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        llguidance.numpy.fill_next_token_bitmask(m, bitmask, 0)

    return first_mask


SESSIONS = {"xgrammar": xgrammar_session, "llguidance": llguidance_session}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True, choices=sorted(SESSIONS))
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    import importlib.metadata as md

    cases = json.loads(Path(args.cases).read_text())
    with tempfile.TemporaryDirectory() as work:
        t = time.perf_counter()
        first_mask = SESSIONS[args.peer](make_tokenizer_dir(args.tokenizer, Path(work) / "tok"))
        out = {"peer": args.peer, "version": md.version(args.peer), "tokenizer": args.tokenizer,
               "tokenizer_seconds": time.perf_counter() - t, "cases": {}}
        for case in cases:
            runs, error = [], None
            for r in range(args.runs):
                text = case["text"] + (f"\n// run {r} {time.time_ns()}\n" if case["kind"] == "lark" else "")
                t = time.perf_counter()
                try:
                    first_mask(case["kind"], text)
                except Exception as exc:  # noqa: BLE001 - the peer's refusal, recorded verbatim
                    error = f"{type(exc).__name__}: {str(exc)[:300]}"
                    break
                runs.append(time.perf_counter() - t)
            out["cases"][case["name"]] = {"seconds": runs, "error": error}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
