"""Batch mask filling: the time of one decoding step's masks for B sequences, serial against MaskWorkers.

Steady state, as a server sees it after a while: one compiled grammar (compiled eagerly, as
Table 1 does) and one ``Masker`` in the caller, one ``MaskWorkers`` pool, all warmed first by an
untimed pass over other texts (``--warmup`` sequences, once serially and once through the pool).
Then the caller's heap is frozen (``gc.freeze()``, as vLLM and SGLang do after startup; the
workers freeze theirs after every fill), and per (B, run, mode), B matchers each start at a
seeded random point of their own text (real Go files of the Go sources for ``go``, seeded
random JSON documents for ``json``), reached
without asking for masks, and walk ``--steps`` tokens in lockstep: a step fills the B masks
(timed), then every matcher takes its text's next token (not timed). Every step is a new token
for every sequence, at points of the texts no earlier run walked from, so the caches hold what
decoding had cached by then, never one state asked for again and again. With ``--caches cold``
every run starts with empty mask caches in every process (a new ``Masker``;
``MaskWorkers.clear_caches()``), the grammar's filled tables kept: most masks are then computed,
not looked up.

Modes: ``serial`` (``gg.fill_next_token_bitmasks``), ``workers`` (the same with
``workers=MaskWorkers(processes)`` filling every batch through its workers, ``min_batch=1,
min_seconds=0``: the caller and the workers take the rows as they come free, so the ratio
shows what the processes cost and give), ``default`` (a pool of its own with the default
settings, which keep small or cheap batches in the caller: what a user gets; each pool mode has
its own pool, so no mode finds another's masks cached in a worker), ``threads`` (a thread pool of
``processes + 1`` threads, to show what the GIL does). ``workers_work``: the time the workers
mode's processes spent computing its jobs (``MaskWorkers.seconds_here + seconds_in_workers``)
over the serial walk's time, the median over runs (eval/pool_work.py takes it apart).

    python -m eval.batch_scaling                           # go and json at llama3, B = 1..128
    python -m eval.batch_scaling --grammars go --batches 8,32 --runs 1
    python -m eval.batch_scaling --update-results          # rewrites eval/batch_scaling.json and .md
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eval.paths import ROOT, markdown_table, tokenizer_file, write_results

RESULTS = ROOT / "eval" / "batch_scaling.json"
# Debian's golang-1.19-src (under /usr/lib when golang-1.19-go is installed too, else /usr/share)
GO_SOURCES = next((p for p in (Path("/usr/lib/go-1.19/src"), Path("/usr/share/go-1.19/src")) if p.is_dir()), Path("/usr/lib/go-1.19/src"))
MODES = ("serial", "workers", "default", "threads")
WORDS = ["id", "name", "value", "items", "price", "tags", "count", "user", "active", "data", "meta", "score"]


def go_texts(n: int, seed: int = 17) -> list[str]:
    """``n`` Go files of 3-12 KB from the Go sources (tests and testdata left out), a seeded sample."""
    if not GO_SOURCES.is_dir():
        raise SystemExit(f"{GO_SOURCES} is missing: install Debian's golang-1.19-src (or run --grammars json)")
    files = sorted(
        p for p in GO_SOURCES.rglob("*.go")
        if 3000 <= p.stat().st_size <= 12000 and "testdata" not in p.parts and not p.name.endswith("_test.go")
    )  # fmt: skip
    return [p.read_text(encoding="utf-8") for p in random.Random(seed).sample(files, min(len(files), n))]


def json_texts(n: int, seed: int = 17) -> list[str]:
    """``n`` seeded random JSON documents (nested objects, arrays, strings, numbers, literals)."""
    rng = random.Random(seed)

    def value(depth: int) -> object:
        kind = rng.choice(["obj", "arr", "str", "num", "lit"] if depth < 4 else ["str", "num", "lit"])
        if kind == "obj":
            return {f"{rng.choice(WORDS)}_{rng.randrange(100)}": value(depth + 1) for _ in range(rng.randint(1, 5))}
        if kind == "arr":
            return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        if kind == "str":
            return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))
        if kind == "num":
            return rng.choice([rng.randint(-1000, 10**6), round(rng.uniform(-100, 100), rng.randint(1, 4))])
        return rng.choice([True, False, None])

    return [json.dumps({w: value(1) for w in rng.sample(WORDS, 8)}, indent=rng.choice([None, 2])) for _ in range(n)]


def setup(grammar: str, tokenizer: str, texts: int, steps: int):
    """The grammar compiled eagerly, and the token ids of ``texts`` texts (of at least ``2 * steps``
    tokens) that it accepts whole."""
    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(tokenizer_file(tokenizer))
    if grammar == "go":
        g = gg.Grammar.from_file(ROOT / "grammars" / "go.lark", postlexer=gg.Semicolons.go())
        candidates = go_texts(2 * texts)
    else:
        g = gg.Grammar.from_file(ROOT / "grammars" / "json.lark")
        candidates = json_texts(2 * texts)
    t0 = time.perf_counter()
    compiled = gg.compile(g, vocab, eager=True)
    compile_s = time.perf_counter() - t0
    hf = load_tokenizer(tokenizer_file(tokenizer))
    walks = []
    for text in candidates:
        ids = encode_exact(hf, text, vocab.token_bytes)
        if len(ids) >= 2 * steps and gg.Matcher(compiled).accept_tokens(ids) == len(ids):
            walks.append(ids)
        if len(walks) == texts:
            return compiled, walks, compile_s
    raise SystemExit(f"only {len(walks)} of {texts} {grammar} texts have {2 * steps} tokens the grammar accepts")


def windows(walks: list[list[int]], batch: int, steps: int, rng: random.Random) -> list[list[int]]:
    """``batch`` texts, each cut at a random point followed by ``steps`` tokens: prefix + timed part."""
    chosen = rng.sample(walks, batch) if batch <= len(walks) else [rng.choice(walks) for _ in range(batch)]
    return [ids[: rng.randrange(len(ids) - steps + 1) + steps] for ids in chosen]


def walk(masker, texts: list[list[int]], steps: int, fill) -> list[float]:
    """Seconds of each step's ``fill(matchers, bitmask)`` for matchers walking the last ``steps``
    tokens of ``texts`` (the rest accepted before, with no mask asked for); every token checked in the mask."""
    import numpy as np

    import greatgramma as gg

    vocab = masker.compiled.vocab
    matchers = [gg.Matcher(masker) for _ in texts]
    for m, ids in zip(matchers, texts):
        m.accept_tokens(ids[:-steps])
    bitmask = np.zeros((len(texts), (vocab.vocab_size + 31) // 32), dtype=np.int32)
    times = []
    for k in range(steps, 0, -1):
        t = time.perf_counter()
        fill(matchers, bitmask)
        times.append(time.perf_counter() - t)
        for i, (m, ids) in enumerate(zip(matchers, texts)):
            tok = ids[-k]
            assert bitmask[i, tok >> 5] >> (tok & 31) & 1, f"token {tok} masked out"
            assert m.accept_token(tok), f"token {tok} refused"
    return times


def measure(grammar: str, tokenizer: str, batches: list[int], steps: int, runs: int, warmup: int, processes: int, modes, cold: bool) -> dict:
    import greatgramma as gg
    from greatgramma.serving import MaskWorkers

    compiled, walks, compile_s = setup(grammar, tokenizer, max(max(batches), warmup), steps)
    maskers = {mode: gg.Masker(compiled) for mode in MODES}  # each mode's caller caches only what it met
    rng = random.Random(7)
    cells = []
    # each pool mode has its own pool, as it has its own caller masker: a mode never finds in a
    # worker's caches what another mode's walk of the same texts left there
    with MaskWorkers(processes, min_batch=1, min_seconds=0.0) as pool, MaskWorkers(processes) as default_pool, \
            ThreadPoolExecutor(processes + 1) as threads:  # fmt: skip

        def fill_threads(matchers, bitmask):
            for i, words in enumerate(threads.map(lambda m: m.next_token_mask(), matchers)):
                bitmask[i] = words

        fills = {
            "serial": gg.fill_next_token_bitmasks,
            "workers": lambda matchers, bitmask: gg.fill_next_token_bitmasks(matchers, bitmask, workers=pool),
            "default": lambda matchers, bitmask: gg.fill_next_token_bitmasks(matchers, bitmask, workers=default_pool),
            "threads": fill_threads,
        }
        pool.wait()
        default_pool.wait()
        for mode in modes:  # warm every process's tables and caches (untimed), each mode on the same texts
            walk(maskers[mode], windows(walks, warmup, 2 * steps, random.Random(3)), 2 * steps, fills[mode])
        gc.collect()
        gc.freeze()  # what serving engines do after startup (vLLM, SGLang): the collector skips the heap warmed so far
        for b in batches:
            cell: dict = {"batch": b}
            for _ in range(runs):
                texts = windows(walks, b, steps, rng)  # every mode walks the same texts
                for mode in modes:  # interleaved, so that a load change hits every mode alike
                    if cold:  # every process starts the run with empty mask caches (the grammar's tables stay)
                        maskers[mode] = gg.Masker(compiled)
                        pool.clear_caches()
                        default_pool.clear_caches()
                    busy = pool.seconds_here + pool.seconds_in_workers
                    times = walk(maskers[mode], texts, steps, fills[mode])
                    cell.setdefault(mode, []).append(statistics.mean(times) * 1e3)
                    if mode == "workers":  # the jobs' compute time in both processes, against the serial walk's time
                        serial_s = cell["serial"][-1] * steps / 1e3
                        cell.setdefault("work", []).append((pool.seconds_here + pool.seconds_in_workers - busy) / serial_s)
            for mode in modes:
                cell[f"{mode}_ms"] = round(statistics.median(cell.pop(mode)), 3)
            for mode in modes[1:]:
                cell[f"{mode}_ratio"] = round(cell[f"{mode}_ms"] / cell["serial_ms"], 3)
            if "work" in cell:
                cell["workers_work"] = round(statistics.median(cell.pop("work")), 3)
            print(json.dumps({"grammar": grammar, **cell}), flush=True)
            cells.append(cell)
    return {"grammar": grammar, "tokenizer": tokenizer, "caches": "cold" if cold else "warm", "compile_s": round(compile_s, 3), "cells": cells}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammars", default="go,json")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--steps", type=int, default=40, help="steps timed per run (tokens per sequence)")
    ap.add_argument("--warmup", type=int, default=384, help="sequences of the untimed warm-up pass (2 x steps tokens each)")
    ap.add_argument("--runs", type=int, default=3, help="runs per cell; the median of their mean step times")
    ap.add_argument("--processes", type=int, default=max(1, (os.cpu_count() or 2) - 1), help="MaskWorkers processes")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--caches", default="warm,cold", help="comma-separated: warm (steady state), cold (empty mask caches at each run's start)")
    ap.add_argument("--update-results", action="store_true")
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    modes = tuple(m for m in MODES if m in args.modes.split(","))
    if modes[0] != "serial":
        raise SystemExit("--modes must include serial (the ratios are against it)")
    unknown = set(args.caches.split(",")) - {"warm", "cold"}
    if unknown:
        raise SystemExit(f"--caches takes warm and/or cold, comma-separated; not {', '.join(sorted(unknown))}")
    load = os.getloadavg()[0]
    results = [
        measure(g, args.tokenizer, batches, args.steps, args.runs, args.warmup, args.processes, modes, caches == "cold")
        for g in args.grammars.split(",")
        for caches in args.caches.split(",")
    ]
    data = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_average_start": round(load, 2), "load_average_end": round(os.getloadavg()[0], 2),
        "steps": args.steps, "runs": args.runs, "warmup": args.warmup, "processes": args.processes, "results": results,
    }  # fmt: skip
    path = write_results(RESULTS, args.update_results, data, table(data))
    print(f"wrote {path}")


def table(data: dict) -> str:
    lines = [
        f"# Batch mask filling, {data['date']}: one step's masks for B sequences (ms, median of {data['runs']} runs' mean step)\n",
        f"{data['machine']}; load average {data['load_average_start']} at the start, {data['load_average_end']} at the end; "
        f"MaskWorkers with {data['processes']} process(es) beside the caller; {data['steps']} steps per sequence after a "
        f"warm-up of {data['warmup']} sequences, the heap frozen after it (gc.freeze(), as serving engines do after "
        "startup). Ratio: the mode's step time over serial's. Work: the time the workers mode's processes spent "
        "computing the masks of the rows sent as jobs, caller and worker together, over the serial walk's time (1: "
        "the pool computes what serial does; more: each process computing what its own caches lack).\n",
    ]
    for r in data["results"]:
        modes = [m for m in MODES if f"{m}_ms" in r["cells"][0]]
        work = ["workers work"] if "workers_work" in r["cells"][0] else []
        cols = ["B"] + [f"{m} ms" for m in modes] + [f"{m} ratio" for m in modes[1:]] + work
        rows = [
            [c["batch"]] + [c[f"{m}_ms"] for m in modes] + [c[f"{m}_ratio"] for m in modes[1:]] + ([c["workers_work"]] if work else [])
            for c in r["cells"]
        ]  # fmt: skip
        lines.append(f"\n## {r['grammar']} x {r['tokenizer']}, {r['caches']} mask caches (compile {r['compile_s']} s)\n\n")
        lines.append(markdown_table(cols, rows, "r" * len(cols)))
    return "".join(lines)


if __name__ == "__main__":
    main()
