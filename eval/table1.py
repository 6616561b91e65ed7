"""The paper's Table 1 (arXiv 2502.05111), reproduced in one command, side by side with the peers.

For grammars go/java/python x tokenizers llama2/llama3/qwen3 it measures greatgramma the way
``eval/core_bench.py`` does (each run of a cell in a fresh process: preprocessing seconds cold;
every ``mask()`` call timed while walking eval/data/programs/<lang> token by token; peak
RSS), medians of ``--runs`` runs, and puts beside each cell the paper's own figures and the peers'
(SynCode, llguidance, XGrammar, Outlines; eval/peers/), with our speed-up ratio to each peer.

    python -m eval.table1                  # 9 cells x 3 runs; peers from the newest eval/peers/results-*.json
    python -m eval.table1 --update-results # ... written over the checked-in eval/RESULTS.md and its JSON/PNG
    python -m eval.table1 --peers          # ... and the peers measured in this same run (eval/peers/run_all.py;
                                           #     SynCode on the 128K vocabularies takes up to ~1 h a cell)
    python -m eval.table1 --peers --peers-quick        # same run, SynCode only on llama2 (run_all --quick)
    python -m eval.table1 --quick          # llama2 only, 1 run, peers from JSON
    python -m eval.table1 --grammars json --tokenizers llama2 --runs 1 --out /tmp/t1
    python -m eval.table1 --render eval/table1-DATE.json   # re-write the Markdown/PNG from a JSON, no measuring

Writes ``RESULTS.md``, ``table1-<date>.json`` and ``table1-<date>.png`` into ``--out`` (default
``eval/out/table1/``, untracked); ``--update-results`` writes them into ``eval/``, over the
checked-in results. Everything below the marker line
``<!-- table1: hand-written below, kept on regeneration -->`` of the existing RESULTS.md (the
target's, else eval/RESULTS.md) is kept. Without matplotlib no plot is drawn: RESULTS.md links
the PNG already there (the target's, or the one beside ``--render``'s JSON, copied), or says why
there is none.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from eval.paths import OUT, ROOT, SHARED
from eval.peers.run_all import PEERS as RUN_ALL_PEERS

EVAL = ROOT / "eval"  # the checked-in results (written with --update-results)
DEFAULT_OUT = OUT / "table1"
GRAMMARS = ("go", "java", "python")  # the paper's Table 1
EXTRA_GRAMMARS = ("json",)  # allowed for quick checks; the paper has no figures for it
TOKENIZERS = ("llama2", "llama3", "qwen3")
PEERS = ("syncode", "llguidance", "xgrammar", "outlines")  # column order (the issue's)
assert set(PEERS) == set(RUN_ALL_PEERS)
PEER_NAMES = {"syncode": "SynCode", "llguidance": "llguidance", "xgrammar": "XGrammar", "outlines": "Outlines"}
MARKER = "<!-- table1: hand-written below, kept on regeneration -->"
METRICS = ("preprocess_s", "mask_mean_ms", "mask_median_ms", "mask_p99_ms", "mask_max_ms", "peak_rss_mib")
TARGETS = {  # issue 4, on this 2-core machine, medians of at least 3 runs
    "preprocess_s": (5.0, "preprocessing <= 5 s"),
    "mask_mean_ms": (0.5, "mask mean <= 0.5 ms"),
    "mask_p99_ms": (5.0, "mask p99 <= 5 ms"),
    "peak_rss_mib": (4096.0, "peak memory <= 4 GiB"),
}
MIN_RUNS = 3

# ---------------------------------------------------------------------------------------------
# The paper's Table 1: arXiv 2502.05111v2, "Flexible and Efficient Grammar-Constrained Decoding",
# Tab. 1 (its own machine, Python implementation). Copied from the text in
# ../shared/seeds/002_c15cd91ff9d71b89.txt (optional: checked against it at run time when that file is there).
# Per cell: (preprocessing s, per-token overhead ms) for Outlines, SynCode, GreatGramma.
# SynCode's Go overhead is "X" in the paper (it masked valid tokens): None here.
PAPER_SOURCE = "arXiv 2502.05111v2, Table 1 (text: ../shared/seeds/002_c15cd91ff9d71b89.txt)"
PAPER_SEED = SHARED / "seeds" / "002_c15cd91ff9d71b89.txt"
PAPER_MODELS = {"llama2": ("Llama", 32000), "llama3": ("Llama-3", 128256), "qwen3": ("Qwen-2", 151665)}
PAPER = {
    ("go", "llama2"): {"outlines": (2.51, 3213.05), "syncode": (556.10, None), "greatgramma": (24.76, 5.08)},
    ("java", "llama2"): {"outlines": (2.49, 3450.67), "syncode": (579.48, 46.71), "greatgramma": (33.79, 6.29)},
    ("python", "llama2"): {"outlines": (4.89, 3245.10), "syncode": (768.33, 62.40), "greatgramma": (35.40, 7.11)},
    ("go", "llama3"): {"outlines": (2.43, 12974.43), "syncode": (2212.95, None), "greatgramma": (106.07, 21.11)},
    ("java", "llama3"): {"outlines": (2.46, 13725.58), "syncode": (2294.26, 49.03), "greatgramma": (166.87, 24.69)},
    ("python", "llama3"): {"outlines": (4.86, 13167.83), "syncode": (2789.31, 71.49), "greatgramma": (170.71, 30.17)},
    ("go", "qwen3"): {"outlines": (2.38, 14756.47), "syncode": (2635.00, None), "greatgramma": (132.27, 21.32)},
    ("java", "qwen3"): {"outlines": (2.39, 15235.25), "syncode": (2734.27, 50.32), "greatgramma": (260.80, 25.12)},
    ("python", "qwen3"): {"outlines": (4.81, 15146.38), "syncode": (3268.09, 70.87), "greatgramma": (155.32, 32.30)},
}


def check_paper() -> str:
    """Check the built-in copy against the paper's text, when it is there. Returns a one-line verdict."""
    if not PAPER_SEED.is_file():
        return f"built-in copy (not checked: the paper's text, {PAPER_SEED}, is optional and absent)"
    text = PAPER_SEED.read_text(encoding="utf-8")
    bad = []
    for (g, tk), p in PAPER.items():
        vals = [p["outlines"][0], p["syncode"][0], p["greatgramma"][0], p["outlines"][1], p["syncode"][1],
                p["greatgramma"][1]]
        cells = " | ".join("X" if v is None else f"{v:,.2f}" for v in vals)
        if f"| {cells} |" not in text:
            bad.append(f"{g}/{tk}")
    if bad:
        print(f"WARNING: the built-in paper figures do not match {PAPER_SEED} for {', '.join(bad)}", file=sys.stderr)
        return f"built-in copy; MISMATCH with {PAPER_SEED.name} for {', '.join(bad)}"
    return f"built-in copy, checked against {PAPER_SEED.name} ({len(PAPER)} rows match)"


