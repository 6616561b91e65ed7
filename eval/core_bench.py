"""Preprocessing seconds and per-token mask time for grammars x tokenizers (the paper's method).

Each cell runs in a fresh process (cold: no cache, nothing compiled before). It compiles the
grammar for the tokenizer, then walks every program of the language token by token, timing
each ``mask()`` call, the first (cold) ones included. Writes JSON and a Markdown table.

    python -m eval.core_bench                      # go, java, json x llama2, llama3, qwen3
    python -m eval.core_bench --grammars json --tokenizers llama2 --runs 1

Grammars (grammars/bench/), tokenizers (tokenizers/) and programs (eval/data/programs/) are the repository's.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from eval.paths import OUT, ROOT, bench_grammar, programs, tokenizer_file


def run_cell(grammar: str, tokenizer: str) -> dict:
    """Measure one cell in this process (call it in a fresh one)."""
    import resource

    import numpy as np

    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    tok_path = tokenizer_file(tokenizer)
    t0 = time.perf_counter()
    vocab = gg.Vocabulary.from_file(tok_path)
    grammar_obj = gg.Grammar.from_file(
        bench_grammar(grammar), indenter=gg.Indenter.python() if grammar == "python" else None
    )
    compiled = gg.compile(grammar_obj, vocab, eager=True)  # the paper's preprocessing: every table up front
    t1 = time.perf_counter()
    masker = gg.Masker(compiled)  # builds shared per-byte blocks: part of preprocessing
    t2 = time.perf_counter()
    preprocess = t2 - t0
    hf = load_tokenizer(tok_path)
    times = []
    for program in programs(grammar):
        ids = encode_exact(hf, program.read_text(encoding="utf-8"), vocab.token_bytes)
        state = masker.initial_state()
        for tok in ids:
            t = time.perf_counter()
            masker.mask(state)
            times.append(time.perf_counter() - t)
            state = masker.advance(state, tok)
        t = time.perf_counter()
        masker.mask(state)
        times.append(time.perf_counter() - t)
    ms = np.array(times) * 1000
    return {
        "grammar": grammar,
        "tokenizer": tokenizer,
        "vocab_size": vocab.vocab_size,
        "preprocess_s": preprocess,
        "stages_s": {**compiled.timings, "masker": t2 - t1},
        "masks": len(ms),
        "mask_mean_ms": float(ms.mean()),
        "mask_median_ms": float(np.median(ms)),
        "mask_p99_ms": float(np.percentile(ms, 99)),
        "mask_max_ms": float(ms.max()),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammars", nargs="+", default=["go", "java", "json"])
    ap.add_argument("--tokenizers", nargs="+", default=["llama2", "llama3", "qwen3"])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per cell; medians are reported")
    ap.add_argument("--out", default=str(OUT / "core_bench"), help="output path prefix")
    ap.add_argument("--cell", nargs=2, metavar=("GRAMMAR", "TOKENIZER"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.cell:
        print(json.dumps(run_cell(*args.cell)))
        return
    rows = []
    for g in args.grammars:
        for tk in args.tokenizers:
            runs = []
            for _ in range(args.runs):
                out = subprocess.run(
                    [sys.executable, "-m", "eval.core_bench", "--cell", g, tk],
                    cwd=ROOT, capture_output=True, text=True, check=True,
                )
                runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            keys = ["preprocess_s", "mask_mean_ms", "mask_median_ms", "mask_p99_ms", "mask_max_ms", "peak_rss_mib"]
            row = {k: runs[0][k] for k in ("grammar", "tokenizer", "vocab_size", "masks")}
            row.update({k: statistics.median(r[k] for r in runs) for k in keys})
            row["runs"] = len(runs)
            rows.append(row)
            print(
                f"{g:6} {tk:7} preprocess {row['preprocess_s']:6.2f}s  mask mean {row['mask_mean_ms']:6.2f}ms "
                f"median {row['mask_median_ms']:5.2f} p99 {row['mask_p99_ms']:6.2f} max {row['mask_max_ms']:6.2f} "
                f"rss {row['peak_rss_mib']:.0f}MiB",
                flush=True,
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "python": platform.python_version()}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    lines = [
        f"Date {meta['date']}, {meta['machine']}, Python {meta['python']}; medians of {args.runs} fresh processes.",
        "",
        "| grammar | tokenizer | preprocess s | mask mean ms | median | p99 | max | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['grammar']} | {r['tokenizer']} | {r['preprocess_s']:.2f} | {r['mask_mean_ms']:.2f} | "
            f"{r['mask_median_ms']:.2f} | {r['mask_p99_ms']:.2f} | {r['mask_max_ms']:.2f} | {r['peak_rss_mib']:.0f} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
