"""grammars/python.lark on real Python code, against Python 3.11's own parser (``ast.parse``).

Sources: the CPython 3.11 standard library as Debian installs it (/usr/lib/python3.11, every .py
file, subpackages included), a seeded sample of it. Files that are not UTF-8 or that ast.parse
rejects are skipped and counted. Measures:

* acceptance: the share of the files ast.parse accepts that the grammar accepts (Lark with the
  equivalent indenter, ``tests/lark_indenter.py``, decides the language), on the sample and on
  every file; the refused ones with their cause (match statements are refused by design);
* accepted but rejected: what the grammar accepts and ast.parse rejects, on the sample, on
  mutated accepted files (a line dropped or doubled, a byte deleted or inserted, two lines
  swapped) and on outputs of seeded random walks through the engine that end with EOS (a small
  Python-ish vocabulary, so the walks reach statements, blocks and literals);
* masks: sampled files (up to ``--walk-files`` of them, below ``--walk-bytes``) tokenized by
  each tokenizer and walked through the masker: every token must be allowed and EOS at the end;
  per-token mask time (mean, p99); compile + first mask time with the vocabulary loaded. The
  timed part holds ``/tmp/gg-timing.lock`` (flock) so that it never overlaps other timing runs.

``python -m eval.python_real_code`` writes eval/out/python_real_code.json and prints a summary;
``--update-results`` also writes the checked-in eval/python_real_code-2026-12-02.json.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import random
import sys
import time
import warnings
from pathlib import Path

from .paths import OUT, ROOT, tokenizer_file
from .real_code import mutate, timed_walk

sys.path.insert(0, str(ROOT / "tests"))
from lark_indenter import lark_parser, python_indenter  # noqa: E402 - a test helper, shared with the tests

PY_ROOT = Path("/usr/lib/python3.11")
GRAMMAR = ROOT / "grammars" / "python.lark"
RESULTS = ROOT / "eval" / "python_real_code-2026-12-02.json"
TOKENIZERS = ("llama2", "llama3", "qwen3")
LOCK = Path("/tmp/gg-timing.lock")


def ast_accepts(data: bytes) -> bool:
    """Whether Python 3.11's parser accepts ``data`` (syntax only: ``ast.parse``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(data)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return False
    return True


def ast_error(data: bytes) -> str:
    """ast.parse's message for ``data`` ("" when it parses)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            ast.parse(data)
        except (SyntaxError, ValueError, MemoryError, RecursionError) as exc:
            return str(getattr(exc, "msg", exc))
    return ""


def has_match(data: bytes) -> bool:
    return any(isinstance(n, ast.Match) for n in ast.walk(ast.parse(data)))


def grammar_accepts(text: str, data: bytes) -> bool:
    """Lark (LALR, basic lexer) with Lark's own Indenter as postlexer, as tests/lark_indenter.py sets it up."""
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    try:
        lark_parser(text, python_indenter()).parse(source)
    except Exception:  # LarkError; the Indenter asserts on a stray bracket and fails on a newline lexeme without \n
        return False
    return True


def all_files(root: Path = PY_ROOT) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def sample_files(n: int, seed: int, root: Path = PY_ROOT) -> list[Path]:
    """A seeded sample of the tree's .py files (sorted first, so the sample is stable)."""
    files = all_files(root)
    return random.Random(seed).sample(files, min(n, len(files)))


def acceptance(text: str, files: list[Path]) -> dict:
    """Grammar and ast.parse verdicts; files that are not UTF-8 or that ast.parse rejects are skipped."""
    rows, not_utf8, ast_rejects = [], [], []
    for p in files:
        data = p.read_bytes()
        name = str(p.relative_to(PY_ROOT))
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            not_utf8.append(name)
            continue
        if not ast_accepts(data):
            ast_rejects.append(name)
            continue
        rows.append({"file": name, "grammar": grammar_accepts(text, data), "match": has_match(data)})
    refused = [r for r in rows if not r["grammar"]]
    return {
        "files": len(files),
        "skipped_not_utf8": not_utf8,
        "skipped_ast_rejects": ast_rejects,
        "ast_accepts": len(rows),
        "grammar_accepts_of_those": len(rows) - len(refused),
        "share": round((len(rows) - len(refused)) / max(1, len(rows)), 4),
        "refused_match_statements": [r["file"] for r in refused if r["match"]],
        "refused_other": [r["file"] for r in refused if not r["match"]],
        "files_with_match_statements": sum(r["match"] for r in rows),
    }


PY_INSERTED = b"{}()[]:;,.=*@<>+-!\n x0\"'\\#\t"  # bytes a mutant may gain