# ---------------------------------------------------------------------------------------------
# Environment


def machine() -> dict:
    info = {"platform": platform.platform(), "cpus": os.cpu_count(), "cpu_model": None, "ram_gib": None}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                info["ram_gib"] = round(int(line.split()[1]) / 1024**2, 1)
                break
    except OSError:
        pass
    return info


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    v = {"python": platform.python_version()}
    for pkg in ("greatgramma", "numpy", "torch", "lark", "tokenizers", "matplotlib"):
        try:
            v[pkg] = version(pkg)
        except PackageNotFoundError:
            v[pkg] = None
    git = {}
    try:
        git["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                                       check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, check=True).stdout.splitlines()
        git["modified_files"] = len(dirty)
    except (OSError, subprocess.CalledProcessError):
        pass
    v["git"] = git
    return v


# ---------------------------------------------------------------------------------------------
# Ours: eval/core_bench.py's per-cell measurement, one fresh process per run


def measure_ours(cells: list[tuple[str, str]], runs: int, timeout: float) -> list[dict]:
    """Each cell ``runs`` times in fresh processes, medians per metric. The runs are interleaved
    (one pass over all cells, then the next), so a slow spell of a shared machine does not fall
    on one cell's runs together."""
    rows = [{"grammar": g, "tokenizer": tk, "status": "ok", "error": None, "runs": []} for g, tk in cells]
    for i in range(runs):
        for row in rows:
            if row["status"] == "ok":
                run_once(row, i, timeout)
    for row in rows:
        if row["runs"]:
            first = row["runs"][0]
            row.update({k: first.get(k) for k in ("vocab_size", "masks")})
            for k in METRICS:
                row[k] = statistics.median(r[k] for r in row["runs"])
            for k in ("preprocess_s", "mask_mean_ms"):
                row[f"{k}_range"] = [min(r[k] for r in row["runs"]), max(r[k] for r in row["runs"])]
        if row["status"] != "ok":  # a failed run makes the cell a failure, whatever the other runs gave
            for k in METRICS:
                row.setdefault(k, None)
    return rows


def run_once(row: dict, i: int, timeout: float) -> None:
    """One fresh-process run of a cell (eval/core_bench.py), added to ``row``; a failure marks the row."""
    load = os.getloadavg()[0]
    cmd = [sys.executable, "-m", "eval.core_bench", "--cell", row["grammar"], row["tokenizer"]]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        row.update(status="timeout", error=f"run {i + 1}: killed after {timeout:.0f} s")
        return
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        err = p.stderr.strip().splitlines()
        row.update(status="error", error=f"run {i + 1}: exit {p.returncode}: {err[-1] if err else '(no stderr)'}",
                   traceback_tail=p.stderr[-1500:])
        return
    r = json.loads(lines[-1])
    r.update(wall_s=wall, loadavg_1m=load, started_at=time.strftime("%H:%M:%S"))
    row["runs"].append(r)


# ---------------------------------------------------------------------------------------------
# Peers: measured now through eval/peers/run_all.py, or read from a checked-in results JSON


def newest_peers_json() -> Path | None:
    files = sorted((EVAL / "peers").glob("results-*.json"))
    return files[-1] if files else None


def peers_from_json(path: Path) -> tuple[list[dict], dict]:
    data = json.loads(path.read_text())
    meta = data.get("meta", {})
    rows = data.get("rows", [])
    dates = sorted({r.get("date") for r in rows if r.get("date")})
    try:
        shown = str(path.resolve().relative_to(ROOT))
    except ValueError:
        shown = str(path)
    source = {
        "mode": "json", "same_run": False, "file": shown, "run_date": meta.get("date"), "row_dates": dates,
        "updated": meta.get("updated"), "quick": meta.get("quick"), "timeout_s": meta.get("timeout_s"),
        "machine": meta.get("machine"), "cpus": meta.get("cpus"), "note": meta.get("note"),
        "versions": meta.get("versions"),
        "label": f"from {shown} (run of {meta.get('date') or '?'}"
                 + (f", cells dated {', '.join(dates)}" if dates and dates != [meta.get("date")] else "")
                 + "): NOT measured in the same run as greatgramma",
    }
    return rows, source


def peers_run_now(args, grammars, tokenizers, date: str) -> tuple[list[dict], dict]:
    prefix = Path(args.peers_out) if args.peers_out else OUT / "peers" / f"table1-{date}"
    cmd = [sys.executable, "-m", "eval.peers.run_all", "--peers", *args.peer_tools, "--grammars", *grammars,
           "--tokenizers", *tokenizers, "--timeout", str(args.peer_timeout), "--out", str(prefix)]
    if args.peers_quick:
        cmd.append("--quick")
    if args.resume:
        cmd.append("--resume")
    print("peers:", shlex.join(cmd), flush=True)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    p = subprocess.run(cmd, cwd=ROOT)
    res = prefix.with_suffix(".json")
    rows, source = peers_from_json(res) if res.is_file() else ([], {"file": str(res)})
    source.update({
        "mode": "same run", "same_run": True, "command": shlex.join(cmd), "started": started,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S"), "returncode": p.returncode,
        "label": f"measured in this same run ({started}; eval/peers/run_all.py"
                 + (", --quick: SynCode only on llama2" if args.peers_quick else "") + ")",
    })
    if args.resume:
        times = sorted(r["measured_at"] for r in rows if r.get("measured_at"))
        untimed = sum(1 for r in rows if not r.get("measured_at"))
        source["label"] += (
            f"; resumed (--resume): cells already in {res.name} were kept from the earlier invocation of the "
            f"same command on this machine" + (f", timed rows measured {times[0]} to {times[-1]}" if times else "")
            + (f", {untimed} rows from before per-row times were recorded (same date)" if untimed else "")
        )
    if p.returncode != 0:
        source["label"] += f"; run_all exited {p.returncode}"
    return rows, source


def has_figures(r: dict | None) -> bool:
    return bool(r) and r.get("mask_mean_ms") is not None and r.get("preprocess_s") is not None


def peer_cell(rows: list[dict], tool: str, grammar: str, tokenizer: str, ours: dict) -> dict:
    """The peer's result for one cell: the unmodified grammar's row, a modified variant's where the
    unmodified one was refused, and our speed-up (peer / ours) on the row whose figures are shown."""
    mine = [r for r in rows
            if r.get("tool") == tool and r.get("grammar") == grammar and r.get("tokenizer") == tokenizer]
    base = next((r for r in mine if r.get("variant") is None), None)
    variants = [r for r in mine if r.get("variant") is not None]
    cell: dict = {"tool": tool, "version": (base or (variants[0] if variants else {})).get("version"),
                  "status": base.get("status") if base else "not run", "error": base.get("error") if base else None,
                  "row": base, "variant_rows": variants, "shown": None, "comparable": False, "ratio": None}
    cell["other_run"] = bool(base or variants) and (base or variants[0]).get("measured_in") not in (None, "this run")
    if base and base.get("status") == "ok" and has_figures(base):
        cell.update(shown=base, comparable=True)
    elif base and base.get("status") == "timeout" and base.get("partial") and has_figures(base):
        cell.update(shown=base, caveat="partial: the walk stopped at the time budget")
    else:
        ok_variant = next((r for r in variants if r.get("status") == "ok" and has_figures(r)), None)
        if ok_variant:
            cell.update(shown=ok_variant, caveat=f"modified grammar ({ok_variant['variant']})")
    shown = cell["shown"]
    if shown and ours.get("status") == "ok":
        cell["ratio"] = {k: (shown[k] / ours[k] if shown.get(k) is not None and ours.get(k) else None)
                         for k in ("preprocess_s", "mask_mean_ms", "mask_median_ms", "mask_p99_ms")}
    if shown and ours.get("masks") is not None and shown.get("masks_planned") not in (None, ours["masks"]):
        cell["masks_differ"] = f"peer planned {shown['masks_planned']} masks, greatgramma made {ours['masks']}"
    return cell


# ---------------------------------------------------------------------------------------------
# Formatting


def num(x, unit: str = "") -> str:
    if x is None:
        return "-"
    s = f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.1f}" if abs(x) >= 100 else f"{x:.2f}"
    return s + unit


