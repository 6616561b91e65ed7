"""Old revision against new: bit-identical masks on the benchmark walks and Table 1 timing interleaved (issue 13).

    python -m eval.ab_compare OLD_REV NEW_REV [--masks] [--timing] [--grammars ...] [--tokenizers ...]
                              [--runs 3] [--walks 5] [--out eval/out/ab]

Each revision is exported with ``git archive`` into a temporary directory (``WORKTREE`` names this
checkout as it is, uncommitted changes included), its compiled loops built there as pip builds
them (``setup.py build_ext --inplace``; the report names the loops each side runs), and runs from
its own source: a child process
per cell, ``python -m ab_compare`` with ``cwd`` and ``PYTHONPATH`` the exported tree, so the
tree's ``greatgramma`` is imported (checked against ``greatgramma.__file__`` in every child). The
child code is this file, copied beside the trees, and uses only greatgramma's public API, so
both sides run the same measuring code on the same data (the tokenizer files and programs are
resolved once, from this checkout's ``tokenizers/`` and ``eval/data/programs/``). Each side reads
its own benchmark grammar: ``grammars/bench/<g>.lark``, or ``grammars/<g>.lark`` in revisions
from before the move.

``--masks``: per cell and side, walk every benchmark program token by token and ``--walks``
seeded random walks (uniform among allowed tokens, EOS with probability 1/2 when allowed), and
record sha256 of every mask and ``is_complete``; the first differing step per cell is replayed in
both trees to count the differing bits. ``--timing``: preprocessing (cold, ``Masker`` included)
and mask times over the program walks, fresh processes in the order old, new, new, old, ...
``--runs`` each; verdict: new/old medians of preprocessing and of mean mask time <= 1.10.
Neither flag: both. Writes ``ab.md``, ``ab.json`` and the digests (``masks/``) into ``--out``;
exits 1 when masks differ, a child fails or a cell misses 10%.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]  # this checkout (children run a copy of this file beside their tree)
WORKTREE = "WORKTREE"
MASK_GRAMMARS = ("go", "java", "python", "json")
TIMING_GRAMMARS = ("go", "java", "python")  # the paper's Table 1
TOKENIZERS = ("llama2", "llama3", "qwen3")
SIDES = ("old", "new")
MAX_STEPS = 200  # tokens per random walk
EOS_PROB = 0.5  # chance of picking EOS when the mask allows it
SHORT_BYTES = 2  # odd-numbered random walks pick among tokens this short (punctuation: more structure)
TOLERANCE = 1.10  # new/old ratio allowed for the timing verdict
SHOW_BITS = 8  # differing token ids listed per difference

Spec = dict[str, Any]


# ============================================================================ child (any revision)


def child_main(spec: Spec) -> dict:
    """Run one child job (``spec["mode"]``) in this process, with the tree's greatgramma."""
    import greatgramma

    result = {"masks": child_masks, "time": child_time, "mask_at": child_mask_at}[spec["mode"]](spec)
    return {**result, "greatgramma_file": greatgramma.__file__}


def load_cell(spec: Spec) -> tuple[Any, Any, float]:
    """(vocabulary, masker, preprocessing seconds): tokenizer load + compile + ``Masker``, cold."""
    import greatgramma as gg

    t0 = time.perf_counter()
    vocab = gg.Vocabulary.from_file(spec["tokenizer"])
    indenter = gg.Indenter.python() if spec["python_indenter"] else None
    grammar = gg.Grammar.from_file(spec["grammar"], indenter=indenter)
    # the paper's preprocessing: every table built before the first mask (revisions before the
    # lazily filled tables had no choice)
    eager = {"eager": True} if "eager" in inspect.signature(gg.compile).parameters else {}
    masker = gg.Masker(gg.compile(grammar, vocab, **eager))
    return vocab, masker, time.perf_counter() - t0


def program_walks(spec: Spec, vocab: Any) -> list[tuple[str, list[int]]]:
    """(name, token ids) of every benchmark program, tokenized exactly."""
    from greatgramma.tokenize import encode_exact, load_tokenizer

    hf = load_tokenizer(spec["tokenizer"])
    return [
        (Path(p).name, encode_exact(hf, Path(p).read_text(encoding="utf-8"), vocab.token_bytes, source=p))
        for p in spec["programs"]
    ]