def mutations(text: str, files: list[Path], n: int, seed: int) -> dict:
    """Mutated accepted files: how many the grammar accepts, and of those how many ast.parse rejects."""
    rng = random.Random(seed)
    pool = [p.read_bytes() for p in files if p.stat().st_size < 40_000]
    pool = [d for d in pool if ast_accepts(d) and grammar_accepts(text, d)]
    accepted, wrong, missed = 0, [], 0
    for _ in range(n):
        data = mutate(rng.choice(pool), rng, PY_INSERTED)
        g, a = grammar_accepts(text, data), ast_accepts(data)
        accepted += g
        missed += a and not g
        if g and not a:
            wrong.append(data.decode("utf-8", "replace")[:2000])
    return {
        "mutants": n, "grammar_accepts": accepted, "accepted_but_rejected": len(wrong),
        "share_of_mutants": round(len(wrong) / n, 4), "ast_accepts_grammar_refuses": missed, "examples": wrong[:3],
    }  # fmt: skip


KEYWORDS = ["def", "class", "return", "if", "elif", "else", "for", "while", "in", "not", "and", "or", "is",
            "try", "except", "finally", "with", "as", "import", "from", "lambda", "yield", "pass", "break",
            "continue", "raise", "del", "global", "nonlocal", "assert", "async", "await", "None", "True"]  # fmt: skip
WALK_PIECES = [
    *map(chr, range(32, 127)), "\n", "\t", *KEYWORDS, *(k + " " for k in KEYWORDS), *(" " + k + " " for k in KEYWORDS),
    "    ", "\n    ", "\n        ", ":\n", ":\n    ", "):\n    ", "\n\n", "def f(", "class C:", "if x:", "else:",
    "for i in y:", "while x:", "try:", "except E as e:", "finally:", "with a as b:", "return x", "x = 1", "f(x)",
    "pass", " = ", ", ", "==", "!=", "<=", ">=", "**", "//", "->", ":=", "+=", "...", "*args", "**kw", "self.",
    "'s'", '"s"', "f'{x}'", "b'b'", "r'\\d'", '"""doc"""', "0x1F", "1_000", "1.5e3", "2j", "# c\n", "\\\n",
    "[x for x in y]", "lambda x: x", "print(", "@dec\n", "async def g():", "await ",
]  # fmt: skip
CLOSERS = ["\n", ")", "]", "}", ":", "'", '"', "x", "1", "pass", ":\n    ", "\n    ", "\n        "]


def random_walks(n: int, seed: int, max_tokens: int = 120) -> dict:
    """Seeded random walks through the engine (a small Python-ish vocabulary) that end with EOS.

    Tokens are drawn among the allowed ones; in the second half of a walk a token after which
    the output is complete (alone or before a newline) is taken where there is one, and EOS as
    soon as it is allowed. Every EOS-ended output is checked with ast.parse (and with Lark).
    """
    import greatgramma as gg

    text = GRAMMAR.read_text(encoding="utf-8")
    pieces = [None] + [p.encode() for p in dict.fromkeys(WALK_PIECES)]
    vocab = gg.Vocabulary.from_token_bytes(pieces, eos_token_ids=[0])
    masker = gg.Masker(gg.compile(gg.Grammar(text, indenter=gg.Indenter.python()), vocab))
    closers = [pieces.index(c.encode()) for c in CLOSERS]
    newline = pieces.index(b"\n")
    rng = random.Random(seed)
    outputs, dead, tries = [], 0, 0
    while len(outputs) < n and tries < 6 * n:
        tries += 1
        state, out = masker.initial_state(), b""
        for step in range(max_tokens):
            allowed = gg.bitmask_to_bool(masker.mask(state), len(pieces)).nonzero()[0].tolist()
            if not allowed:
                dead += 1
                break
            ending = step > max_tokens // 2
            if 0 in allowed and (len(allowed) == 1 or ending or (step > 8 and rng.random() < 0.04)):
                outputs.append(out)
                break
            tok = rng.choice([t for t in allowed if t])
            if ending:
                for c in rng.sample(closers, len(closers)):
                    if c not in allowed:
                        continue
                    after = masker.advance(state, c)
                    nl_ok = gg.bitmask_to_bool(masker.mask(after), len(pieces))[newline]
                    if masker.is_complete(after) or (nl_ok and masker.is_complete(masker.advance(after, newline))):
                        tok = c
                        break
            state = masker.advance(state, tok)
            out += pieces[tok]
    wrong = [o for o in outputs if not ast_accepts(o)]
    # the documented over-acceptance (grammars/python.lark's header): f-string replacement fields
    # whose expression does not parse (a field is one string token); counted apart from the rest
    fstring = [o for o in wrong if ast_error(o).startswith("f-string")]
    other = [o for o in wrong if o not in fstring]
    lark_disagrees = [o.decode("utf-8", "replace") for o in outputs if not grammar_accepts(text, o)]
    return {
        "walks_tried": tries, "walks_ended_with_eos": len(outputs), "dead_ends": dead,
        "accepted_but_rejected": len(wrong), "share": round(len(wrong) / max(1, len(outputs)), 4),
        "of_those_fstring_field": len(fstring),
        "accepted_but_rejected_other": len(other), "share_other": round(len(other) / max(1, len(outputs)), 4),
        "lark_rejects": len(lark_disagrees),
        "examples": [(o.decode("utf-8", "replace"), ast_error(o)) for o in (other + fstring)[:6]],
        "some_outputs": [o.decode("utf-8", "replace") for o in outputs[:5]],
    }  # fmt: skip


