"""Step time and memory of walks that nest 20,000 deep, against the same walks 100 deep.

Two cases (issue 11, item 3):

- ``json``: grammars/bench/json.lark (SynCode's) with the Llama-3 tokenizer; ``[`` D times, ``]`` D times, EOS.
- ``items``: ``start: "[" items "]"``, ``items: NUM "," items | NUM`` (right-recursive: closing
  the list reduces depth-many times in one step), Llama-3 tokenizer; ``[``, then ``1`` ``,``
  repeated until the stack is D deep, ``1``, ``]``, EOS.

A step is ``mask(state)`` + ``advance(state, token)``, timed together. The deep walk goes to
D = 20,000 once; the shallow walk goes to D = 100 and is repeated until it has as many steps,
with the stack-keyed caches cleared before each repetition, so that its steps compute their
masks as the deep walk's do (every stack of the deep walk is new to the Masker). RSS is read
from /proc/self/statm before the deep walk, every 500 steps of it (the peak) and after EOS; as
freed memory is reused, RSS can understate, so the Python heap's growth is measured too
(tracemalloc, on a second deep walk with a fresh Masker: the most allocated at once, caches and
frames included).

    python -m eval.deep_stacks                     # both cases, D = 20000
    python -m eval.deep_stacks --cases items --depth 40000

Run it on a quiet machine: the figures are wall-clock times.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from eval.paths import ROOT, bench_grammar, tokenizer_file

ITEMS = r"""
start: "[" items "]"
items: NUM "," items | NUM
NUM: /[0-9]+/
"""


def rss_mb() -> float:
    """Resident set size of this process, in MB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def token_of(vocab, data: bytes) -> int:
    """The id of the token whose bytes are ``data``."""
    for i, b in enumerate(vocab.token_bytes):
        if b == data:
            return i
    raise SystemExit(f"no token {data!r} in this vocabulary")


def json_tokens(vocab, depth: int) -> list[int]:
    open_, close = token_of(vocab, b"["), token_of(vocab, b"]")
    return [open_] * depth + [close] * depth + [vocab.eos_token_ids[0]]