def allowed_ids(words: Any, vocab_size: int) -> Any:
    """Token ids whose bit is set in an int32 bitmask (bit ``t & 31`` of word ``t >> 5``)."""
    import numpy as np

    bits = np.unpackbits(words.astype("<u4").view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def record_walk(masker: Any, vocab: Any, name: str, choose: Callable[[int, Any], int | str | None]) -> dict:
    """Walk from the initial state; ``choose(step, words)`` gives the next token, or why to stop
    (a string, or None when done). A rejected token ends the walk: its error type is compared,
    its message (wording may change) is kept apart."""
    state, tokens, steps, end, message = masker.initial_state(), [], [], "done", None
    while True:
        words = masker.mask(state)
        steps.append([hashlib.sha256(words.tobytes()).hexdigest(), bool(masker.is_complete(state))])
        tok = choose(len(tokens), words)
        if tok is None or isinstance(tok, str):
            end = tok or end
            break
        tokens.append(tok)
        if tok in vocab.eos_token_ids:
            end = "eos"
            break
        try:
            state = masker.advance(state, tok)
        except Exception as e:  # noqa: BLE001 -- a rejection is a result to compare, not a crash
            end, message = f"error {type(e).__name__}", str(e)[:300]
            break
    return {"walk": name, "tokens": tokens, "steps": steps, "end": end, "message": message}


def random_chooser(seed: str, vocab: Any, max_steps: int, short: bool) -> Callable[[int, Any], int | str | None]:
    """Uniform choice among allowed tokens (``short``: of at most ``SHORT_BYTES`` bytes, when there are
    any), EOS with probability ``EOS_PROB`` when allowed; seeded."""
    rng = random.Random(seed)
    eos = set(vocab.eos_token_ids)
    is_short = [b is not None and len(b) <= SHORT_BYTES for b in vocab.token_bytes]
    is_short += [False] * (vocab.vocab_size - len(is_short))

    def choose(step: int, words: Any) -> int | str | None:
        if step >= max_steps:
            return "max"
        ids = allowed_ids(words, vocab.vocab_size).tolist()
        if not ids:
            return "empty"
        ends = [t for t in ids if t in eos]
        others = [t for t in ids if t not in eos]
        if short:
            others = [t for t in others if is_short[t]] or others
        if ends and (not others or rng.random() < EOS_PROB):
            return ends[0]
        return others[rng.randrange(len(others))]

    return choose


def child_masks(spec: Spec) -> dict:
    """Write one JSON line per walk (programs, then seeded random walks) to ``spec["out"]``."""
    vocab, masker, _ = load_cell(spec)
    walks = []
    for name, ids in program_walks(spec, vocab):
        follow = lambda i, _words, ids=ids: ids[i] if i < len(ids) else None  # noqa: E731
        walks.append(record_walk(masker, vocab, f"program {name}", follow))
    for k in range(spec["walks"]):
        chooser = random_chooser(f"{spec['cell']}/{k}", vocab, spec["max_steps"], short=k % 2 == 1)
        walks.append(record_walk(masker, vocab, f"random {k}{' short' if k % 2 else ''}", chooser))
    with open(spec["out"], "w") as f:
        f.writelines(json.dumps(w) + "\n" for w in walks)
    return {"walks": len(walks), "steps": sum(len(w["steps"]) for w in walks)}


def child_mask_at(spec: Spec) -> dict:
    """The mask (hex of its bytes), ``is_complete`` and the text before it after the token prefix
    ``spec["prefix"]``, in a fresh Masker; with ``spec["against"]`` (the other side's mask in hex)
    also the number of differing bits and the first ``SHOW_BITS`` of them, with their bytes."""
    import numpy as np

    vocab, masker, _ = load_cell(spec)
    state = masker.initial_state()
    for tok in spec["prefix"]:
        state = masker.advance(state, tok)
    words = masker.mask(state).astype("<i4")
    text = b"".join(vocab.token_bytes[t] or b"" for t in spec["prefix"])
    result = {"mask": words.tobytes().hex(), "complete": bool(masker.is_complete(state)),
              "text_tail": repr(text[-60:])}
    if "against" in spec:
        other = np.frombuffer(bytes.fromhex(spec["against"]), dtype="<i4")
        if other.shape != words.shape:
            return {**result, "bits_differ": None, "examples": [f"shapes differ: {other.shape} vs {words.shape}"]}
        differ = allowed_ids(other ^ words, vocab.vocab_size).tolist()
        mine = set(allowed_ids(words, vocab.vocab_size).tolist())
        result["bits_differ"] = len(differ)
        shown = {t: "EOS" if t in vocab.eos_token_ids else repr(vocab.token_bytes[t]) for t in differ[:SHOW_BITS]}
        result["examples"] = [f"{t} {b} ({'new' if t in mine else 'old'} only)" for t, b in shown.items()]
    return result


def child_time(spec: Spec) -> dict:
    """core_bench's cell measurement through the public API: preprocessing s, mask ms over the program walks."""
    import resource

    import numpy as np

    vocab, masker, preprocess = load_cell(spec)
    times = []
    for _, ids in program_walks(spec, vocab):
        state = masker.initial_state()
        for tok in [*ids, None]:
            t = time.perf_counter()
            masker.mask(state)
            times.append(time.perf_counter() - t)
            if tok is not None:
                state = masker.advance(state, tok)
    ms = np.array(times) * 1000
    return {
        "preprocess_s": preprocess,
        "mask_mean_ms": float(ms.mean()),
        "mask_median_ms": float(np.median(ms)),
        "mask_p99_ms": float(np.percentile(ms, 99)),
        "mask_max_ms": float(ms.max()),
        "masks": len(ms),
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


# ============================================================================ parent


class Tree:
    """One side's source: an exported revision (or this checkout) and how to run a child in it."""

    def __init__(self, side: str, rev: str, tmp: Path, runner: Path, timeout: float) -> None:
        self.side, self.rev, self.runner, self.timeout = side, rev, runner, timeout
        self.commit = git("rev-parse", "--verify", f"{'HEAD' if rev == WORKTREE else rev}^{{commit}}")
        self.uncommitted = rev == WORKTREE and bool(git("status", "--porcelain", "--untracked-files=no"))
        if rev == WORKTREE:
            self.path = ROOT
        else:
            self.path = tmp / side
            self.path.mkdir()
            tar = subprocess.run(["git", "-C", str(ROOT), "archive", self.commit], stdout=subprocess.PIPE, check=True)
            subprocess.run(["tar", "-x", "-C", str(self.path)], input=tar.stdout, check=True)
            if (self.path / "setup.py").is_file():  # its compiled loops, as pip builds them (optional: may fail)
                subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace", "-q"], cwd=self.path, capture_output=True)
        self.subject = git("log", "-1", "--format=%s", self.commit)
        self.loops = self._loops()
        # Byte-compile first, so that no timed run pays for writing __pycache__.
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(self.path / "greatgramma")], check=True)

    def _loops(self) -> str:
        """Which loops the tree's greatgramma runs (``native.loops()``), as a child imports it."""
        code = "import greatgramma.native as n; print(n.loops())"
        env = {**os.environ, "PYTHONPATH": str(self.path)}
        proc = subprocess.run([sys.executable, "-c", code], cwd=self.path, env=env, capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else "numpy (no compiled module in this revision)"

    def label(self) -> str:
        return f"{self.rev} ({self.commit[:12]}{' + uncommitted changes' if self.uncommitted else ''})"

    def run(self, spec: Spec) -> dict:
        """``child_main(spec)`` run in a fresh process on this tree's source, with its wall time ``wall_s``;
        raises RuntimeError when the child fails or imported another greatgramma."""
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(self.path), str(self.runner)])}
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "ab_compare", "--child", json.dumps(spec)],
                cwd=self.path, env=env, capture_output=True, text=True, timeout=self.timeout,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"{self.side}: {spec['mode']} {spec['cell']} timed out ({self.timeout:.0f} s)") from None
        if proc.returncode:
            tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
            raise RuntimeError(f"{self.side}: {spec['mode']} {spec['cell']} failed (exit {proc.returncode}):\n{tail}")
        result = {**json.loads(proc.stdout.strip().splitlines()[-1]), "wall_s": time.perf_counter() - t0}
        imported = Path(result["greatgramma_file"]).resolve()
        if not imported.is_relative_to(self.path.resolve()):
            raise RuntimeError(f"{self.side}: the child imported {imported}, not the tree at {self.path}")
        return result


