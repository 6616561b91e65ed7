"""Share of tokens that jump-forward would force: a fixed-schema JSON grammar, JSONTestSuite and the benchmark programs.

Decoding is simulated on each valid text: at every step the matcher's fast-forward tokens
(``Matcher.compute_ff_tokens`` with the model's own tokenizer, llguidance's withholding rule)
are appended and counted as forced; when there are none, the next token of the text's own
tokenization (from where the text stands) is taken as sampled. The share is forced / (forced +
sampled), over all texts of a cell. ``records`` (eval/data/jump_forward/) is compact JSON of one
fixed schema written as a grammar by hand, as a JSON Schema front end would write it. MaskBench (JSON Schema instances) reports 3-21% per split;
``--schemas`` measures them on MaskBench's valid instances, per split, in three modes (the front
end's default with MaskBench's pretty printing; compact; compact with extra members forbidden).

    python -m eval.jump_forward                                  # all cells, writes eval/out/
    python -m eval.jump_forward --grammars json --tokenizers llama3
    python -m eval.jump_forward --update-results                 # rewrites eval/jump_forward.json and .md
    python -m eval.jump_forward --schemas ../shared/bench/jsonschema/data --tokenizers llama3 --per-split 20
                                                                 # writes eval/out/jump_forward_maskbench.json (--update-results: eval/)
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from eval.paths import ROOT, bench_grammar, markdown_table, programs, tokenizer_file, write_results

JSON_SUITE = ROOT / "tests" / "data" / "jsontestsuite" / "test_parsing"
RECORDS = ROOT / "eval" / "data" / "jump_forward"  # a fixed-schema grammar and its instances
RESULTS = ROOT / "eval" / "jump_forward.json"
SCHEMA_RESULTS = ROOT / "eval" / "jump_forward_maskbench.json"


def simulate(matcher, text: bytes, encode, tokenize) -> tuple[int, int, int]:
    """(forced, sampled) tokens for one text: ff tokens when there are any, else the text's next
    token; and the forced bytes met at the steps where the tokens were sampled (all withheld)."""
    forced = sampled = withheld = 0
    pending: list[int] = []  # the text's own tokens from where it stands
    pos = 0
    while True:
        ff = matcher.compute_ff_tokens(tokenize)
        if ff:
            got = matcher.accept_tokens(ff)
            assert got == len(ff), "an ff token was refused"
            forced += got
            pos += sum(len(matcher.compiled.vocab.token_bytes[t]) for t in ff)
            pending = []
            continue
        if pos == len(text):
            break
        withheld += len(matcher.find_jump_forward_bytes())
        if not pending:
            pending = encode(text[pos:])
        tok = pending.pop(0)
        if not matcher.accept_token(tok):
            raise ValueError(f"the text's token {tok} is refused at byte {pos}")
        sampled += 1
        pos += len(matcher.compiled.vocab.token_bytes[tok])
    if not matcher.is_complete():
        raise ValueError("the text is not complete")
    return forced, sampled, withheld


def texts_of(grammar: str) -> list[tuple[str, bytes]]:
    if grammar == "jsontestsuite":
        return [(p.name, p.read_bytes()) for p in sorted(JSON_SUITE.glob("y_*.json"))]
    if grammar == "records":
        lines = (RECORDS / "records.jsonl").read_bytes().splitlines()
        return [(f"records.jsonl:{i + 1}", line) for i, line in enumerate(lines)]
    return [(p.name, p.read_bytes()) for p in programs(grammar)]


def grammar_of(name: str):
    import greatgramma as gg

    if name == "jsontestsuite":
        return gg.Grammar.from_file(ROOT / "grammars" / "json.lark")
    if name == "records":
        return gg.Grammar.from_file(RECORDS / "records.lark")
    return gg.Grammar.from_file(bench_grammar(name), indenter=gg.Indenter.python() if name == "python" else None)


def run_cell(grammar: str, tokenizer: str) -> dict:
    import greatgramma as gg
    from greatgramma.tokenize import bytes_tokenizer, encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(tokenizer_file(tokenizer))
    hf = load_tokenizer(tokenizer_file(tokenizer))
    compiled = gg.compile(grammar_of(grammar), vocab)
    tokenize = bytes_tokenizer(hf, vocab.token_bytes)
    forced = sampled = skipped = withheld = 0
    t0 = time.perf_counter()
    for _name, text in texts_of(grammar):
        try:
            f, s, w = simulate(gg.Matcher(compiled), text, lambda b: encode_exact(hf, b.decode(), vocab.token_bytes), tokenize)
        except (ValueError, gg.GreatGrammaError, UnicodeDecodeError):
            skipped += 1  # outside the grammar (JSONTestSuite's y_ files include some json.lark refuses)
            continue
        forced, sampled, withheld = forced + f, sampled + s, withheld + w
    return {
        "grammar": grammar,
        "tokenizer": tokenizer,
        "texts": len(texts_of(grammar)) - skipped,
        "skipped": skipped,
        "forced_tokens": forced,
        "sampled_tokens": sampled,
        "withheld_forced_bytes": withheld,
        "forced_share": forced / max(1, forced + sampled),
        "seconds": time.perf_counter() - t0,
    }


SCHEMA_MODES = {
    # name: (Grammar.from_json_schema options, how the instance is written)
    "default": ({}, "maskbench"),  # any JSON whitespace, extra members allowed; MaskBench's pretty printing
    "compact": ({"whitespace": "compact"}, "compact"),  # no whitespace; compact JSON
    "compact-closed": ({"whitespace": "compact", "additional_properties": False}, "compact"),  # and no extra members
}


def split_of(path: Path) -> str:
    """MaskBench's split of a file: the name before ``---``, or BFCL for the BFCL_* files."""
    name = path.stem
    return name.split("---")[0] if "---" in name else name.split("_")[0]