def ratio(x) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}x" if x >= 10 else f"{x:.1f}x" if x >= 1 else f"{x:.2f}x"


def one_line(s: str | None, n: int = 90) -> str:
    s = re.sub(r"\s+", " ", s or "").strip()
    s = s.replace("|", "\\|").replace("`", "'")
    return s if len(s) <= n else s[: n - 3] + "..."


def model_label(tk: str, vocab: int | None) -> str:
    name = {"llama2": "Llama-2", "llama3": "Llama-3", "qwen3": "Qwen3"}.get(tk, tk)
    vocab = vocab or {"llama2": 32000, "llama3": 128256}.get(tk)
    return f"{name} ({vocab:,})" if vocab else name


def target_verdict(row: dict, key: str) -> str:
    limit = TARGETS[key][0]
    v = row.get(key)
    if v is None:
        return "MISS (no figure)"
    return "met" if v <= limit else "MISS"


class Failures:
    """Verbatim peer failures, numbered once per distinct (tool, variant, message)."""

    def __init__(self) -> None:
        self.items: list[dict] = []

    def ref(self, row: dict) -> str:
        msg = row.get("error") or f"status {row.get('status')}"
        key = (row.get("tool"), row.get("variant"), msg)
        for i, it in enumerate(self.items):
            if it["key"] == key:
                it["cells"].append(f"{row['grammar']}/{row['tokenizer']}")
                return f"F{i + 1}"
        self.items.append({"key": key, "row": row, "cells": [f"{row['grammar']}/{row['tokenizer']}"]})
        return f"F{len(self.items)}"