def git(*args: str) -> str:
    """Output of a git command in this checkout."""
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def cell_spec(tree: Tree, grammar: str, tokenizer: str, mode: str, **extra: Any) -> Spec:
    """A child job for one cell: paths of this tree's grammar, this checkout's tokenizer and programs."""
    from eval.paths import bench_grammar, programs, tokenizer_file  # parent side: a child's tree may predate it

    return {
        "mode": mode, "cell": f"{grammar}/{tokenizer}", "tokenizer": str(tokenizer_file(tokenizer)),
        "grammar": str(bench_grammar(grammar, tree.path)), "python_indenter": grammar == "python",
        "programs": [str(p) for p in programs(grammar)], **extra,
    }


def walk_difference(w: dict, v: dict | None) -> dict | None:
    """Where walk ``w`` (old side) and ``v`` (new side, None when missing) first differ, or None."""
    if v is None:
        return {"walk": w["walk"], "step": 0, "prefix": [], "what": "walk missing on the new side"}
    n = min(len(w["steps"]), len(v["steps"]))
    step = next((i for i in range(n) if w["steps"][i] != v["steps"][i]), None)
    if step is not None:
        (d_old, c_old), (d_new, c_new) = w["steps"][step], v["steps"][step]
        return {"walk": w["walk"], "step": step, "prefix": w["tokens"][:step],
                "what": f"mask {'differs' if d_old != d_new else 'equal'}; is_complete old {c_old}, new {c_new}"}
    if len(w["steps"]) != len(v["steps"]) or w["end"] != v["end"]:
        return {"walk": w["walk"], "step": n, "prefix": w["tokens"][:n],
                "what": f"walk ends differ: old {w['end']!r} after {len(w['steps'])} steps, "
                        f"new {v['end']!r} after {len(v['steps'])}"}
    return None


