"""grammars/java.lark on real code, against javac's parser (issue 17).

    python -m eval.java_real_code                      # 300 files of java.base, seed 17, everything
    python -m eval.java_real_code --files 50 --no-walks --no-timing
    python -m eval.java_real_code --update-results     # eval/java_real_code.json

- *Acceptance*: a seeded sample of ``--files`` files of java.base from the JDK 17 sources
  (``--src``, src.zip), each parsed by Lark (the grammar's language: the engine's masks are
  exact for it) and by javac's parser alone (eval/JavaSyntaxCheck.java: JavacTask.parse(),
  ``--release 17``; no name or type is resolved, so it reports syntax errors only).
- *Mutated files*: ``--mutants`` per sampled file, each one edit of the file's tokens (drop one,
  repeat one, swap two neighbours, put one where another was), seeded. A mutant the grammar
  accepts and javac rejects is an accepted-but-rejected.
- *Random walks*: ``--walks`` seeded walks through the engine with ``--tokenizer``: a random
  allowed token each step, after ``--steps`` steps closers and EOS first; every output that
  ends with EOS goes to javac.
- *Timing and exactness*: per tokenizer of ``--timing-tokenizers``, Lark's analysis, then
  ``gg.compile`` + the first mask, and the mask time per token over ``--timing-files`` accepted
  files (under 20,000 characters) walked token by token; ``refused`` counts the files' tokens
  the mask refused plus files not complete (EOS refused) at their end: 0 when exact.
Output: eval/out/java_real_code/ unless ``--update-results``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import random
import statistics
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path

import lark
import numpy as np

from eval.paths import OUT, ROOT, tokenizer_file

GRAMMAR = ROOT / "grammars" / "java.lark"
CHECKER = ROOT / "eval" / "JavaSyntaxCheck.java"
SRC = Path("/usr/lib/jvm/java-17-openjdk-amd64/lib/src.zip")
CLOSERS = (b"}", b";", b")", b"]", b">", b'"', b"'", b"*/", b"\n", b" ")


def sample_sources(src: Path, module: str, n: int, seed: int) -> dict[str, str]:
    """``n`` .java files of ``module`` in the sources zip, a seeded sample: name -> text."""
    with zipfile.ZipFile(src) as zf:
        names = sorted(i for i in zf.namelist() if i.startswith(module + "/") and i.endswith(".java"))
        chosen = random.Random(seed).sample(names, min(n, len(names)))
        return {name: zf.read(name).decode("utf-8") for name in sorted(chosen)}


def javac_verdicts(texts: dict[str, str], release: str = "17", batch: int = 400) -> dict[str, str]:
    """name -> "" (javac's parser accepts) or its first error, for every text (one JVM per batch)."""
    out: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for i, (name, text) in enumerate(texts.items()):
            # a public class must sit in a file of its name: keep the base name, one folder each
            base = Path(name.split("#")[0]).name
            path = Path(tmp) / str(i) / (base if base.endswith(".java") else "Main.java")
            path.parent.mkdir()
            path.write_text(text, encoding="utf-8")
            paths[str(path)] = name
        keys = list(paths)
        for k in range(0, len(keys), batch):
            run = subprocess.run(["java", str(CHECKER), release, *keys[k : k + batch]],
                                 capture_output=True, text=True, check=True)
            for line in run.stdout.splitlines():
                verdict, path, *msg = line.split("\t")
                out[paths[path]] = "" if verdict == "OK" else (msg[0] if msg else "error")
    missing = set(texts) - set(out)
    if missing:
        raise RuntimeError(f"javac gave no verdict for {sorted(missing)[:3]}")
    return out


def lark_accepts(parser: lark.Lark, text: str) -> bool:
    try:
        parser.parse(text)
        return True
    except lark.exceptions.LarkError:
        return False


def mutate(parser: lark.Lark, text: str, rng: random.Random) -> str | None:
    """One edit of ``text``'s tokens (as Lark's lexer splits them), or None when it has under 2."""
    try:
        toks = [(t.start_pos, t.end_pos) for t in parser.lex(text)]
    except lark.exceptions.LarkError:
        return None
    if len(toks) < 2:
        return None
    i = rng.randrange(len(toks) - 1)
    (a, b), (c, d) = toks[i], toks[i + 1]
    kind = rng.choice(("drop", "repeat", "swap", "replace"))
    if kind == "drop":
        return text[:a] + text[b:]
    if kind == "repeat":
        return text[:b] + " " + text[a:b] + text[b:]
    if kind == "swap":
        return text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    e, f = toks[rng.randrange(len(toks))]
    return text[:a] + text[e:f] + text[b:]


def random_walks(compiled, walks: int, steps: int, seed: int, limit: int) -> list[str]:
    """Outputs of seeded random walks that ended with EOS (decoded as UTF-8, replacing errors)."""
    import greatgramma as gg

    masker = gg.Masker(compiled)
    vocab = compiled.vocab
    tb = vocab.token_bytes
    eos = set(vocab.eos_token_ids)
    closers = np.array([t for t, b in enumerate(tb) if b is not None and b.strip(b" ") in CLOSERS or b in CLOSERS])
    rng = np.random.default_rng(seed)
    eos_ids = np.array(sorted(eos))
    outputs = []
    for _ in range(walks):
        state, out = masker.initial_state(), b""
        for step in range(limit):
            ids = np.nonzero(np.unpackbits(masker.mask(state).view(np.uint8), bitorder="little")[: vocab.vocab_size])[0]
            if step > 0 and masker.is_complete(state) and (step >= steps or rng.random() < 0.05):
                outputs.append(out.decode("utf-8", "replace"))
                break
            ids = ids[~np.isin(ids, eos_ids)]
            pool = ids[np.isin(ids, closers)] if step >= steps else ids
            pool = pool if len(pool) else ids
            if not len(pool):
                break
            pick = int(rng.choice(pool))
            state = masker.advance(state, pick)
            out += tb[pick]
    return outputs


def timing(tokenizer: str, texts: list[str]) -> dict:
    """Lark's analysis + compile + first mask, and mask ms per token over ``texts``."""
    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    path = tokenizer_file(tokenizer)
    vocab = gg.Vocabulary.from_file(path)
    gg.compile(gg.Grammar("start: \"x\""), vocab)  # the vocabulary's trie, built once per vocabulary
    text = GRAMMAR.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    grammar = gg.Grammar(text + f"\n// {time.time()}\n", source=str(GRAMMAR))
    grammar.parse_table  # noqa: B018
    t1 = time.perf_counter()
    compiled = gg.compile(grammar, vocab)
    masker = gg.Masker(compiled)
    masker.mask(masker.initial_state())
    t2 = time.perf_counter()
    hf = load_tokenizer(path)
    times, refused = [], 0
    for src in texts:
        state = masker.initial_state()
        for tok in encode_exact(hf, src, vocab.token_bytes):
            a = time.perf_counter()
            words = masker.mask(state)
            times.append(time.perf_counter() - a)
            if not words.view(np.uint32)[tok >> 5] >> (tok & 31) & 1:
                refused += 1
            state = masker.advance(state, tok)
        refused += not masker.is_complete(state)
    return {"tokenizer": tokenizer, "files": len(texts), "lark_s": round(t1 - t0, 3), "compile_first_mask_s": round(t2 - t1, 3),
            "tokens": len(times), "mask_mean_ms": round(1e3 * statistics.fmean(times), 3),
            "mask_p99_ms": round(1e3 * float(np.percentile(times, 99)), 3), "refused": refused}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", type=Path, default=SRC)
    ap.add_argument("--module", default="java.base")
    ap.add_argument("--files", type=int, default=300)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--mutants", type=int, default=3, help="mutants per sampled file")
    ap.add_argument("--walks", type=int, default=150)
    ap.add_argument("--steps", type=int, default=60, help="free steps of a walk before closers and EOS")
    ap.add_argument("--tokenizer", default="llama3", help="for the random walks")
    ap.add_argument("--timing-tokenizers", default="llama2,llama3,qwen3")
    ap.add_argument("--timing-files", type=int, default=10)
    ap.add_argument("--no-walks", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--update-results", action="store_true")
    args = ap.parse_args()

    parser = lark.Lark(GRAMMAR.read_text(encoding="utf-8"), parser="lalr", lexer="basic")
    texts = sample_sources(args.src, args.module, args.files, args.seed)
    javac = javac_verdicts(texts)
    ours = {name: lark_accepts(parser, text) for name, text in texts.items()}
    javac_ok = [n for n in texts if not javac[n]]
    result: dict = {
        "date": dt.date.today().isoformat(), "python": platform.python_version(), "lark": lark.__version__,
        "source": f"{args.src} ({args.module}), {len(texts)} files, seed {args.seed}",
        "files": len(texts), "javac_accepts": len(javac_ok),
        "grammar_accepts_of_javac": sum(ours[n] for n in javac_ok),
        "grammar_refuses": sorted(n for n in javac_ok if not ours[n]),
        "accepted_but_rejected": sorted(n for n in texts if ours[n] and javac[n]),
    }
    rng = random.Random(args.seed)
    mutants = {}
    for name in javac_ok:
        for k in range(args.mutants):
            m = mutate(parser, texts[name], rng)
            if m is not None and m != texts[name]:
                mutants[f"{name}#{k}"] = m
    accepted = {n: m for n, m in mutants.items() if lark_accepts(parser, m)}
    verdicts = javac_verdicts(accepted) if accepted else {}
    bad = sorted(n for n in accepted if verdicts[n])
    result["mutants"] = {"total": len(mutants), "grammar_accepts": len(accepted),
                         "javac_accepts": sum(not v for v in verdicts.values()),
                         "accepted_but_rejected": len(bad), "examples": [(n, verdicts[n]) for n in bad[:10]]}
    if not args.no_walks:
        import greatgramma as gg

        vocab = gg.Vocabulary.from_file(tokenizer_file(args.tokenizer))
        compiled = gg.compile(gg.Grammar.from_file(GRAMMAR), vocab)
        outs = random_walks(compiled, args.walks, args.steps, args.seed, limit=args.steps * 6)
        outs = {f"walk{i}": o for i, o in enumerate(outs)}
        lark_bad = sorted(n for n, o in outs.items() if not lark_accepts(parser, o))
        wv = javac_verdicts(outs) if outs else {}
        wbad = sorted(n for n in outs if wv[n])
        result["walks"] = {"tokenizer": args.tokenizer, "walks": args.walks, "ended_with_eos": len(outs),
                           "empty": sum(not o.strip() for o in outs.values()), "lark_rejects": lark_bad,
                           "javac_rejects": len(wbad), "examples": [(outs[n][:300], wv[n]) for n in wbad[:10]]}
    if not args.no_timing:
        sample = [texts[n] for n in javac_ok if ours[n] and len(texts[n]) < 20_000][: args.timing_files]
        result["timing"] = [timing(name, sample) for name in args.timing_tokenizers.split(",")]
    folder = ROOT / "eval" if args.update_results else OUT / "java_real_code"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "java_real_code.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k not in ("grammar_refuses",)}, indent=1)[:6000])


if __name__ == "__main__":
    main()
