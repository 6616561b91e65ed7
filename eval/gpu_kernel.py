"""The bitmask kernel on a CUDA device: checked against the CPU path, then timed beside plain torch.

For each logits dtype and batch size B, at the Llama-3 and Qwen3 vocabulary widths, with random
bitmasks (half the tokens allowed) and random row subsets: the Triton kernel's output on the
device must equal plain torch ops on the CPU bit for bit; then each path is timed with CUDA
events (median of ``--repeats`` launches after warm-ups): the Triton kernel, the plain torch
path on the device, and the Triton kernel with the host-to-device copy of a pinned bitmask
(what ``GrammarLogitsProcessor`` pays each step). Needs a CUDA device and triton.

    python -m eval.gpu_kernel --out eval/gpu_kernel-DATE.json   # writes the .json and a .md beside it
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
from pathlib import Path

import numpy as np
import torch

from eval.paths import markdown_table
from greatgramma.kernels.torch import allocate_token_bitmask, apply_token_bitmask_inplace, triton_available

VOCABS = {"llama3": 128_256, "qwen3 (logits width)": 151_936}
BATCHES = (1, 8, 32, 128)
DTYPES = ("float32", "bfloat16")


def random_bitmask(rng: np.random.Generator, rows: int, vocab: int) -> np.ndarray:
    words = (vocab + 31) // 32
    return rng.integers(-(2**31), 2**31, size=(rows, words), dtype=np.int64).astype(np.int32)


def check(rng: np.random.Generator) -> int:
    """Triton on the device against plain torch on the CPU; returns the number of cases compared."""
    cases = 0
    for vocab in (*VOCABS.values(), 50, 33, 4097):
        for dtype in DTYPES:
            for batch in (1, 5, 64):
                logits = torch.from_numpy(rng.standard_normal((batch, vocab)).astype(np.float32)).to(getattr(torch, dtype))
                bitmask = random_bitmask(rng, batch, vocab)
                for rows in (None, sorted(rng.choice(batch, size=max(1, batch // 2), replace=False).tolist())):
                    want = logits.clone()
                    apply_token_bitmask_inplace(want, bitmask, rows, backend="torch")
                    got = logits.cuda()
                    apply_token_bitmask_inplace(got, torch.from_numpy(bitmask).cuda(), rows, backend="triton")
                    if not torch.equal(got.cpu(), want):
                        raise SystemExit(f"MISMATCH: vocab {vocab}, {dtype}, batch {batch}, rows {rows}")
                    cases += 1
    return cases


def time_ms(fn, repeats: int) -> float:
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def bench(rng: np.random.Generator, repeats: int) -> list[dict]:
    rows = []
    for name, vocab in VOCABS.items():
        for dtype in DTYPES:
            for batch in BATCHES:
                logits = torch.randn(batch, vocab, device="cuda", dtype=getattr(torch, dtype))
                device_mask = torch.from_numpy(random_bitmask(rng, batch, vocab)).cuda()
                host_mask = allocate_token_bitmask(batch, vocab)  # pinned
                host_mask.copy_(device_mask.cpu())
                rows.append({
                    "vocab": name, "width": vocab, "dtype": dtype, "batch": batch,
                    "triton_ms": time_ms(lambda: apply_token_bitmask_inplace(logits, device_mask, backend="triton"), repeats),
                    "torch_ms": time_ms(lambda: apply_token_bitmask_inplace(logits, device_mask, backend="torch"), repeats),
                    "triton_with_copy_ms": time_ms(lambda: apply_token_bitmask_inplace(logits, host_mask, backend="triton"), repeats),
                })  # fmt: skip
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the .json to write (a .md is written beside it)")
    ap.add_argument("--repeats", type=int, default=50)
    args = ap.parse_args()
    if not torch.cuda.is_available() or not triton_available():
        raise SystemExit("needs a CUDA device and triton")
    rng = np.random.default_rng(2026)
    cases = check(rng)
    rows = bench(rng, args.repeats)
    meta = {
        "date": dt.date.today().isoformat(),
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "checked_cases": cases,
        "repeats": args.repeats,
    }
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    head = ["vocab", "dtype", "B", "Triton ms", "torch ms", "Triton + host copy ms"]
    body = [
        [r["vocab"], r["dtype"], r["batch"], f"{r['triton_ms']:.4f}", f"{r['torch_ms']:.4f}", f"{r['triton_with_copy_ms']:.4f}"]
        for r in rows
    ]
    md = (
        f"# The bitmask kernel on {meta['device']} ({meta['date']})\n\n"
        f"`python -m eval.gpu_kernel` (torch {meta['torch']}, Python {meta['python']}). Correctness: the Triton "
        f"kernel's output equal to plain torch on the CPU in all {cases} cases (vocabulary widths, dtypes, batch "
        f"sizes, row subsets). Times: median of {args.repeats} launches (CUDA events), random bitmasks.\n\n"
        + markdown_table(head, body, "llrrrr")
    )
    args.out.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