def differences(old: list[dict], new: list[dict]) -> list[dict]:
    """The first difference of every walk that differs, in the old side's order (walks only the new side has last)."""
    new_by_name = {w["walk"]: w for w in new}
    found = [d for w in old if (d := walk_difference(w, new_by_name.get(w["walk"])))]
    extra = sorted(set(new_by_name) - {w["walk"] for w in old})
    return found + [{"walk": name, "step": 0, "prefix": [], "what": "walk missing on the old side"} for name in extra]


def explain(trees: dict[str, Tree], grammar: str, tokenizer: str, diff: dict) -> None:
    """Replay the differing prefix in both trees (fresh processes) and add the differing bits to ``diff``."""
    prefix = diff["prefix"]
    try:
        old = trees["old"].run(cell_spec(trees["old"], grammar, tokenizer, "mask_at", prefix=prefix))
        new_spec = cell_spec(trees["new"], grammar, tokenizer, "mask_at", prefix=prefix, against=old["mask"])
        new = trees["new"].run(new_spec)
    except RuntimeError as e:
        diff["replay"] = f"replay failed: {e}"
        return
    diff.update(text_tail=old["text_tail"], bits_differ=new["bits_differ"], examples=new["examples"],
                replay_complete={"old": old["complete"], "new": new["complete"]})


def record_cell(trees: dict[str, Tree], grammar: str, tokenizer: str, walks: int, out: Path) -> dict[str, list[dict]]:
    """Each side's walk records for one cell (written under ``out/masks/<side>/``)."""
    records = {}
    for side, tree in trees.items():
        path = out / "masks" / side / f"{grammar}-{tokenizer}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        tree.run(cell_spec(tree, grammar, tokenizer, "masks", walks=walks, max_steps=MAX_STEPS, out=str(path)))
        records[side] = [json.loads(line) for line in path.read_text().splitlines()]
    return records