def peer_text(cell: dict, fails: Failures, same_run: bool) -> tuple[str, str]:
    """(figures-or-failure, ratio) Markdown for one peer cell. In a same-run table, a cell filled
    from an earlier run's JSON says so, and its ratio is in parentheses."""
    base = cell["row"]
    any_row = base or (cell["variant_rows"][0] if cell["variant_rows"] else None)
    if any_row is None:
        return "not run", "-"
    parts = []
    earlier = same_run and cell.get("other_run")
    if earlier:
        parts.append(f"[earlier run, {any_row.get('date') or '?'}]")
    if base is not None and base.get("status") != "ok" and not base.get("partial"):
        ref = fails.ref(base)
        status = base.get("status")
        label = {"unsupported": "refused", "error": "error", "timeout": "timeout"}.get(status, status)
        if base.get("status") == "unsupported" and has_figures(base):
            label = "refused silently"
        parts.append(f"{label} [{ref}]: {one_line(base.get('error'), 60)}")
    shown = cell["shown"]
    if shown:
        fig = (f"{num(shown['preprocess_s'])} s / {num(shown['mask_mean_ms'])} ms "
               f"({num(shown.get('mask_median_ms'))}, {num(shown.get('mask_p99_ms'))})")
        v = shown.get("violations")
        if v:
            fig += f", refuses {v} program tokens"
        if shown.get("eos_ok") is False:
            fig += ", refuses EOS"
        if shown.get("variant"):
            fig = f"{shown['variant']} grammar: {fig}"
        if shown.get("partial"):
            ref = fails.ref(shown)
            fig = f"PARTIAL [{ref}]: {fig}"
        parts.append(fig)
    else:
        for r in cell["variant_rows"]:
            ref = fails.ref(r)
            parts.append(f"{r['variant']}: {r.get('status')} [{ref}]")
    rt = cell.get("ratio")
    rtext = "-"
    if rt:
        rtext = f"{ratio(rt['preprocess_s'])} / {ratio(rt['mask_mean_ms'])}"
        why = [w for w in ("partial" if shown.get("partial") else shown.get("variant"),
                           "earlier run" if earlier else None) if w]
        if why:
            rtext = f"({rtext}, {', '.join(why)})"
    return " ".join(parts[:1]) + " " + "; ".join(parts[1:]) if earlier else "; ".join(parts), rtext


def venv_deps(source: dict, peer: str) -> str:
    """' (transformers X, torch Y)' from the peer run's recorded venv versions, when there."""
    pk = ((((source.get("versions") or {}).get("venvs") or {}).get(peer) or {}).get("packages") or {})
    deps = [f"{k} {pk[k]}" for k in ("transformers", "torch", "tokenizers") if pk.get(k)]
    return f" ({', '.join(deps)})" if deps else ""


