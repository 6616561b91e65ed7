"""grammars/go.lark on real Go code, against Go's own parser (``gofmt -e``) on the same files.

Sources: the Go 1.19 tree that Debian's ``golang-1.19-src`` installs (/usr/lib/go-1.19/src), a
seeded sample of its .go files. Measures:

* acceptance: the share of the files gofmt accepts that the grammar accepts (Lark with the
  equivalent semicolon postlexer, ``tests/lark_semicolons.py``, decides the language);
* accepted but rejected: files the grammar accepts and gofmt rejects, on the sample, on mutated
  accepted files (a line dropped or doubled, a byte deleted or inserted, two lines swapped) and
  on outputs of seeded random walks through the engine that end with EOS (a small Go-ish
  vocabulary, so the walks reach statements, types and literals);
* masks: each sampled file (up to ``--walk-files`` of them, below ``--walk-bytes``) tokenized
  by each tokenizer and walked through the masker: every token must be allowed and EOS at the
  end; per-token mask time (mean, p99); compile + first mask time.

``python -m eval.go_real_code`` writes eval/out/go_real_code.json and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .paths import OUT, ROOT, tokenizer_file
from .real_code import mutate, timed_walk

sys.path.insert(0, str(ROOT / "tests"))
from lark_semicolons import lark_go_parses  # noqa: E402 - a test helper, shared with the tests

GO_ROOT = Path("/usr/lib/go-1.19/src")
GOFMT = Path("/usr/lib/go-1.19/bin/gofmt")
GRAMMAR = ROOT / "grammars" / "go.lark"
TOKENIZERS = ("llama2", "llama3", "qwen3")


def sample_files(n: int, seed: int, root: Path = GO_ROOT) -> list[Path]:
    """A seeded sample of the tree's .go files (sorted first, so the sample is stable)."""
    files = sorted(p for p in root.rglob("*.go") if p.is_file())
    return random.Random(seed).sample(files, min(n, len(files)))


def gofmt_accepts(data: bytes) -> bool:
    """Whether Go's parser accepts ``data`` (``gofmt -e`` exits 0)."""
    with tempfile.NamedTemporaryFile(suffix=".go") as f:
        f.write(data)
        f.flush()
        return subprocess.run([str(GOFMT), "-e", "-l", f.name], capture_output=True).returncode == 0


GO_INSERTED = b"{}()[];,.:=*&<-+!\n x0\"'`/"  # bytes a mutant may gain


def acceptance(text: str, files: list[Path]) -> dict:
    """Grammar (Lark + semicolons) and gofmt verdicts on the sample."""
    rows = []
    for p in files:
        data = p.read_bytes()
        rows.append({"file": str(p.relative_to(GO_ROOT)), "gofmt": gofmt_accepts(data), "grammar": lark_go_parses(text, data)})
    ok = [r for r in rows if r["gofmt"]]
    return {
        "files": len(rows),
        "gofmt_accepts": len(ok),
        "grammar_accepts_of_those": sum(r["grammar"] for r in ok),
        "accepted_but_rejected": [r["file"] for r in rows if r["grammar"] and not r["gofmt"]],
        "refused": [r["file"] for r in ok if not r["grammar"]],
    }


def mutations(text: str, files: list[Path], n: int, seed: int) -> dict:
    """Mutated accepted files: how many the grammar accepts, and of those how many gofmt rejects."""
    rng = random.Random(seed)
    pool = [p.read_bytes() for p in files if p.stat().st_size < 40_000]
    pool = [d for d in pool if lark_go_parses(text, d)]
    accepted, wrong = 0, []
    for _ in range(n):
        data = mutate(rng.choice(pool), rng, GO_INSERTED)
        if lark_go_parses(text, data):
            accepted += 1
            if not gofmt_accepts(data):
                wrong.append(data.decode("utf-8", "replace")[:2000])
    return {"mutants": n, "grammar_accepts": accepted, "accepted_but_rejected": len(wrong), "examples": wrong[:3]}


WALK_PIECES = [
    *map(chr, range(32, 127)), "\n", "\t", "package", "import", "func", "var", "const", "type",
    "struct", "interface", "map", "chan", "if", "else", "for", "range", "switch", "case", "default", "select",
    "return", "break", "continue", "goto", "fallthrough", "defer", "go", ":=", "==", "!=", "<=", "&&", "||",
    "++", "--", "...", "<-", "//", "/*", "*/", "package p\n", "func f(", ") {\n", "\n}\n", "int", "string",
    "0x1F", "1.5", "'a'", '"s"', "`r`", "x.y", "[]int{", "map[string]int", "any", "[T any]",
]