def compare_masks(trees: dict[str, Tree], cells: list[tuple[str, str]], walks: int, out: Path) -> list[dict]:
    """Record every walk's digests in both trees and compare them cell by cell."""
    rows = []
    for grammar, tokenizer in cells:
        row: dict[str, Any] = {"grammar": grammar, "tokenizer": tokenizer}
        t0 = time.perf_counter()
        try:
            records = record_cell(trees, grammar, tokenizer, walks, out)
        except RuntimeError as e:
            rows.append({**row, "identical": False, "error": str(e)})
            print(f"{grammar:6} {tokenizer:7} ERROR {e}", flush=True)
            continue
        diffs = differences(records["old"], records["new"])
        if diffs:
            explain(trees, grammar, tokenizer, diffs[0])
        old = records["old"]
        row.update(
            identical=not diffs, difference=diffs[0] if diffs else None, walks_differ=[d["walk"] for d in diffs],
            walks=len(old), steps=sum(len(w["steps"]) for w in old),
            program_steps=sum(len(w["steps"]) for w in old if w["walk"].startswith("program")),
            ends=sorted({w["end"] for w in old if w["walk"].startswith("random")}),
            seconds=time.perf_counter() - t0,
        )
        rows.append(row)
        found = ": " + describe(diffs[0]) if diffs else ""
        print(f"{grammar:6} {tokenizer:7} {len(old)} walks, {row['steps']} steps: "
              f"{verdict(row).replace('**', '')}{found}  ({row['seconds']:.0f} s)", flush=True)
    return rows


def verdict(row: dict) -> str:
    """A masks row's verdict: identical, or how many walks differ."""
    return "identical" if row["identical"] else f"**DIFFER** in {len(row['walks_differ'])} of {row['walks']} walks"


def describe(diff: dict) -> str:
    """One line for a mask difference."""
    prefix = diff["prefix"]
    shown = ("... " if len(prefix) > 12 else "") + " ".join(map(str, prefix[-12:]))
    text = f"{diff['walk']}, step {diff['step']} (after {len(prefix)} tokens: [{shown}]"
    text += f", text ending {diff['text_tail']}): " if "text_tail" in diff else "): "
    text += diff["what"]
    if "bits_differ" in diff:
        text += f"; replayed in fresh processes: {diff['bits_differ']} bits differ, e.g. {', '.join(diff['examples'])}"
    return text + (f"; {diff['replay']}" if "replay" in diff else "")


def interleaved(runs: int) -> list[tuple[str, ...]]:
    """Side order per run: old new, new old, old new, ... (so each side runs first equally often)."""
    return [SIDES if i % 2 == 0 else SIDES[::-1] for i in range(runs)]


TIME_KEYS = ("preprocess_s", "mask_mean_ms", "mask_median_ms", "mask_p99_ms", "peak_rss_mib")
VERDICT_KEYS = ("preprocess_s", "mask_mean_ms")


def compare_timing(trees: dict[str, Tree], cells: list[tuple[str, str]], runs: int) -> list[dict]:
    """Fresh-process timing of every cell, sides interleaved, runs of all cells in turn; medians, ratios, verdicts."""
    got: dict[tuple[str, str], dict[str, list[dict]]] = {c: {s: [] for s in SIDES} for c in cells}
    errors: dict[tuple[str, str], str] = {}
    for i, order in enumerate(interleaved(runs)):
        for cell in cells:
            for side in order:
                if cell in errors:
                    continue
                load = os.getloadavg()[0]
                try:
                    r = trees[side].run(cell_spec(trees[side], *cell, "time"))
                except RuntimeError as e:
                    errors[cell] = str(e)
                    print(f"{cell[0]:6} {cell[1]:7} ERROR {e}", flush=True)
                    continue
                got[cell][side].append({**r, "load": load})
                print(f"run {i + 1}/{runs} {cell[0]:6} {cell[1]:7} {side}: preprocess {r['preprocess_s']:6.2f} s, "
                      f"mask mean {r['mask_mean_ms']:6.3f} ms (load {load:.1f})", flush=True)
    rows = []
    for (grammar, tokenizer), by_side in got.items():
        row: dict[str, Any] = {"grammar": grammar, "tokenizer": tokenizer, "runs": by_side}
        if (grammar, tokenizer) in errors:
            rows.append({**row, "ok": False, "error": errors[(grammar, tokenizer)]})
            continue
        for side in SIDES:
            row[side] = {k: statistics.median(r[k] for r in by_side[side]) for k in TIME_KEYS}
            row[side]["masks"] = by_side[side][0]["masks"]
        row["ratio"] = {k: row["new"][k] / row["old"][k] for k in TIME_KEYS}
        row["ok"] = all(row["ratio"][k] <= TOLERANCE for k in VERDICT_KEYS)
        rows.append(row)
    return rows


