"""Batch mask filling: the time of one decoding step's masks for B sequences, serial against MaskWorkers.

Each of B matchers walks its own text (real Go files of the Go sources for ``go``, seeded random
JSON documents for ``json``), all in lockstep: a step fills the B masks (timed), then every
matcher takes its text's next token (not timed). Every step is a new token for every sequence,
so what the caches hold is what decoding these texts would have cached, never one state asked
for again and again. Each (mode, B, run) starts from fresh mask caches: a new ``Masker`` in the
caller and a new ``MaskWorkers`` (its start, before the first step, is not timed). The grammar is
compiled eagerly once, as Table 1 does (``--lazy``: the tables fill as decoding goes, in every process).

Modes: ``serial`` (``gg.fill_next_token_bitmasks``), ``workers`` (the same with
``workers=MaskWorkers(processes)``: the caller computes a share of the rows, the workers the
rest), ``threads`` (a thread pool of ``processes + 1`` threads, to show what the GIL does).

    python -m eval.batch_scaling                           # go and json at llama3, B = 1..128
    python -m eval.batch_scaling --grammars json --batches 8,32 --runs 1 --steps 40
    python -m eval.batch_scaling --update-results          # rewrites eval/batch_scaling.json and .md
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from eval.paths import ROOT, markdown_table, tokenizer_file, write_results

RESULTS = ROOT / "eval" / "batch_scaling.json"
GO_SOURCES = Path("/usr/lib/go-1.19/src")  # Debian's golang-1.19-src
MODES = ("serial", "workers", "threads")
WORDS = ["id", "name", "value", "items", "price", "tags", "count", "user", "active", "data", "meta", "score"]


def go_texts(n: int, seed: int = 17) -> list[str]:
    """``n`` Go files of 4-40 KB from the Go sources, a seeded sample."""
    if not GO_SOURCES.is_dir():
        raise SystemExit(f"{GO_SOURCES} is missing: install Debian's golang-1.19-src (or run --grammars json)")
    files = sorted(p for p in GO_SOURCES.rglob("*.go") if 4000 <= p.stat().st_size <= 40000 and "testdata" not in p.parts)
    return [p.read_text(encoding="utf-8") for p in random.Random(seed).sample(files, 3 * n)]


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

    docs = []
    while len(docs) < n:
        doc = {f"{w}": value(1) for w in rng.sample(WORDS, 6)}
        docs.append(json.dumps(doc, indent=rng.choice([None, 2])))
    return docs


def setup(grammar: str, tokenizer: str, lazy: bool, need: int, steps: int, folder: Path):
    """The grammar's artifact (compiled once) and ``need`` token walks that it accepts: each a text's
    tokens up to a seeded point, of which the last ``steps`` are timed."""
    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(tokenizer_file(tokenizer))
    if grammar == "go":
        g = gg.Grammar.from_file(ROOT / "grammars" / "go.lark", postlexer=gg.Semicolons.go())
        texts = go_texts(need)
    else:
        g = gg.Grammar.from_file(ROOT / "grammars" / "json.lark")
        texts = json_texts(3 * need)
    t0 = time.perf_counter()
    compiled = gg.compile(g, vocab, eager=not lazy)
    compile_s = time.perf_counter() - t0
    artifact = folder / f"{grammar}.gg"
    compiled.save(artifact)
    hf = load_tokenizer(tokenizer_file(tokenizer))
    walks, rng = [], random.Random(5)
    for text in texts:
        ids = encode_exact(hf, text, vocab.token_bytes)
        if len(ids) < steps or gg.Matcher(compiled).accept_tokens(ids) != len(ids):
            continue
        start = rng.randrange(len(ids) - steps + 1)  # somewhere inside the text, not at its common beginning
        walks.append(ids[: start + steps])
        if len(walks) == need:
            return vocab, artifact, walks, compile_s
    raise SystemExit(f"only {len(walks)} of {need} {grammar} texts have {steps} tokens the grammar accepts")


def run_once(vocab, artifact: Path, warmup: list[list[int]], walks: list[list[int]], steps: int, mode: str, pool, threads) -> list[float]:
    """Seconds of each step's fill for ``len(walks)`` sequences over their last ``steps`` tokens:
    the grammar loaded afresh from ``artifact`` (in the workers too), one untimed pass over ``warmup`` first."""
    import numpy as np

    import greatgramma as gg

    compiled = gg.load(artifact, vocab=vocab)
    masker = gg.Masker(compiled)
    bitmask = np.zeros((len(walks), (vocab.vocab_size + 31) // 32), dtype=np.int32)
    times: list[float] = []
    for walked, timed in ((warmup, False), (walks, True)):
        matchers = [gg.Matcher(masker) for _ in walked]
        for m, ids in zip(matchers, walked):
            m.accept_tokens(ids[:-steps])  # untimed, and no mask asked for on the way
        texts = [ids[-steps:] for ids in walked]
        for step in range(steps):
            t = time.perf_counter()
            if threads is not None:
                for i, words in enumerate(threads.map(lambda m: m.next_token_mask(), matchers)):
                    bitmask[i] = words
            else:
                gg.fill_next_token_bitmasks(matchers, bitmask, workers=pool)
            if timed:
                times.append(time.perf_counter() - t)
            for i, (m, ids) in enumerate(zip(matchers, texts)):
                assert gg.bitmask_to_bool(bitmask[i], vocab.vocab_size)[ids[step]], f"step {step}: token {ids[step]} masked out"
                assert m.accept_token(ids[step]), f"step {step}: token {ids[step]} refused"
    return times


def measure(grammar: str, tokenizer: str, batches: list[int], steps: int, runs: int, processes: int, modes, lazy: bool) -> dict:
    from greatgramma.serving import MaskWorkers

    cells = []
    with tempfile.TemporaryDirectory() as folder, MaskWorkers(processes, min_batch=1) as pool, ThreadPoolExecutor(processes + 1) as threads:
        vocab, artifact, walks, compile_s = setup(grammar, tokenizer, lazy, 2 * max(batches), steps, Path(folder))
        for b in batches:
            cell = {"batch": b}
            for run in range(runs):
                for mode in modes:  # interleaved, so that a load change hits every mode alike
                    shift = run * b % len(walks)
                    order = walks[shift:] + walks[:shift]
                    times = run_once(
                        vocab, artifact, order[b : 2 * b], order[:b], steps, mode,
                        pool if mode == "workers" else None, threads if mode == "threads" else None,
                    )  # fmt: skip
                    cell.setdefault(mode, []).append(statistics.mean(times) * 1e3)
            for mode in modes:
                cell[f"{mode}_ms"] = round(statistics.median(cell.pop(mode)), 3)
            for mode in modes[1:]:
                cell[f"{mode}_ratio"] = round(cell[f"{mode}_ms"] / cell["serial_ms"], 3)
            print(json.dumps({"grammar": grammar, **cell}), flush=True)
            cells.append(cell)
    return {"grammar": grammar, "tokenizer": tokenizer, "compile_s": round(compile_s, 3), "cells": cells}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grammars", default="go,json")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--batches", default="1,2,4,8,16,32,64,128")
    ap.add_argument("--steps", type=int, default=60, help="tokens per sequence (steps timed per run)")
    ap.add_argument("--runs", type=int, default=3, help="runs per cell; the median of their mean step times")
    ap.add_argument("--processes", type=int, default=max(1, (os.cpu_count() or 2) - 1), help="MaskWorkers processes")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--lazy", action="store_true", help="compile lazily (tables filled while decoding)")
    ap.add_argument("--update-results", action="store_true")
    args = ap.parse_args(argv)
    batches = [int(b) for b in args.batches.split(",")]
    modes = tuple(m for m in MODES if m in args.modes.split(","))
    if modes[0] != "serial":
        raise SystemExit("--modes must include serial (the ratios are against it)")
    load = os.getloadavg()[0]
    results = [measure(g, args.tokenizer, batches, args.steps, args.runs, args.processes, modes, args.lazy) for g in args.grammars.split(",")]
    data = {
        "date": dt.date.today().isoformat(), "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
        "load_average_start": round(load, 2), "load_average_end": round(os.getloadavg()[0], 2),
        "steps": args.steps, "runs": args.runs, "processes": args.processes, "lazy": args.lazy, "results": results,
    }  # fmt: skip
    path = write_results(RESULTS, args.update_results, data, table(data))
    print(f"wrote {path}")


def table(data: dict) -> str:
    lines = [
        f"# Batch mask filling, {data['date']}: one step's masks for B sequences (ms, median of {data['runs']} runs' mean step)\n",
        f"{data['machine']}; load average {data['load_average_start']} at the start, {data['load_average_end']} at the end; "
        f"MaskWorkers with {data['processes']} process(es) beside the caller; {data['steps']} steps per sequence; "
        f"{'lazy' if data['lazy'] else 'eager'} compile. Ratio: the mode's step time over serial's.\n",
    ]
    for r in data["results"]:
        modes = [m for m in MODES if f"{m}_ms" in r["cells"][0]]
        cols = ["B"] + [f"{m} ms" for m in modes] + [f"{m} ratio" for m in modes[1:]]
        rows = [[c["batch"]] + [c[f"{m}_ms"] for m in modes] + [c[f"{m}_ratio"] for m in modes[1:]] for c in r["cells"]]
        lines.append(f"\n## {r['grammar']} x {r['tokenizer']} (compile {r['compile_s']} s)\n\n")
        lines.append(markdown_table(cols, rows, "r" * len(cols)))
    return "".join(lines)


if __name__ == "__main__":
    main()