def items_tokens(vocab, depth: int) -> list[int]:
    open_, one, comma, close = (token_of(vocab, b) for b in (b"[", b"1", b",", b"]"))
    pairs = max(0, (depth - 3) // 2)  # the stack: start, "[", then NUM "," per pair, then NUM
    return [open_] + [one, comma] * pairs + [one, close, vocab.eos_token_ids[0]]


def walk(masker, tokens: list[int], rss: list[float] | None = None) -> tuple[list[float], int]:
    """Per-step seconds (mask + advance) of one walk from the initial state, and the deepest
    stack; ``rss`` gets the RSS every 500 steps."""
    state, times, deepest = masker.initial_state(), [], 0
    clock = time.perf_counter
    for i, tok in enumerate(tokens):
        t = clock()
        masker.mask(state)
        state = masker.advance(state, tok)
        times.append(clock() - t)
        deepest = max(deepest, len(state.stack))
        if rss is not None and i % 500 == 0:
            rss.append(rss_mb())
    assert state.finished, "the walk did not end with EOS"
    return times, deepest


def clear_stack_caches(masker) -> None:
    """Forget the caches keyed by whole stacks (as if every stack were new)."""
    caches = masker.caches()
    for name in ("masks", "rows"):
        caches[name].clear()


def heap_growth_mb(make_masker, shallow_tokens: list[int], deep_tokens: list[int]) -> float:
    """The most the Python heap holds above its start during a deep walk (fresh Masker, warmed
    up on the shallow walk first)."""
    import tracemalloc

    masker = make_masker()
    walk(masker, shallow_tokens)
    tracemalloc.start()
    try:
        state, most = masker.initial_state(), 0
        for i, tok in enumerate(deep_tokens):
            masker.mask(state)
            state = masker.advance(state, tok)
            if i % 500 == 0:
                most = max(most, tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
    return most / 2**20


def summary(times: list[float]) -> dict:
    us = sorted(t * 1e6 for t in times)
    return {"steps": len(us), "mean_us": statistics.fmean(us), "median_us": us[len(us) // 2],
            "p99_us": us[min(len(us) - 1, int(0.99 * len(us)))], "max_us": us[-1]}


def run_case(name: str, vocab, depth: int, shallow_depth: int) -> dict:
    import greatgramma as gg

    text = bench_grammar("json").read_text(encoding="utf-8") if name == "json" else ITEMS
    compiled = gg.compile(gg.Grammar(text), vocab)
    masker = gg.Masker(compiled)
    make = json_tokens if name == "json" else items_tokens
    shallow_tokens, deep_tokens = make(vocab, shallow_depth), make(vocab, depth)
    walk(masker, shallow_tokens)  # warm-up: lexer views, splits, blocks (depth-independent work)
    shallow: list[float] = []
    while len(shallow) < len(deep_tokens):
        clear_stack_caches(masker)
        shallow += walk(masker, shallow_tokens)[0]
    gc.collect()
    before = rss_mb()
    samples: list[float] = []
    deep, deepest = walk(masker, deep_tokens, samples)
    after = rss_mb()
    s, d = summary(shallow), summary(deep)
    return {"case": name, "depth": deepest, "shallow": s, "deep": d,
            "mean_ratio": d["mean_us"] / s["mean_us"], "p99_ratio": d["p99_us"] / s["p99_us"],
            "rss_before_mb": before, "rss_growth_peak_mb": max(samples + [after]) - before,
            "rss_growth_end_mb": after - before,
            "heap_growth_mb": heap_growth_mb(lambda: gg.Masker(compiled), shallow_tokens, deep_tokens)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["json", "items"], choices=["json", "items"])
    ap.add_argument("--depth", type=int, default=20000)
    ap.add_argument("--shallow-depth", type=int, default=100)
    ap.add_argument("--tokenizer", default=str(tokenizer_file("llama3")))
    ap.add_argument("--json", action="store_true", help="print one JSON object per case instead of the table")
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.in_process:  # one case, in this (fresh) process: its RSS is its own
        import greatgramma as gg

        vocab = gg.Vocabulary.from_file(args.tokenizer)
        print(json.dumps(run_case(args.cases[0], vocab, args.depth, args.shallow_depth)))
        return
    if not args.json:
        print(f"# {platform.python_implementation()} {platform.python_version()}, {Path(args.tokenizer).parent.name}, "
              f"{time.strftime('%Y-%m-%d %H:%M')}, each case in a fresh process")
        print("case   depth  | shallow mean   p99 | deep mean    p99 | ratio mean  p99 | "
              "RSS growth MB (peak, end) | heap MB")
    for name in args.cases:
        cmd = [sys.executable, "-m", "eval.deep_stacks", "--in-process", "--cases", name, "--depth", str(args.depth),
               "--shallow-depth", str(args.shallow_depth), "--tokenizer", args.tokenizer]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{name}: {out.stderr.strip()}")
        r = json.loads(out.stdout.strip().splitlines()[-1])
        if args.json:
            print(json.dumps(r), flush=True)
            continue
        s, d = r["shallow"], r["deep"]
        print(f"{name:6} {r['depth']:6} | {s['mean_us']:8.0f} us {s['p99_us']:5.0f} | {d['mean_us']:6.0f} us "
              f"{d['p99_us']:6.0f} | {r['mean_ratio']:8.2f} {r['p99_ratio']:5.2f} | "
              f"{r['rss_growth_peak_mb']:7.1f} {r['rss_growth_end_mb']:7.1f}      | {r['heap_growth_mb']:7.1f}"
              f"   (max step {d['max_us'] / 1e3:.1f} ms)",
              flush=True)


if __name__ == "__main__":
    main()
