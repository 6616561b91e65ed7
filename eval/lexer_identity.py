"""The lexer DFA arrays of one checkout against another's, bit for bit, on a fixed set of grammars.

For changes to how the lexer DFA is built (``greatgramma/lexer.py``, ``regex.py``) that must not
change what is built. The cases: every grammar in grammars/, grammars/bench/ and tests/grammars/
(with its postlexer), the terminal patterns the lexer and regex tests use (tests/test_lexer.py
``PATTERNS``, tests/test_regex.py ``PLAIN`` and ``LOOKBEHIND_AND_LAZY``), each alone, and the
generated grammars of ``--schemas`` MaskBench schemas and of its three slowest lexers (``--data``). Each case's
terminals are resolved once, here, and each checkout builds ``lexer.build_lexer`` from the same
``TerminalSpec``s in a child process with ``PYTHONPATH`` that tree; a case compares the sha256 of
``delta``, ``accept``, ``accept_next``, ``prod``, ``risky`` and the terminal names, or the error.

    python -m eval.lexer_identity --base ../main --data ../shared/bench/jsonschema/data --schemas 200

Exits 1 when any case differs. Also prints each side's total build time (noisy: a hint only).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from dataclasses import astuple
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# MaskBench's slowest lexers (eval/maskbench-2026-12-01.md): 448 literal terminals, maxLength 128 and 80
LARGE = ("Github_medium---o32020.json", "Github_easy---o17393.json", "Github_easy---o68405.json")

CHILD = r"""
import hashlib, json, pickle, sys, time
from pathlib import Path
import greatgramma
from greatgramma.lexer import TerminalSpec, build_lexer
from greatgramma import Indenter, Semicolons

cases = pickle.loads(Path(sys.argv[1]).read_bytes())
post = {None: lambda: None, "python": Indenter.python, "go": Semicolons.go}
out, spent = {}, 0.0
for name, fields, postlexer in cases:
    specs = [TerminalSpec(*f) for f in fields]
    t0 = time.perf_counter()
    try:
        dfa = build_lexer(specs, postlexer=post[postlexer]())
    except Exception as exc:  # noqa: BLE001 - the error is the result
        out[name] = "error: " + type(exc).__name__ + ": " + str(exc)
        continue
    finally:
        spent += time.perf_counter() - t0
    h = hashlib.sha256()
    for arr in (dfa.delta, dfa.accept, dfa.accept_next, dfa.prod, dfa.risky):
        h.update(repr((arr.dtype.str, arr.shape)).encode())
        h.update(arr.tobytes())
    h.update(repr([t.name for t in dfa.terminals]).encode())
    out[name] = f"{dfa.num_states} states " + h.hexdigest()[:16]
print(json.dumps({"file": greatgramma.__file__, "seconds": spent, "digests": out}))
"""


def _postlexer_of(path: Path) -> str | None:
    return {"python": "python", "go": "go"}.get(path.stem) if path.parent.name in ("grammars", "bench") else (
        "python" if path.stem == "indented" else None)


def cases(data: Path | None, schemas: int) -> list[tuple[str, list[tuple], str | None]]:
    """(name, TerminalSpec fields, postlexer name) per case, resolved with this checkout."""
    import greatgramma as gg

    out = []
    post = {None: lambda: None, "python": gg.Indenter.python, "go": gg.Semicolons.go}
    for folder in ("grammars", "grammars/bench", "tests/grammars"):
        for path in sorted((ROOT / folder).glob("*.lark")):
            kind = _postlexer_of(path)
            try:
                grammar = gg.Grammar.from_file(path, postlexer=post[kind]())
            except gg.GrammarError as exc:
                print(f"skipped {path}: {exc}", file=sys.stderr)
                continue
            out.append((f"{folder}/{path.name}", [astuple(t) for t in grammar.terminals], kind))
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_lexer import PATTERNS
        from test_regex import LOOKBEHIND_AND_LAZY, PLAIN
    finally:
        sys.path.pop(0)
    patterns = [(label, p) for label, p in PATTERNS] + [(p, p) for p in PLAIN] + [(x[0], x[1]) for x in LOOKBEHIND_AND_LAZY]
    for label, pattern in patterns:
        out.append((f"pattern {label}", [("T", pattern, False, 0, 100, len(pattern), False, None)], None))
    if data is not None and schemas:
        from greatgramma.frontends import json_schema_to_lark

        files = sorted(data.glob("*.json"))
        step = len(files) / min(schemas, len(files))
        chosen = [files[int(i * step)] for i in range(min(schemas, len(files)))]
        chosen += [data / name for name in LARGE if (data / name).is_file() and data / name not in chosen]
        for path in chosen:
            try:
                text = json_schema_to_lark(json.loads(path.read_text(encoding="utf-8"))["schema"])
                terminals = gg.Grammar(text, strict=False).terminals
            except (gg.GrammarError, gg.ResourceLimitError):
                continue
            out.append((f"maskbench {path.name}", [astuple(t) for t in terminals], None))
    return out


def run_tree(tree: Path, case_file: Path, child: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, str(child), str(case_file)], capture_output=True, text=True, env=env, cwd=tree)
    if done.returncode:
        raise RuntimeError(f"child for {tree} failed:\n{done.stderr[-3000:]}")
    got = json.loads(done.stdout)
    if not Path(got["file"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"child for {tree} imported {got['file']}")
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the checkout to compare against (e.g. ../main)")
    ap.add_argument("--new", type=Path, default=ROOT, help="the checkout under test (default: this one)")
    ap.add_argument("--data", type=Path, help="MaskBench's data folder")
    ap.add_argument("--schemas", type=int, default=200, help="this many MaskBench schemas, spread over the sorted files")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    found = cases(args.data, args.schemas)
    print(f"{len(found)} cases resolved in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        case_file, child = Path(tmp) / "cases.pickle", Path(tmp) / "lexer_identity_child.py"
        case_file.write_bytes(pickle.dumps(found))
        child.write_text(CHILD)
        base = run_tree(args.base, case_file, child)
        new = run_tree(args.new, case_file, child)
    differ = [n for n, _, _ in found if base["digests"][n] != new["digests"][n]]
    for name in differ:
        print(f"DIFFERS {name}: base {base['digests'][name][:200]} / new {new['digests'][name][:200]}")
    errors = sum(d.startswith("error") for d in new["digests"].values())
    digest = hashlib.sha256(json.dumps(new["digests"], sort_keys=True).encode()).hexdigest()[:12]
    print(f"{len(found) - len(differ)} of {len(found)} cases identical ({errors} refused alike or not); "
          f"build seconds: base {base['seconds']:.2f}, new {new['seconds']:.2f}; digest {digest}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
