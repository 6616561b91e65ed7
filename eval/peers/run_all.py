"""Run every peer x grammar x tokenizer cell, each in a fresh process of that peer's own venv.

    bash eval/peers/setup.sh                       # once: the venvs under eval/.venvs/
    python -m eval.peers.run_all --quick           # SynCode on llama2 only, the other peers on all
    python -m eval.peers.run_all                   # everything (SynCode on 128K vocabularies: ~1 h a cell)
    python -m eval.peers.run_all --peers llguidance xgrammar --grammars go --tokenizers llama2

Runs in the project's python (it first writes the token cache with greatgramma's exact
tokenization, see encode_programs.py) and one measurement at a time. Each cell gets
--timeout seconds (default 600); the runner stops its own walk a little before that and reports
the masks measured so far with status "timeout"; a cell killed at the timeout, a crash or a
runner that printed no JSON is recorded verbatim as a result too. A MODIFIED variant of a grammar
(e.g. XGrammar/llguidance "stripped": priorities and !/? prefixes removed) is run only for a
grammar whose unmodified attempt was "unsupported" in the same run, and is labeled in "variant".

Writes eval/out/peers/results.json ({"meta", "rows"}; schema in eval/peers/README.md) after every
cell, and eval/out/peers/results.md. --resume keeps rows already there for the same cell.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
VENVS = ROOT / "eval" / ".venvs"
OUT = ROOT / "eval" / "out" / "peers"
PEERS = ("llguidance", "xgrammar", "syncode", "outlines")
GRAMMARS = ("go", "java", "json", "python")
TOKENIZERS = ("llama2", "llama3", "qwen3")
VARIANTS = {"xgrammar": ["stripped"], "llguidance": ["stripped"]}  # tried where the unmodified grammar is refused


def key(row: dict) -> tuple:
    return (row["tool"], row.get("variant"), row["grammar"], row["tokenizer"])


def run_cell(peer: str, grammar: str, tokenizer: str, variant: str | None, timeout: float) -> dict:
    py = VENVS / peer / "bin" / "python"
    base = {"tool": peer, "variant": variant, "grammar": grammar, "tokenizer": tokenizer, "version": None}
    if not py.exists():
        return {**base, "status": "error", "error": f"{py} missing: run bash eval/peers/setup.sh {peer}"}
    cmd = [str(py), str(HERE / f"run_{peer}.py"), "--grammar", grammar, "--tokenizer", tokenizer,
           "--budget", str(max(timeout * 0.9, timeout - 60))]
    if variant:
        cmd += ["--variant", variant]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        tail = (exc.stderr or b"")
        tail = tail.decode("utf-8", "replace") if isinstance(tail, bytes) else tail
        return {**base, "status": "timeout", "wall_s": time.perf_counter() - t0, "loadavg_1m": load,
                "error": f"killed after {timeout:.0f} s (no result printed); stderr tail: {tail[-400:]}"}
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if lines:
        try:
            row = json.loads(lines[-1])
            row.update({"wall_s": wall, "loadavg_1m": load, "returncode": p.returncode})
            return row
        except json.JSONDecodeError:
            pass
    return {**base, "status": "error", "wall_s": wall, "loadavg_1m": load, "returncode": p.returncode,
            "error": f"runner exited {p.returncode} without a result; stderr tail: {p.stderr[-450:]}"}


def fmt(row: dict) -> str:
    if row.get("status") in ("ok", "timeout") and row.get("mask_mean_ms") is not None:
        v = "" if row.get("variant") is None else f" [{row['variant']}]"
        part = " PARTIAL" if row.get("partial") else ""
        return (f"{row['tool']}{v} {row['grammar']} {row['tokenizer']}: {row['status']}{part} preprocess "
                f"{row['preprocess_s']:.2f}s mask mean {row['mask_mean_ms']:.2f}ms median {row['mask_median_ms']:.2f} "
                f"p99 {row['mask_p99_ms']:.2f} max {row['mask_max_ms']:.2f} violations {row['violations']} "
                f"eos_ok {row['eos_ok']} rss {row['peak_rss_mib']:.0f}MiB ({row.get('wall_s', 0):.0f}s)")
    v = "" if row.get("variant") is None else f" [{row['variant']}]"
    return (f"{row['tool']}{v} {row['grammar']} {row['tokenizer']}: {row.get('status')} "
            f"({row.get('wall_s', 0):.0f}s): {(row.get('error') or '')[:200]!r}")


def order(row: dict) -> tuple:
    def idx(seq, x):
        return seq.index(x) if x in seq else len(seq)

    return (idx(PEERS, row["tool"]), idx(GRAMMARS, row["grammar"]), idx(TOKENIZERS, row["tokenizer"]),
            row.get("variant") or "")


def write(rows: list[dict], meta: dict, out: Path) -> None:
    rows.sort(key=order)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {**meta, "updated": time.strftime("%Y-%m-%d %H:%M:%S")}
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = [
        f"Peers, {meta['date']}, {meta['machine']}, Python {meta['python']} (versions: eval/peers/versions.json).",
        "",
        "violations: refused program tokens (runs of consecutive refusals / programs with one); "
        "EOS ok: EOS allowed after every program; wall: the cell's seconds in all.",
        "",
        "| tool | variant | grammar | tokenizer | status | preprocess s | mask mean ms | median | p99 | max | "
        "violations | EOS ok | peak RSS MiB | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def n(x, f="{:.2f}"):
        return "" if x is None else f.format(x)

    def viol(r):
        if r.get("violations") is None:
            return ""
        return f"{r['violations']} ({r.get('violation_runs', '?')} / {r.get('violating_programs', '?')})"

    for r in rows:
        status = r.get("status", "?") + (" (partial)" if r.get("partial") else "")
        if r.get("status") not in ("ok",) and r.get("error"):
            status += ": " + r["error"].replace("\n", " ").replace("|", "\\|")[:160]
        lines.append(
            f"| {r['tool']} {r.get('version') or ''} | {r.get('variant') or ''} | {r['grammar']} | {r['tokenizer']} | "
            f"{status} | {n(r.get('preprocess_s'))} | {n(r.get('mask_mean_ms'))} | {n(r.get('mask_median_ms'))} | "
            f"{n(r.get('mask_p99_ms'))} | {n(r.get('mask_max_ms'))} | {viol(r)} | "
            f"{n(r.get('eos_ok'), '{}')} | {n(r.get('peak_rss_mib'), '{:.0f}')} | {n(r.get('wall_s'), '{:.0f}')} |"
        )
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peers", nargs="+", default=list(PEERS), choices=PEERS)
    ap.add_argument("--grammars", nargs="+", default=list(GRAMMARS), choices=GRAMMARS)
    ap.add_argument("--tokenizers", nargs="+", default=list(TOKENIZERS), choices=TOKENIZERS)
    ap.add_argument("--quick", action="store_true", help="SynCode only on llama2 (minutes); other peers on all")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per cell (default 600)")
    ap.add_argument("--no-variants", action="store_true", help="skip the modified ('stripped') grammar variants")
    ap.add_argument("--resume", action="store_true", help="keep rows already in the output for the same cell")
    ap.add_argument("--out", default=str(OUT / "results"), help="output path prefix (.json and .md)")
    args = ap.parse_args()

    cache = OUT / "tokens"
    if not all((cache / f"{t}.json").is_file() for t in args.tokenizers):
        subprocess.run([sys.executable, "-m", "eval.peers.encode_programs", "--out", str(cache)], cwd=ROOT, check=True)

    out = Path(args.out)
    rows: list[dict] = []
    if args.resume and out.with_suffix(".json").is_file():
        rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    done = {key(r) for r in rows}
    versions = HERE / "versions.json"
    meta = {
        "date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "quick": args.quick, "timeout_s": args.timeout,
        "versions": json.loads(versions.read_text()) if versions.is_file() else None,
    }
    for peer in args.peers:
        for g in args.grammars:
            for tk in args.tokenizers:
                if args.quick and peer == "syncode" and tk != "llama2":
                    continue
                todo = [None]
                for variant in todo:
                    k = (peer, variant, g, tk)
                    if k in done:
                        row = next(r for r in rows if key(r) == k)
                    else:
                        started = time.strftime("%Y-%m-%d %H:%M:%S")
                        row = {**run_cell(peer, g, tk, variant, args.timeout), "measured_at": started}
                        rows.append(row)
                        done.add(k)
                        write(rows, meta, out)
                        print(fmt(row), flush=True)
                    if variant is None and row.get("status") == "unsupported" and not args.no_variants:
                        todo.extend(VARIANTS.get(peer, []))
    write(rows, meta, out)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


if __name__ == "__main__":
    main()