def run_schemas(folder: Path, tokenizer: str, per_split: int, seed: int) -> list[dict]:
    """MaskBench files, ``per_split`` seeded schemas per split: the valid instances of each, in
    each of SCHEMA_MODES; a cell per (split, mode). Schemas the front end refuses and instances
    the mode cannot write (extra members when they are closed) are counted, not walked."""
    import random

    import greatgramma as gg
    from eval.maskbench import round_float_to_int, serialize
    from greatgramma.tokenize import bytes_tokenizer, encode_exact, load_tokenizer

    vocab = gg.Vocabulary.from_file(tokenizer_file(tokenizer))
    hf = load_tokenizer(tokenizer_file(tokenizer))
    tokenize = bytes_tokenizer(hf, vocab.token_bytes)
    encode = lambda b: encode_exact(hf, b.decode(), vocab.token_bytes)  # noqa: E731
    splits: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*.json")):
        if any(t.get("valid") for t in json.loads(path.read_text(encoding="utf-8")).get("tests", [])):
            splits.setdefault(split_of(path), []).append(path)  # schemas with a valid instance
    cells = []
    for split, paths in sorted(splits.items()):
        chosen = random.Random(seed).sample(paths, min(per_split, len(paths)))
        for mode, (options, writing) in SCHEMA_MODES.items():
            cell = {"grammar": f"maskbench:{split}", "mode": mode, "tokenizer": tokenizer, "schemas": 0, "refused_schemas": 0,
                    "texts": 0, "skipped": 0, "forced_tokens": 0, "sampled_tokens": 0, "withheld_forced_bytes": 0}  # fmt: skip
            t0 = time.perf_counter()
            for path in chosen:
                spec = json.loads(path.read_text(encoding="utf-8"))
                valid = [t["data"] for t in spec["tests"] if t.get("valid")]
                try:
                    compiled = gg.compile(gg.Grammar.from_json_schema(spec["schema"], **options), vocab)
                except gg.GreatGrammaError:
                    cell["refused_schemas"] += 1
                    continue
                cell["schemas"] += 1
                for data in valid:
                    text = serialize(data) if writing == "maskbench" else json.dumps(round_float_to_int(data), separators=(",", ":"), ensure_ascii=False)
                    try:
                        f, s_, w = simulate(gg.Matcher(compiled), text.encode(), encode, tokenize)
                    except ValueError:
                        cell["skipped"] += 1  # refused as written: property order, or extra members in a closed mode
                        continue
                    cell["texts"] += 1
                    cell["forced_tokens"] += f
                    cell["sampled_tokens"] += s_
                    cell["withheld_forced_bytes"] += w
            cell["forced_share"] = cell["forced_tokens"] / max(1, cell["forced_tokens"] + cell["sampled_tokens"])
            cell["seconds"] = round(time.perf_counter() - t0, 1)
            print(json.dumps(cell), flush=True)
            cells.append(cell)
    return cells


def markdown(cells: list[dict]) -> str:
    schemas = any("schemas" in c for c in cells)  # MaskBench cells: per mode, with the schemas walked and refused
    extra = ["mode", "tokenizer", "schemas", "refused schemas"] if schemas else ["tokenizer"]
    columns = ["grammar", *extra, "texts", "forced tokens", "sampled tokens", "forced share", "forced bytes withheld"]
    rows = [
        [c["grammar"]] + ([c["mode"], c["tokenizer"], c["schemas"], c["refused_schemas"]] if schemas else [c["tokenizer"]])
        + [c.get("texts", ""), c["forced_tokens"], c["sampled_tokens"], f"{100 * c['forced_share']:.1f}%",
           c.get("withheld_forced_bytes", "")]
        for c in cells
    ]  # fmt: skip
    return markdown_table(columns, rows, "l" * (1 + len(extra) - 2 * schemas) + "r" * (5 + 2 * schemas))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grammars", nargs="+", default=["records", "jsontestsuite", "json", "go", "java", "python"])
    ap.add_argument("--tokenizers", nargs="+", default=["llama2", "llama3", "qwen3"])
    ap.add_argument("--schemas", type=Path, help="MaskBench's data folder (../shared/bench/jsonschema/data; guidance-ai/jsonschemabench, maskbench/data)")
    ap.add_argument("--per-split", type=int, default=20, help="schemas per MaskBench split (seeded sample)")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--update-results", action="store_true", help=f"write {RESULTS.name} and .md in eval/ (else eval/out/)")
    args = ap.parse_args()
    if args.schemas:
        cells = [c for t in args.tokenizers for c in run_schemas(args.schemas, t, args.per_split, args.seed)]
    else:
        cells = []
        for g in args.grammars:
            for t in args.tokenizers:
                cells.append(run_cell(g, t))
                print(json.dumps(cells[-1]), flush=True)
    out = {"machine": platform.platform(), "python": platform.python_version(), "cells": cells}
    if args.schemas:
        out.update(per_split=args.per_split, seed=args.seed)
    write_results(SCHEMA_RESULTS if args.schemas else RESULTS, args.update_results, out, markdown(cells))
    print(markdown(cells))


if __name__ == "__main__":
    main()
