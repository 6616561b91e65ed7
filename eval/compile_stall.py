"""Inter-token latency of running sequences while new grammars compile: compiling on a thread of the
serving process versus in worker processes (``GrammarCache(workers=N)``).

Decoding threads stand in for an engine's running requests: each walks a JSON program's tokens
with its own Matcher (one shared compiled grammar), computes the mask, sleeps ``--forward-ms``
for the model's forward pass (which releases the GIL, as a GPU forward pass does), and accepts
the token; the gap between two of a thread's tokens is one inter-token latency. Meanwhile
``--grammars`` new grammars (``--requests grammars``: the benchmark's JSON, Go and Java grammars,
each made distinct by a comment; ``--requests schemas``: seeded JSON Schemas of objects with 4-12
typed members, enums, arrays and nested objects, each with an instance of its own) are requested
through a GrammarCache, and as each arrives a new sequence starts decoding a program of its
language (an instance of its schema) with it: its first masks fill the tables a lazily compiled grammar
left for first use, in this process. Reported: p50/p99/max of the gaps from the first request
until every new sequence has made ``--new-tokens`` tokens, and the seconds until all compiled.
Modes ``WORKERS:lazy|eager``: compile on a thread (0) or in N processes, with the token tables
filled on first use (``gg.compile``'s default) or in the compile (``eager=True``; in a worker
process the artifact then carries them).

    python -m eval.compile_stall                    # the four modes, writes eval/out/
    python -m eval.compile_stall --update-results   # rewrites eval/compile_stall.json and .md
    python -m eval.compile_stall --requests schemas --update-results   # eval/compile_stall_schemas.{json,md}
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import threading
import time

import numpy as np

from eval.paths import ROOT, bench_grammar, markdown_table, programs, tokenizer_file, write_results

RESULTS = {"grammars": ROOT / "eval" / "compile_stall.json", "schemas": ROOT / "eval" / "compile_stall_schemas.json"}
WORDS = ["id", "name", "email", "price", "count", "tags", "active", "owner", "created", "score", "kind", "notes", "size"]


def schema_request(rng: random.Random, depth: int = 0) -> tuple[dict, object]:
    """A JSON Schema of an object with typed members, and an instance of it (every member present)."""
    props, value = {}, {}
    for name in rng.sample(WORDS, rng.randint(4, 8 if depth else 12)):
        kind = rng.choice(["string", "integer", "number", "boolean", "enum", "array"] + (["object"] if depth < 1 else []))
        if kind == "enum":
            options = rng.sample(["red", "green", "blue", "small", "large", "open", "closed"], 3)
            props[name], value[name] = {"enum": options}, rng.choice(options)
        elif kind == "array":
            props[name] = {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 4}
            value[name] = [rng.choice(WORDS) for _ in range(rng.randint(0, 4))]
        elif kind == "object":
            props[name], value[name] = schema_request(rng, depth + 1)
        else:
            props[name] = {"type": kind}
            value[name] = {"string": "x" * rng.randint(1, 9), "integer": rng.randint(-99, 999),
                           "number": round(rng.uniform(-9, 9), 2), "boolean": rng.random() < 0.5}[kind]  # fmt: skip
    return {"type": "object", "properties": props, "required": sorted(props)}, value


def decode_loop(compiled, ids: list[int], stop: threading.Event, gaps: list, forward_s: float, limit: int = 0) -> None:
    """One running sequence: mask, forward pass (sleep), accept; the program again when it ends
    (``limit``: stop after that many tokens)."""
    import greatgramma as gg

    matcher = gg.Matcher(compiled)
    last = time.perf_counter()
    i = 0
    while not stop.is_set() and not (limit and len(gaps) >= limit):
        matcher.next_token_mask()
        time.sleep(forward_s)
        if i == len(ids):
            matcher.reset()
            i = 0
        matcher.accept_token(ids[i])
        i += 1
        now = time.perf_counter()
        gaps.append((now, now - last))
        last = now


def run(mode: str, n_grammars: int, n_seqs: int, forward_ms: float, seed: int, new_tokens: int, requests: str) -> dict:
    import greatgramma as gg
    from greatgramma.serving import GrammarCache
    from greatgramma.tokenize import encode_exact, load_tokenizer

    workers, fill = mode.split(":")
    mode_workers = int(workers)
    tok = tokenizer_file("llama3")
    vocab = gg.Vocabulary.from_file(tok)
    hf = load_tokenizer(tok)
    langs = ("json", "go", "java")
    walks = {g: encode_exact(hf, programs(g)[0].read_text(encoding="utf-8"), vocab.token_bytes) for g in langs}
    running = gg.compile(gg.Grammar.from_file(ROOT / "grammars" / "json.lark"), vocab, eager=True)
    ids = walks["json"]
    decode_loop(running, ids, threading.Event(), [], 0, len(ids))  # running sequences are past their first walk
    if requests == "schemas":  # a new schema per request (seeded per mode, so no two modes share one)
        made = [schema_request(random.Random(f"{seed}-{k}")) for k in range(n_grammars)]
        new = [gg.Grammar.from_json_schema(schema) for schema, _ in made]
        new_walks = [encode_exact(hf, json.dumps(value), vocab.token_bytes) for _, value in made]
    else:
        sources = [bench_grammar(name).read_text(encoding="utf-8") for name in langs]
        new = [sources[k % 3] + f"\n// request {seed}-{k}\n" for k in range(n_grammars)]
        new_walks = [walks[langs[k % 3]] for k in range(n_grammars)]
    options = {"eager": fill == "eager"}

    with GrammarCache(vocab, workers=mode_workers, max_entries=n_grammars, compile_options=options) as cache:
        if mode_workers:  # start the workers first, as a server does at start-up
            cache.get('start: "warm"\n', timeout=120)
        stop = threading.Event()
        gaps: list[list] = [[] for _ in range(n_seqs)]
        threads = [
            threading.Thread(target=decode_loop, args=(running, ids, stop, gaps[k], forward_ms / 1000))
            for k in range(n_seqs)
        ]
        for t in threads:
            t.start()
        time.sleep(1.0)  # steady state before the compiles
        t0 = time.perf_counter()
        futures = [cache.get_async(text) for text in new]
        started = []
        for k, f in enumerate(futures):  # each new request starts decoding once its grammar is there
            compiled = f.result(timeout=600)
            gaps.append([])
            started.append(threading.Thread(
                target=decode_loop, args=(compiled, new_walks[k], stop, gaps[-1], forward_ms / 1000, new_tokens)
            ))
            started[-1].start()
        t1 = time.perf_counter()
        for t in started:
            t.join()
        t2 = time.perf_counter()
        stop.set()
        for t in threads:
            t.join()
    during = np.array([g for seq in gaps for (at, g) in seq if t0 <= at <= t2]) * 1000
    before = np.array([g for seq in gaps for (at, g) in seq if at < t0]) * 1000
    return {
        "compile_in": (f"{mode_workers} worker processes" if mode_workers else "a thread of this process") + f", {fill}",
        "requests": requests,
        "workers": mode_workers,
        "tables": fill,
        "new_tokens": new_tokens,
        "grammars": n_grammars,
        "sequences": n_seqs,
        "forward_ms": forward_ms,
        "compile_all_s": t1 - t0,
        "tokens_during": int(len(during)),
        "gap_before_p50_ms": float(np.percentile(before, 50)),
        "gap_before_p99_ms": float(np.percentile(before, 99)),
        "gap_during_p50_ms": float(np.percentile(during, 50)),
        "gap_during_p99_ms": float(np.percentile(during, 99)),
        "gap_during_max_ms": float(during.max()),
    }


def markdown(cells: list[dict]) -> str:
    columns = ["compile in", "grammars", "sequences", "all compiled (s)", "gap p50 before / during (ms)",
               "gap p99 before / during (ms)", "max gap during (ms)"]
    rows = [
        [c["compile_in"], c["grammars"], c["sequences"], f"{c['compile_all_s']:.1f}",
         f"{c['gap_before_p50_ms']:.1f} / {c['gap_during_p50_ms']:.1f}",
         f"{c['gap_before_p99_ms']:.1f} / {c['gap_during_p99_ms']:.1f}", f"{c['gap_during_max_ms']:.0f}"]
        for c in cells
    ]
    return markdown_table(columns, rows, "lrrrrrr")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", nargs="+", default=["0:lazy", "0:eager", "2:lazy", "2:eager"],
                    help="WORKERS:lazy|eager (0 workers: compile on a thread)")
    ap.add_argument("--new-tokens", type=int, default=100, help="tokens each new request decodes")
    ap.add_argument("--grammars", type=int, default=10, help="new requests, each with a grammar of its own")
    ap.add_argument("--requests", choices=["grammars", "schemas"], default="grammars",
                    help="the new requests' grammars: JSON/Go/Java grammar texts, or JSON Schemas")
    ap.add_argument("--sequences", type=int, default=4)
    ap.add_argument("--forward-ms", type=float, default=10.0)
    ap.add_argument("--update-results", action="store_true", help="write compile_stall.json (compile_stall_schemas.json) and .md in eval/ (else eval/out/)")
    args = ap.parse_args()
    cells = []
    for seed, mode in enumerate(args.modes):
        cells.append(run(mode, args.grammars, args.sequences, args.forward_ms, seed, args.new_tokens, args.requests))
        print(json.dumps(cells[-1]), flush=True)
    out = {"machine": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(), "cells": cells}
    write_results(RESULTS[args.requests], args.update_results, out, markdown(cells))
    print(markdown(cells))


if __name__ == "__main__":
    main()