def render(meta: dict, masks: list[dict] | None, timing: list[dict] | None) -> str:
    """The Markdown report."""
    lines = [f"# A/B: {meta['old']['label']} -> {meta['new']['label']}", ""]
    for side in SIDES:
        m = meta[side]
        lines.append(f"- {side}: `{m['commit']}`{' + uncommitted changes' if m['uncommitted'] else ''} {m['subject']} "
                     f"(loops: {m.get('loops', 'not recorded')})")
    lines += [
        f"- {meta['date']}, {meta['machine']}, {meta['cpus']} CPUs, Python {meta['python']}; 1-minute load average "
        f"{meta['load_start']:.2f} at the start, {meta['load_end']:.2f} at the end; {meta['seconds']:.0f} s in all.",
        f"- Command: `{meta['command']}`",
    ]
    if masks is not None:
        lines += render_masks(masks, meta["walks"])
    if timing is not None:
        lines += render_timing(timing, meta["runs"])
    return "\n".join(lines) + "\n"


def render_masks(rows: list[dict], walks: int) -> list[str]:
    """The masks section of the report."""
    lines = [
        "", f"## Masks ({'all identical' if all(r['identical'] for r in rows) else 'DIFFER'})", "",
        f"sha256 of every `mask()` and `is_complete()` on every benchmark program's token walk and {walks} seeded "
        f"random walks of up to {MAX_STEPS} tokens per cell (odd-numbered ones among tokens of at most "
        f"{SHORT_BYTES} bytes).",
        "", "| grammar | tokenizer | walks | steps (programs) | random walks end | masks | first difference |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cell = f"| {r['grammar']} | {r['tokenizer']} |"
        if "error" in r:
            lines.append(f"{cell} - | - | - | ERROR | {one_line(r['error'])} |")
            continue
        found = one_line(describe(r["difference"]), 1000) if r["difference"] else "-"
        lines.append(f"{cell} {r['walks']} | {r['steps']} ({r['program_steps']}) | {', '.join(r['ends'])} | "
                     f"{verdict(r)} | {found} |")
    return lines


def render_timing(rows: list[dict], runs: int) -> list[str]:
    """The timing section of the report."""
    loads = [run["load"] for r in rows for side in SIDES for run in r["runs"][side]] or [0.0]
    lines = [
        "", f"## Timing ({'all within 10%' if all(r['ok'] for r in rows) else 'MISS'})", "",
        f"Medians of {runs} fresh processes per side, run in the order old, new, new, old, ... (runs of all cells in "
        f"turn; 1-minute load average {min(loads):.1f}-{max(loads):.1f} at their starts). Preprocessing: tokenizer "
        f"load + compile + `Masker`, cold. Mask: every `mask()` on the program walks. Ratio new/old; the verdict "
        f"needs the preprocessing and mean mask ratios <= {TOLERANCE:.2f}.",
        "", "| grammar | tokenizer | preprocess s old | new | ratio | mask mean ms old | new | ratio "
        "| median ms old / new | p99 ms old / new | RSS MiB old / new | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cell = f"| {r['grammar']} | {r['tokenizer']} |"
        if "error" in r:
            lines.append(f"{cell} | | | | | | | | | ERROR: {one_line(r['error'])} |")
            continue
        o, n, q = r["old"], r["new"], r["ratio"]
        lines.append(
            f"{cell} {o['preprocess_s']:.2f} | {n['preprocess_s']:.2f} | {q['preprocess_s']:.2f} | "
            f"{o['mask_mean_ms']:.3f} | {n['mask_mean_ms']:.3f} | {q['mask_mean_ms']:.2f} | "
            f"{o['mask_median_ms']:.3f} / {n['mask_median_ms']:.3f} | "
            f"{o['mask_p99_ms']:.2f} / {n['mask_p99_ms']:.2f} | "
            f"{o['peak_rss_mib']:.0f} / {n['peak_rss_mib']:.0f} | {'within 10%' if r['ok'] else '**MISS**'} |"
        )
    return lines


def one_line(text: str, n: int = 240) -> str:
    """``text`` on one line, safe in a table cell; over ``n`` characters, its start and end."""
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= n else flat[: n // 3] + " ... " + flat[-(n - n // 3 - 5):]


def cells_for(grammars: list[str] | None, default: tuple[str, ...], tokenizers: list[str]) -> list[tuple[str, str]]:
    """(grammar, tokenizer) pairs in Table 1's order: tokenizers outer, grammars inner."""
    return [(g, tk) for tk in tokenizers for g in (grammars or default)]


def parse_args() -> argparse.Namespace:
    """The command line."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old_rev", nargs="?", help=f"git revision (or {WORKTREE})")
    ap.add_argument("new_rev", nargs="?", help=f"git revision, or {WORKTREE}: this checkout with uncommitted changes")
    ap.add_argument("--masks", action="store_true", help="compare masks on the walks")
    ap.add_argument("--timing", action="store_true", help="interleaved timing")
    ap.add_argument("--grammars", nargs="+", choices=MASK_GRAMMARS,
                    help=f"default: {' '.join(MASK_GRAMMARS)} for --masks, {' '.join(TIMING_GRAMMARS)} for --timing")
    ap.add_argument("--tokenizers", nargs="+", choices=TOKENIZERS, default=list(TOKENIZERS))
    ap.add_argument("--runs", type=int, default=3, help="timing runs per cell and side")
    ap.add_argument("--walks", type=int, default=5, help="seeded random walks per cell")
    ap.add_argument("--out", type=Path, default=ROOT / "eval" / "out" / "ab")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per child process")
    ap.add_argument("--keep", action="store_true", help="keep the exported trees (their path is printed)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not args.child and not (args.old_rev and args.new_rev):
        ap.error("OLD_REV and NEW_REV are required")
    args.out = args.out.resolve()  # children write digests there from their own cwd
    return args


def main() -> None:
    args = parse_args()
    if args.child:
        print(json.dumps(child_main(json.loads(args.child))))
        return
    do_masks, do_timing = (args.masks, args.timing) if args.masks or args.timing else (True, True)
    start, load_start = time.perf_counter(), os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="ab_compare-"))
    try:
        runner = tmp / "runner"
        runner.mkdir()
        shutil.copy(Path(__file__), runner / "ab_compare.py")
        revs = (args.old_rev, args.new_rev)
        trees = {side: Tree(side, rev, tmp, runner, args.timeout) for side, rev in zip(SIDES, revs)}
        for tree in trees.values():
            print(f"{tree.side}: {tree.label()} {tree.subject} -> {tree.path} (loops: {tree.loops})", flush=True)
        args.out.mkdir(parents=True, exist_ok=True)
        masks = timing = None
        if do_masks:
            masks = compare_masks(trees, cells_for(args.grammars, MASK_GRAMMARS, args.tokenizers), args.walks, args.out)
        if do_timing:
            timing = compare_timing(trees, cells_for(args.grammars, TIMING_GRAMMARS, args.tokenizers), args.runs)
    finally:
        if args.keep:
            print(f"exported trees kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    meta = {
        **{side: {"rev": t.rev, "commit": t.commit, "uncommitted": t.uncommitted, "subject": t.subject,
                  "label": t.label(), "loops": t.loops} for side, t in trees.items()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": platform.platform(), "cpus": os.cpu_count(),
        "python": platform.python_version(), "load_start": load_start, "load_end": os.getloadavg()[0],
        "seconds": time.perf_counter() - start, "runs": args.runs, "walks": args.walks,
        "command": "python -m eval.ab_compare " + " ".join(sys.argv[1:]),
    }
    report = render(meta, masks, timing)
    (args.out / "ab.json").write_text(json.dumps({"meta": meta, "masks": masks, "timing": timing}, indent=1))
    (args.out / "ab.md").write_text(report)
    print(report + f"wrote {args.out / 'ab.md'} and {args.out / 'ab.json'}")
    failed = (masks and not all(r["identical"] for r in masks)) or (timing and not all(r["ok"] for r in timing))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