def render_md(data: dict, plot_name: str | None, keep: str) -> str:
    meta = data["meta"]
    m, v, ps = meta["machine"], meta["versions"], meta["peers_source"]
    cells = data["cells"]
    peers = [p for p in PEERS if any(c["peers"].get(p) for c in cells)]
    peer_versions = {}
    for c in cells:
        for p, pc in c["peers"].items():
            if pc.get("version"):
                peer_versions.setdefault(p, pc["version"])
    out = [
        "# Benchmark results: the paper's Table 1, side by side with the peers",
        "",
        f"Generated by `{meta['command']}` on {meta['date']} (finished {meta['finished']}); "
        "the part above the hand-written section is rewritten by that command.",
        "",
        f"- **Machine**: {m['platform']}, {m['cpus']} CPUs ({m.get('cpu_model') or '?'}), "
        f"{m.get('ram_gib') or '?'} GiB RAM; 1-minute load average {meta['loadavg_start']:.2f} at the start, "
        f"{meta['loadavg_end']:.2f} at the end (the machine is shared; each run's load is in the JSON).",
        f"- **Versions**: Python {v['python']}, greatgramma {v.get('greatgramma')} (commit "
        f"{(v.get('git') or {}).get('commit', '?')[:12]}, {(v.get('git') or {}).get('modified_files', '?')} tracked "
        f"files modified), numpy {v.get('numpy')}, torch {v.get('torch') or 'not installed'}, lark {v.get('lark')}, "
        f"matplotlib {v.get('matplotlib') or 'not installed'}.",
        "- **Peers**: " + (", ".join(f"{PEER_NAMES[p]} {peer_versions.get(p, '?')}{venv_deps(ps, p)}" for p in peers)
                           or "none")
        + f"; each in its own virtual environment (`eval/peers/`). Peer figures: **{ps.get('label', 'none')}**.",
        f"- **greatgramma**: `eval/core_bench.py`'s cell measurement, each run a fresh process: preprocessing "
        f"cold (tokenizer load + compile, no cache on disk), then every `mask()` call timed while walking "
        f"`eval/data/programs/<lang>` token by token (the first, cold calls included, one more after the "
        f"last token of each program), peak RSS of the process. **Medians of {meta['runs']} run(s)** per cell.",
        f"- **Paper**: {PAPER_SOURCE}; its own machine; per-token overhead is a mean. Its tokenizer rows are "
        "Llama (32,000), Llama-3 (128,256), Qwen-2 (151,665); the Qwen row stands beside our Qwen3 tokenizer. "
        f"Figures: {meta['paper_check']}.",
        "",
        "## Table 1",
        "",
        "Times: preprocessing s / mask mean ms (median, p99 ms). Peer cells: their figures, or the failure "
        "(verbatim below, by number). `ours x`: the peer's time divided by ours, preprocessing / mask mean "
        "(above 1: we are faster); in parentheses where the peer ran a modified grammar or stopped part way. "
        + (("Ratios are against peers measured in this same run"
            + (", except in cells marked `[earlier run]` (taken from "
               f"{(ps.get('filled_from') or {}).get('file')}; ratio in parentheses)." if ps.get("filled_cells") else "."))
           if ps.get("same_run") else
           f"Ratios are against peer figures from another run ({ps.get('file')}, {ps.get('run_date')}), "
           "not the same run."),
        "",
    ]
    head = ["model (\\|V\\|)", "grammar", "ours: preprocess s", "mask mean ms", "median", "p99",
            "paper: preprocess s", "paper: mean ms", "ours vs paper"]
    for p in peers:
        head += [f"{PEER_NAMES[p]} {peer_versions.get(p, '')}".strip(), "ours x"]
    out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    fails = Failures()
    prev_tk = None
    for c in cells:
        o = c["ours"]
        paper = c.get("paper") or {}
        pg = paper.get("greatgramma")
        model = model_label(c["tokenizer"], o.get("vocab_size")) if c["tokenizer"] != prev_tk else ""
        prev_tk = c["tokenizer"]
        if o["status"] == "ok":
            mine = [num(o["preprocess_s"]), num(o["mask_mean_ms"]), num(o["mask_median_ms"]), num(o["mask_p99_ms"])]
        else:
            mine = [f"{o['status']}: {one_line(o.get('error'), 80)}", "-", "-", "-"]
        vs = "-"
        if pg and o["status"] == "ok":
            vs = f"{ratio(pg[0] / o['preprocess_s'])} / {ratio(pg[1] / o['mask_mean_ms'])}"
        row = [model, c["grammar"], *mine, num(pg[0]) if pg else "-", num(pg[1]) if pg else "-", vs]
        for p in peers:
            pc = c["peers"].get(p)
            row += list(peer_text(pc, fails, bool(ps.get("same_run")))) if pc else ["not run", "-"]
        out.append("| " + " | ".join(row) + " |")

    out += ["", "## greatgramma per cell, against the issue's targets", "",
            f"Targets (issue 4; this machine, medians of at least {MIN_RUNS} runs): "
            + ", ".join(t[1] for t in TARGETS.values()) + ".", "",
            "| model | grammar | runs | preprocess s (min-max) | mean ms (min-max) | median | p99 | max | "
            "peak RSS MiB | masks | preprocess | mean | p99 | memory |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        o = c["ours"]
        if o["status"] != "ok":
            out.append(f"| {c['tokenizer']} | {c['grammar']} | {len(o['runs'])} | {o['status']}: "
                       f"{one_line(o.get('error'), 200)} | | | | | | | MISS | MISS | MISS | MISS |")
            continue
        pr, mr = o["preprocess_s_range"], o["mask_mean_ms_range"]
        out.append(
            f"| {c['tokenizer']} | {c['grammar']} | {len(o['runs'])} | "
            f"{num(o['preprocess_s'])} ({num(pr[0])}-{num(pr[1])}) | "
            f"{num(o['mask_mean_ms'])} ({num(mr[0])}-{num(mr[1])}) | {num(o['mask_median_ms'])} | "
            f"{num(o['mask_p99_ms'])} | {num(o['mask_max_ms'])} | {o['peak_rss_mib']:.0f} | {o.get('masks')} | "
            + " | ".join(target_verdict(o, k) for k in TARGETS) + " |")
    t = data["targets"]
    out += ["", "Targets:", ""]
    for k, (limit, label) in TARGETS.items():
        tk = t[k]
        out.append(f"- {label}: **{'met' if tk['met'] else 'MISS'}** (met in {tk['cells_met']} of {tk['cells']} cells)"
                   + (f" (missed: {', '.join(tk['missed'])})" if tk["missed"] else "") + ".")
    out.append(f"- medians of at least {MIN_RUNS} runs: **{'met' if t['runs']['met'] else 'MISS'}** "
               f"({meta['runs']} run(s) per cell).")
    out.append(f"- all 9 cells of the paper's table measured: **{'met' if t['paper_cells']['met'] else 'MISS'}** "
               f"({t['paper_cells']['detail']}).")
    out.append(f"- ratio to each peer measured in the same run: **{'met' if t['same_run_peers']['met'] else 'MISS'}** "
               f"({t['same_run_peers']['detail']}).")
    if any(not tk["met"] for tk in (t[k] for k in TARGETS)):
        out.append("- A missed target's profile: see the hand-written notes below.")

    out += ["", "## The paper's Table 1, as published", "",
            f"{PAPER_SOURCE}. Its machine, its Python implementation (GreatGramma), SynCode and Outlines "
            "of early 2025; "
            "per-token overhead is the mean over the walk of its 5 programs a grammar (ours are other programs: "
            "`eval/data/programs`). X: SynCode masked valid tokens (no figure).", "",
            "| model | \\|V\\| | grammar | Outlines s | SynCode s | GreatGramma s | Outlines ms | SynCode ms "
            "| GreatGramma ms |",
            "|---|---|---|---|---|---|---|---|---|"]
    for tk in TOKENIZERS:
        for g in GRAMMARS:
            p = PAPER[(g, tk)]
            name, size = PAPER_MODELS[tk]
            vals = [p["outlines"][0], p["syncode"][0], p["greatgramma"][0], p["outlines"][1], p["syncode"][1],
                    p["greatgramma"][1]]
            out.append(f"| {name} | {size:,} | {g.capitalize()} | "
                       + " | ".join("X" if x is None else f"{x:,.2f}" for x in vals) + " |")

    if fails.items:
        out += ["", "## Peer failures, verbatim", "",
                "As each peer's runner recorded them (its message, cut at ~500 characters, prefixed with the stage).",
                ""]
        for i, it in enumerate(fails.items):
            r = it["row"]
            what = f"{PEER_NAMES.get(r['tool'], r['tool'])} {r.get('version') or ''}".strip()
            if r.get("variant"):
                what += f", {r['variant']} grammar"
            out += [f"**F{i + 1}** {what}, status `{r.get('status')}`, cells {', '.join(it['cells'])}:", "",
                    "```", (r.get("error") or "").rstrip(), "```", ""]
    notes = []
    for c in cells:
        for p, pc in c["peers"].items():
            if pc.get("masks_differ"):
                notes.append(f"{PEER_NAMES[p]} {c['grammar']}/{c['tokenizer']}: {pc['masks_differ']}")
    if notes:
        out += ["", "Mask counts that differ from ours (different token sequences?): " + "; ".join(notes) + "."]
    if ps.get("note"):
        out += ["", f"Peers results note (`meta.note`): {ps['note']}"]
    out += ["", "## Files", "",
            f"- `{meta['json_name']}`: everything above and more (every run of every cell, every peer row, "
            "provenance, versions)."]
    if plot_name:
        out += [f"- `{plot_name}`: the plot below (log scale).", "", f"![Table 1, log scale]({plot_name})"]
    else:
        out += ["- no plot: matplotlib is not installed (`pip install -e '.[eval]'`), and no plot drawn earlier "
                "for these figures was found."]
    out += ["", MARKER, keep.rstrip("\n") if keep.strip() else DEFAULT_NOTES.rstrip("\n"), ""]
    return "\n".join(out)


DEFAULT_NOTES = """
## Notes (hand-written)

Everything below the marker line above is kept when `python -m eval.table1` rewrites this file: put
commentary and the profiles that explain missed targets here.

- Paper figures are Table 1 of arXiv 2502.05111 (its own machine; Qwen-2 there, Qwen3's identical
  byte-level vocabulary here).
- Peers: method, per-peer API, what each supports and their surprises are in `eval/peers/README.md`.
  Outlines' mean is dominated by its first call (a `torch.compile` of the bitmask application, 16-21 s
  cold); its median is the steady state. A peer that refuses program tokens (llguidance, Outlines,
  SynCode) is out of step with the program after a refusal, so its times are not for the same work.
"""


# ---------------------------------------------------------------------------------------------
# Plot


def plot(data: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.ticker import FuncFormatter, NullFormatter
    except ImportError:
        print("matplotlib is not installed: no plot (pip install -e '.[eval]')", file=sys.stderr)
        return False
    cells = data["cells"]
    ps = data["meta"]["peers_source"]
    xs = list(range(len(cells)))
    labels = [f"{c['grammar']}\n{c['tokenizer']}" for c in cells]
    series = [("greatgramma (this run)", "o", "C0"), ("greatgramma (paper)", "s", "0.35")]
    series += [(PEER_NAMES[p], mk, col) for p, mk, col in
               zip(PEERS, ("^", "v", "D", "P"), ("C1", "C2", "C3", "C4"))]
    n = len(series)
    used: set[int] = set()
    fig, axes = plt.subplots(2, 1, figsize=(max(9, 1.3 * len(cells) + 3), 9.5), sharex=True)
    for ax, key, pidx, title, limit in (
        (axes[0], "preprocess_s", 0, "preprocessing (s, cold)", TARGETS["preprocess_s"][0]),
        (axes[1], "mask_mean_ms", 1, "mask time per token, mean (ms)", TARGETS["mask_mean_ms"][0]),
    ):
        for si, (name, mk, col) in enumerate(series):
            off = (si - (n - 1) / 2) * 0.09
            for x, c in zip(xs, cells):
                val, hollow = None, False
                if si == 0:
                    val = c["ours"].get(key) if c["ours"]["status"] == "ok" else None
                elif si == 1:
                    pg = (c.get("paper") or {}).get("greatgramma")
                    val = pg[pidx] if pg else None
                else:
                    pc = c["peers"].get(PEERS[si - 2])
                    if pc and pc.get("shown"):
                        val = pc["shown"].get(key)
                        hollow = not pc["comparable"] or (ps.get("same_run") and pc.get("other_run"))
                if val is None or val <= 0:
                    continue
                used.add(si)
                ax.plot(x + off, val, mk, color=col, markersize=7,
                        markerfacecolor="none" if hollow else col, markeredgewidth=1.5)
        ax.axhline(limit, color="C0", linestyle="--", linewidth=0.8)
        ax.text(0.005, limit, f"target {limit:g}", va="bottom", ha="left", fontsize=8, color="C0",
                transform=ax.get_yaxis_transform())
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(-0.5, len(cells) - 0.5)
        ax.set_title(title)
        ax.grid(True, which="major", axis="y", alpha=0.3)
        for b in range(1, len(cells)):
            if cells[b]["tokenizer"] != cells[b - 1]["tokenizer"]:
                ax.axvline(b - 0.5, color="0.8", linewidth=0.8)
    axes[1].set_xticks(xs)
    axes[1].set_xticklabels(labels)
    handles = [Line2D([], [], marker=mk, color=col, linestyle="none", markersize=7, label=name)
               for si, (name, mk, col) in enumerate(series) if si in used]
    handles.append(Line2D([], [], marker="o", color="0.3", markerfacecolor="none", linestyle="none",
                          label="hollow: modified grammar, partial run"
                                + (", or from an earlier run" if ps.get("same_run") else "")))
    fig.legend(handles=handles, fontsize=8, ncol=4, loc="lower center")
    fig.suptitle(f"Table 1 (arXiv 2502.05111) reproduced, {data['meta']['date']}, "
                 f"{data['meta']['machine']['cpus']} CPUs, medians of {data['meta']['runs']} run(s)\n"
                 f"peers: {'same run' if ps.get('same_run') else 'from ' + str(ps.get('file')) + ' (another run)'}",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# ---------------------------------------------------------------------------------------------


def targets(cells: list[dict], runs: int, peers_source: dict, grammars, tokenizers) -> dict:
    t = {}
    for k in TARGETS:
        missed = [f"{c['grammar']}/{c['tokenizer']}" for c in cells if target_verdict(c["ours"], k) != "met"]
        t[k] = {"limit": TARGETS[k][0], "cells": len(cells), "cells_met": len(cells) - len(missed),
                "missed": missed, "met": not missed and bool(cells)}
    t["runs"] = {"met": runs >= MIN_RUNS, "runs": runs}
    want = {(g, tk) for g in GRAMMARS for tk in TOKENIZERS}
    have = {(c["grammar"], c["tokenizer"]) for c in cells if c["ours"]["status"] == "ok"}
    t["paper_cells"] = {"met": want <= have, "detail": f"{len(want & have)} of 9 measured ok"}
    same = bool(peers_source.get("same_run"))
    filled = peers_source.get("filled_cells") or []
    if same:
        detail = "peers measured in this run" + (
            f", except {len(filled)} cells taken from an earlier run ({', '.join(filled)})" if filled else "")
    else:
        detail = f"peer figures are from {peers_source.get('file') or 'nowhere'}, another run; use --peers"
    t["same_run_peers"] = {"met": same and not filled, "detail": detail}
    return t


def build(ours_rows: list[dict], peer_rows: list[dict], peers_source: dict) -> list[dict]:
    cells = []
    for o in ours_rows:
        g, tk = o["grammar"], o["tokenizer"]
        paper = PAPER.get((g, tk))
        cells.append({
            "grammar": g, "tokenizer": tk, "ours": o,
            "paper": {k: list(v) for k, v in paper.items()} if paper else None,
            "paper_model": PAPER_MODELS.get(tk) if paper else None,
            "peers": {p: peer_cell(peer_rows, p, g, tk, o) for p in PEERS
                      if any(r.get("tool") == p for r in peer_rows)},
        })
    return cells


def existing_notes(target: Path) -> str:
    for f in (target, EVAL / "RESULTS.md"):
        if f.is_file():
            text = f.read_text(encoding="utf-8")
            if MARKER in text:
                return text.split(MARKER, 1)[1].lstrip("\n")
    return ""


def write_outputs(data: dict, outdir: Path, rendering: Path | None = None) -> None:
    """RESULTS.md, the JSON and the plot into ``outdir``. Without matplotlib, when ``rendering``
    (the JSON being re-rendered), the plot already drawn for it is linked: the one in ``outdir``,
    else the one beside ``rendering`` (copied in). Never a broken link, never another run's plot."""
    date = data["meta"]["date"]
    outdir.mkdir(parents=True, exist_ok=True)
    json_path = outdir / f"table1-{date}.json"
    png_path = outdir / f"table1-{date}.png"
    data["meta"]["json_name"] = json_path.name
    json_path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    plotted = plot(data, png_path)
    earlier = rendering.with_suffix(".png") if rendering else None
    if plotted:
        how = f", {png_path}"
    elif earlier and png_path.is_file():
        how = f" (kept the existing plot {png_path}, not redrawn)"
    elif earlier and earlier.is_file():
        shutil.copyfile(earlier, png_path)
        how = f" (copied the existing plot {earlier} to {png_path}, not redrawn)"
    else:
        how = " (no plot)"
    md_path = outdir / "RESULTS.md"
    plot_name = png_path.name if plotted or (earlier and png_path.is_file()) else None
    md_path.write_text(render_md(data, plot_name, existing_notes(md_path)), encoding="utf-8")
    print(f"wrote {md_path}, {json_path}{how}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammars", nargs="+", default=None, choices=GRAMMARS + EXTRA_GRAMMARS,
                    help="default: go java python (the paper's)")
    ap.add_argument("--tokenizers", nargs="+", default=None, choices=TOKENIZERS,
                    help="default: llama2 llama3 qwen3 (llama2 with --quick)")
    ap.add_argument("--runs", type=int, default=None,
                    help="fresh processes per cell, medians reported (default 3; 1 with --quick)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run of one of our cells (default 1800)")
    ap.add_argument("--quick", action="store_true",
                    help="a short check: llama2 only, 1 run, peers from JSON (or --peers with run_all --quick)")
    ap.add_argument("--peers", action="store_true",
                    help="measure the peers in this same run (eval/peers/run_all.py) instead of reading a JSON")
    ap.add_argument("--peers-quick", action="store_true", help="with --peers: run_all --quick (SynCode only on llama2)")
    ap.add_argument("--peer-tools", nargs="+", default=list(PEERS), choices=PEERS, help="with --peers: which peers")
    ap.add_argument("--peer-timeout", type=float, default=600.0,
                    help="with --peers: seconds per peer cell (run_all --timeout)")
    ap.add_argument("--peers-out", default=None,
                    help="with --peers: run_all's output prefix (default eval/out/peers/table1-<date>)")
    ap.add_argument("--resume", action="store_true", help="with --peers: keep peer cells already in --peers-out")
    ap.add_argument("--peers-json", default=None,
                    help="peer results to merge (default: the newest eval/peers/results-*.json); with --peers, "
                         "only the cells the same run did not measure are taken from it, marked 'earlier run'")
    ap.add_argument("--no-peers", action="store_true", help="no peer columns at all")
    ap.add_argument("--out", default=None, help=f"output folder (default {DEFAULT_OUT.relative_to(ROOT)}/, untracked)")
    ap.add_argument("--update-results", action="store_true",
                    help="write into eval/, over the checked-in RESULTS.md and its JSON and PNG")
    ap.add_argument("--render", metavar="JSON", help="only re-write RESULTS.md and the plot from a table1 JSON")
    args = ap.parse_args()
    if args.out and args.update_results:
        ap.error("--out and --update-results name two places: give one")
    outdir = EVAL if args.update_results else Path(args.out) if args.out else DEFAULT_OUT

    if args.render:
        source = Path(args.render)
        if not source.is_file():
            sys.exit(f"--render: {source} not found")
        data = json.loads(source.read_text())
        write_outputs(data, outdir, rendering=source)
        return
    grammars = args.grammars or list(GRAMMARS)
    tokenizers = args.tokenizers or (["llama2"] if args.quick else list(TOKENIZERS))
    runs = args.runs or (1 if args.quick else MIN_RUNS)
    if args.quick:
        args.peers_quick = True

    date = time.strftime("%Y-%m-%d")
    meta = {
        "date": date, "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": shlex.join(["python", "-m", "eval.table1", *sys.argv[1:]]),
        "grammars": grammars, "tokenizers": tokenizers, "runs": runs,
        "machine": machine(), "versions": versions(), "loadavg_start": os.getloadavg()[0],
        "paper_source": PAPER_SOURCE, "paper_check": check_paper(),
        "method": "eval/core_bench.py run_cell, one fresh process per run, runs interleaved across cells, medians per metric",
    }
    ours_rows = measure_ours([(g, tk) for tk in tokenizers for g in grammars], runs, args.timeout)  # the paper's order
    for row in ours_rows:
        g, tk = row["grammar"], row["tokenizer"]
        if row["status"] == "ok":
            print(f"{g:6} {tk:7} preprocess {row['preprocess_s']:7.2f}s  mask mean {row['mask_mean_ms']:6.2f}ms "
                  f"median {row['mask_median_ms']:5.2f} p99 {row['mask_p99_ms']:6.2f} "
                  f"max {row['mask_max_ms']:6.2f} "
                  f"rss {row['peak_rss_mib']:.0f}MiB ({len(row['runs'])} runs)", flush=True)
        else:
            print(f"{g:6} {tk:7} {row['status']}: {row['error']}", flush=True)

    if args.no_peers:
        peer_rows, source = [], {"mode": "none", "same_run": False, "label": "none (--no-peers)"}
    elif args.peers:
        peer_rows, source = peers_run_now(args, grammars, tokenizers, date)
        for r in peer_rows:
            r["measured_in"] = "this run"
        if args.peers_json:  # cells this run did not measure, from an earlier run, marked as such
            have = {(r.get("tool"), r.get("grammar"), r.get("tokenizer")) for r in peer_rows}
            extra, xsrc = peers_from_json(Path(args.peers_json))
            fill = [{**r, "measured_in": xsrc["file"]} for r in extra
                    if (r.get("tool"), r.get("grammar"), r.get("tokenizer")) not in have
                    and r.get("grammar") in grammars and r.get("tokenizer") in tokenizers]
            if fill:
                peer_rows += fill
                cells_filled = sorted({f"{r['tool']} {r['grammar']}/{r['tokenizer']}" for r in fill})
                source["filled_from"] = {k: v for k, v in xsrc.items() if k != "versions"}
                source["filled_cells"] = cells_filled
                source["label"] += (f"; {len(cells_filled)} peer cells it did not measure are taken from "
                                    f"{xsrc['file']} (run of {xsrc.get('run_date')}) and marked 'earlier run'")
    else:
        path = Path(args.peers_json) if args.peers_json else newest_peers_json()
        if path is None or not path.is_file():
            peer_rows, source = [], {"mode": "none", "same_run": False,
                                     "label": f"none ({path or 'no eval/peers/results-*.json'} not found)"}
        else:
            peer_rows, source = peers_from_json(path)
            for r in peer_rows:
                r["measured_in"] = source["file"]
    peer_rows = [r for r in peer_rows if r.get("grammar") in grammars and r.get("tokenizer") in tokenizers]
    meta.update(peers_source=source, loadavg_end=os.getloadavg()[0], finished=time.strftime("%Y-%m-%d %H:%M:%S"))
    cells = build(ours_rows, peer_rows, source)
    data = {"meta": meta, "paper": {f"{g}/{tk}": v for (g, tk), v in PAPER.items()}, "cells": cells,
            "targets": targets(cells, runs, source, grammars, tokenizers), "peer_rows": peer_rows}
    write_outputs(data, outdir)


if __name__ == "__main__":
    main()