def random_walks(n: int, seed: int, max_tokens: int = 120) -> dict:
    """Seeded random walks through the engine (a small Go-ish vocabulary) that end with EOS; gofmt on each."""
    import greatgramma as gg

    pieces = [None] + [p.encode() for p in dict.fromkeys(WALK_PIECES)]
    vocab = gg.Vocabulary.from_token_bytes(pieces, eos_token_ids=[0])
    masker = gg.Masker(gg.compile(gg.Grammar(GRAMMAR.read_text(), postlexer=gg.Semicolons.go()), vocab))
    rng = random.Random(seed)
    outputs, dead = [], 0
    while len(outputs) < n:
        state, out = masker.initial_state(), b""
        for step in range(max_tokens):
            allowed = gg.bitmask_to_bool(masker.mask(state), len(pieces)).nonzero()[0].tolist()
            if not allowed:
                dead += 1
                break
            if 0 in allowed and (len(allowed) == 1 or step > rng.randint(10, max_tokens) or step == max_tokens - 1):
                outputs.append(out)
                break
            tok = rng.choice([t for t in allowed if t])
            state = masker.advance(state, tok)
            out += pieces[tok]
    wrong = [o.decode("utf-8", "replace") for o in outputs if not gofmt_accepts(o)]
    return {"walks": len(outputs), "dead_ends": dead, "accepted_but_rejected": len(wrong), "examples": wrong[:5]}


def mask_walks(text: str, files: list[Path], tokenizer: str, limit: int, max_bytes: int) -> dict:
    """Every token of each (gofmt- and grammar-accepted) file allowed, EOS at the end; mask times."""
    import numpy as np

    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(tokenizer_file(tokenizer))
    t0 = time.perf_counter()
    masker = gg.Masker(gg.compile(gg.Grammar(text, postlexer=gg.Semicolons.go()), vocab))
    masker.mask(masker.initial_state())
    first = time.perf_counter() - t0
    hf = load_tokenizer(tokenizer_file(tokenizer))
    times, refused, walked = [], [], 0
    for p in files:
        data = p.read_bytes()
        if walked >= limit or len(data) > max_bytes or not lark_go_parses(text, data):
            continue
        walked += 1
        ids = encode_exact(hf, data.decode("utf-8"), vocab.token_bytes) + list(vocab.eos_token_ids[:1])
        at = timed_walk(masker, ids, times)
        if at is not None:
            refused.append(f"{p.relative_to(GO_ROOT)} token {at}")
    ms = np.array(times) * 1e3
    return {
        "tokenizer": tokenizer, "files": walked, "tokens": len(times), "refused": refused,
        "compile_and_first_mask_s": round(first, 3), "mask_mean_ms": round(float(ms.mean()), 4),
        "mask_p99_ms": round(float(np.percentile(ms, 99)), 3),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--mutants", type=int, default=300)
    ap.add_argument("--walks", type=int, default=200)
    ap.add_argument("--walk-files", type=int, default=20)
    ap.add_argument("--walk-bytes", type=int, default=6000)
    ap.add_argument("--tokenizers", default=",".join(TOKENIZERS))
    args = ap.parse_args(argv)
    text = GRAMMAR.read_text(encoding="utf-8")
    files = sample_files(args.files, args.seed)
    report = {"go_root": str(GO_ROOT), "seed": args.seed, "sample": acceptance(text, files)}
    report["mutations"] = mutations(text, files, args.mutants, args.seed)
    report["random_walks"] = random_walks(args.walks, args.seed)
    report["masks"] = [mask_walks(text, files, t, args.walk_files, args.walk_bytes) for t in args.tokenizers.split(",") if t]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "go_real_code.json").write_text(json.dumps(report, indent=1))
    s = report["sample"]
    print(f"sample {s['files']} files: gofmt accepts {s['gofmt_accepts']}, grammar accepts "
          f"{s['grammar_accepts_of_those']} of those; accepted but rejected {len(s['accepted_but_rejected'])}")  # fmt: skip
    for key in ("mutations", "random_walks"):
        print(key, {k: v for k, v in report[key].items() if k != "examples"})
    for m in report["masks"]:
        print("masks", m)


if __name__ == "__main__":
    main(sys.argv[1:])
