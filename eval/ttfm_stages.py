"""Time to first mask (TTFM) of MaskBench schemas, stage by stage, for one checkout or several interleaved.

Each schema is compiled fresh (as ``eval.maskbench`` does it) and four stages are timed apart:
``generate`` (the schema's Lark text, ``frontends.json_schema_to_lark``), ``grammar``
(``gg.Grammar``: Lark's load_grammar and LALR analysis, greatgramma's checks), ``compile``
(``gg.compile``: the lexer DFA, the parse table) and ``first_mask`` (a ``Masker`` and the mask of
the initial state). TTFM is their sum; a schema that is refused (``GrammarError``,
``ResourceLimitError``) counts in no percentile, as in ``eval.maskbench``.

With several ``--tree NAME=PATH`` the checkouts run side by side: one child process per tree,
importing that tree's ``greatgramma`` (this file is copied beside them and run with ``PYTHONPATH``
the tree), each schema sent to every child in turn, the order alternating from schema to schema,
so that load on a shared machine falls on all of them alike.

    python -m eval.ttfm_stages ../shared/bench/jsonschema/data --limit 300
    python -m eval.ttfm_stages DATA --limit 300 --tree main=../main --tree new=. --json eval/out/ttfm.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES = ("generate", "grammar", "compile", "first_mask")
PERCENTILES = (50, 90, 99)


def sample(folder: Path, limit: int | None) -> list[Path]:
    """Every file, or ``limit`` of them spread evenly over the sorted list (``eval.maskbench``'s sample)."""
    files = sorted(folder.glob("*.json"))
    if limit is None or limit >= len(files):
        return files
    step = len(files) / limit
    return [files[int(i * step)] for i in range(limit)]


# ---------------------------------------------------------------- child: one checkout


class Timer:
    """Compiles schemas with the ``greatgramma`` on ``sys.path``, timing each stage (ms)."""

    def __init__(self, tokenizer: Path):
        import greatgramma as gg

        self.gg = gg
        self.vocab = gg.Vocabulary.from_file(tokenizer)
        gg.compile(gg.Grammar('start: "x"'), self.vocab)  # the vocabulary's token trie, built once (as a server holds it)

    def time(self, schema) -> dict:
        gg = self.gg
        from greatgramma.frontends import json_schema_to_lark

        out: dict = {}
        try:
            t0 = time.perf_counter()
            text = json_schema_to_lark(schema)
            t1 = time.perf_counter()
            try:
                grammar = gg.Grammar(text, source="<json schema>", strict=True)  # as Grammar.from_json_schema
            except gg.GrammarError as exc:  # as Grammar.from_json_schema: any order made it ambiguous
                if getattr(exc, "kind", None) != "conflict" or "any_order" not in inspect.signature(json_schema_to_lark).parameters:
                    raise
                grammar = gg.Grammar(json_schema_to_lark(schema, any_order=0), source="<json schema>", strict=True)
            t2 = time.perf_counter()
            compiled = gg.compile(grammar, self.vocab)
            t3 = time.perf_counter()
            masker = gg.Masker(compiled)
            masker.mask(masker.initial_state())
            t4 = time.perf_counter()
        except (gg.GrammarError, gg.ResourceLimitError) as exc:
            out["refused"] = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
            return out
        except Exception as exc:  # noqa: BLE001 - a crash is a result here
            out["crash"] = f"{type(exc).__name__}: {exc}"[:160]
            return out
        out["ms"] = {s: (b - a) * 1000 for s, a, b in zip(STAGES, (t0, t1, t2, t3), (t1, t2, t3, t4))}
        out["lexer_states"] = compiled.lexer.num_states
        out["terminals"] = len(compiled.lexer.terminals)
        return out


def serve(tokenizer: Path) -> None:
    """Child loop: a schema file path per stdin line, one JSON answer per stdout line."""
    import greatgramma

    timer = Timer(tokenizer)
    print(json.dumps({"ready": greatgramma.__file__}), flush=True)
    for line in sys.stdin:
        path = Path(line.strip())
        schema = json.loads(path.read_text(encoding="utf-8"))["schema"]
        print(json.dumps(timer.time(schema)), flush=True)


# ---------------------------------------------------------------- parent


def start_child(script: Path, tree: Path, tokenizer: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(tree))
    child = subprocess.Popen(
        [sys.executable, str(script), "--serve", "--tokenizer-file", str(tokenizer)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree, env=env,
    )
    ready = json.loads(child.stdout.readline())
    if not Path(ready["ready"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"child for {tree} imported {ready['ready']}")
    return child


def ask(child: subprocess.Popen, path: Path) -> dict:
    child.stdin.write(f"{path}\n")
    child.stdin.flush()
    line = child.stdout.readline()
    if not line:
        raise RuntimeError(f"a child died on {path.name}")
    return json.loads(line)


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), without numpy."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def summarize(records: list[dict]) -> dict:
    """Per stage and for TTFM: percentiles (ms) over the compiled schemas; counts of the rest."""
    timed = [r["ms"] for r in records if "ms" in r]
    rows = {s: [t[s] for t in timed] for s in STAGES}
    rows["ttfm"] = [sum(t.values()) for t in timed]
    out = {k: {f"p{p}": round(percentile(v, p), 2) for p in PERCENTILES} | {"max": round(max(v, default=0), 1)}
           for k, v in rows.items()}
    out["counts"] = {"timed": len(timed), "refused": sum("refused" in r for r in records),
                     "crash": sum("crash" in r for r in records)}
    return out


def table(names: list[str], summaries: dict[str, dict]) -> str:
    cols = [f"p{p}" for p in PERCENTILES] + ["max"]
    lines = ["| tree | stage | " + " | ".join(cols) + " |", "|---|---|" + "---:|" * len(cols)]
    for name in names:
        s = summaries[name]
        for stage in (*STAGES, "ttfm"):
            lines.append(f"| {name} | {stage} | " + " | ".join(f"{s[stage][c]:.1f}" for c in cols) + " |")
    lines.append("")
    lines += [f"{name}: {summaries[name]['counts']}" for name in names]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data", type=Path, nargs="?", help="MaskBench's data folder (one JSON file per schema)")
    ap.add_argument("--limit", type=int, default=None, help="this many schemas, spread over the sorted files")
    ap.add_argument("--tree", action="append", default=[], help="NAME=PATH of a checkout (repeat to interleave); default this one")
    ap.add_argument("--tokenizer", default="llama3")
    ap.add_argument("--json", type=Path, help="write every record and the summaries here")
    ap.add_argument("--slowest", type=int, default=5, help="list this many slowest schemas per tree")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tokenizer-file", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        serve(args.tokenizer_file)
        return 0
    root = Path(__file__).resolve().parents[1]
    if args.data is None or not args.data.is_dir():
        print(f"ttfm_stages: {args.data} is not a folder (MaskBench's maskbench/data)", file=sys.stderr)
        return 2
    tokenizer = root / "tokenizers" / args.tokenizer / "tokenizer.json.gz"
    trees = dict(t.split("=", 1) for t in args.tree) if args.tree else {"this": str(root)}
    files = sample(args.data.resolve(), args.limit)  # absolute: each child runs in its own tree
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "ttfm_stages_child.py"
        shutil.copy(__file__, script)
        children = {name: start_child(script, Path(path), tokenizer) for name, path in trees.items()}
        names = list(children)
        records: dict[str, list[dict]] = {name: [] for name in names}
        for k, path in enumerate(files):
            order = names if k % 2 == 0 else names[::-1]
            for name in order:
                rec = ask(children[name], path) | {"file": path.name}
                records[name].append(rec)
            shown = "  ".join(f"{n} {sum(records[n][-1].get('ms', {}).values()):.0f}" for n in names)
            print(f"[{k + 1}/{len(files)}] {path.name}: {shown} ms", file=sys.stderr, flush=True)
        for child in children.values():
            child.stdin.close()
            child.wait()
    summaries = {name: summarize(records[name]) for name in names}
    print(table(names, summaries))
    for name in names:
        slow = sorted((r for r in records[name] if "ms" in r), key=lambda r: -sum(r["ms"].values()))[: args.slowest]
        print(f"\n{name}, slowest:")
        for r in slow:
            print(f"  {r['file']}: " + ", ".join(f"{s} {r['ms'][s]:.0f}" for s in STAGES) + f" ms; {r['terminals']} terminals, {r['lexer_states']} lexer states")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"files": len(files), "trees": trees, "summaries": summaries, "records": records}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