@contextlib.contextmanager
def timing_lock():
    """flock(/tmp/gg-timing.lock) while timing, so that timing runs of several checkouts never overlap."""
    try:
        import fcntl
    except ImportError:  # not POSIX: time without the lock
        yield
        return
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def mask_walks(text: str, files: list[Path], tokenizer: str, limit: int, max_bytes: int) -> dict:
    """Every token of each (ast- and grammar-accepted) file allowed, EOS at the end; mask times."""
    import numpy as np

    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(tokenizer_file(tokenizer))
    hf = load_tokenizer(tokenizer_file(tokenizer))
    chosen, not_encodable = [], []
    for p in files:
        data = p.read_bytes()
        if len(chosen) < limit and len(data) <= max_bytes and ast_accepts(data) and grammar_accepts(text, data):
            try:
                ids = encode_exact(hf, data.decode("utf-8"), vocab.token_bytes)
            except gg.TokenizerError:  # e.g. Llama-2's normalizer changes some characters
                not_encodable.append(str(p.relative_to(PY_ROOT)))
                continue
            chosen.append((p, data, ids + list(vocab.eos_token_ids[:1])))
    with timing_lock():
        t0 = time.perf_counter()
        masker = gg.Masker(gg.compile(gg.Grammar(text, indenter=gg.Indenter.python()), vocab))
        masker.mask(masker.initial_state())
        first = time.perf_counter() - t0
        times, refused, eos_missing = [], [], []
        for p, data, ids in chosen:
            at = timed_walk(masker, ids, times)
            if at is not None:
                (eos_missing if at == len(ids) - 1 else refused).append(f"{p.relative_to(PY_ROOT)} token {at}")
    ms = np.array(times) * 1e3
    return {
        "tokenizer": tokenizer, "files": len(chosen), "bytes": sum(len(d) for _, d, _ in chosen), "not_encodable": not_encodable, "tokens": len(times),
        "refused": refused, "eos_refused": eos_missing, "compile_and_first_mask_s": round(first, 3),
        "mask_mean_ms": round(float(ms.mean()), 4), "mask_p99_ms": round(float(np.percentile(ms, 99)), 3),
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
    ap.add_argument("--update-results", action="store_true", help=f"also write {RESULTS.relative_to(ROOT)}")
    args = ap.parse_args(argv)
    text = GRAMMAR.read_text(encoding="utf-8")
    files = sample_files(args.files, args.seed)
    report = {"python_root": str(PY_ROOT), "python": sys.version.split()[0], "seed": args.seed, "argv": sys.argv[1:]}
    report["sample"] = acceptance(text, files)
    report["all_files"] = {k: v for k, v in acceptance(text, all_files()).items()}
    report["mutations"] = mutations(text, files, args.mutants, args.seed)
    report["random_walks"] = random_walks(args.walks, args.seed)
    report["masks"] = [
        mask_walks(text, files, t, args.walk_files, args.walk_bytes) for t in args.tokenizers.split(",") if t
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "python_real_code.json").write_text(json.dumps(report, indent=1))
    if args.update_results:
        RESULTS.write_text(json.dumps(report, indent=1) + "\n")
    for key in ("sample", "all_files"):
        s = report[key]
        print(f"{key} {s['files']} files: ast.parse accepts {s['ast_accepts']} (skipped: {len(s['skipped_not_utf8'])} "
              f"not UTF-8, {len(s['skipped_ast_rejects'])} ast rejects), grammar accepts {s['grammar_accepts_of_those']} "
              f"({s['share']:.2%}); refused: {len(s['refused_match_statements'])} match statements, "
              f"others {s['refused_other']}")  # fmt: skip
    for key in ("mutations", "random_walks"):
        print(key, {k: v for k, v in report[key].items() if k not in ("examples", "some_outputs")})
    for m in report["masks"]:
        print("masks", m)


if __name__ == "__main__":
    main(sys.argv[1:])
