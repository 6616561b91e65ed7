"""Token ids of the benchmark programs, per tokenizer, for the peer runners (run in the project's python).

The peers' venvs do not have greatgramma, so the exact tokenization the project uses
(`greatgramma.tokenize.encode_exact`: token bytes concatenate to the program's text, Llama-2's
SentencePiece prefix space removed) is computed here once and cached as JSON:

    python -m eval.peers.encode_programs            # all tokenizers x languages
    -> eval/out/peers/tokens/<tokenizer>.json

Each file: {"tokenizer", "vocab_size", "eos_token_ids", "programs": {lang: [{"name", "ids", "hex", "text_sha256"}]}}
("hex": each token's bytes in hex).
Every program is checked to parse with Lark (parser="lalr", lexer="basic", the python grammar with
its indenter) so a runner's "violation" really is a token the tool refused on a valid program.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from eval.paths import OUT as EVAL_OUT
from eval.paths import PROGRAM_SUFFIX, bench_grammar, programs, tokenizer_file

OUT = EVAL_OUT / "peers" / "tokens"
LANGS = tuple(PROGRAM_SUFFIX)
TOKENIZERS = ("llama2", "llama3", "qwen3")


def lark_parser(lang: str):
    from lark import Lark
    from lark.indenter import Indenter

    class PyIndenter(Indenter):  # the grammar (SynCode's) names its newline terminal _NL
        NL_type = "_NL"
        OPEN_PAREN_types = ["LPAR", "LSQB", "LBRACE"]
        CLOSE_PAREN_types = ["RPAR", "RSQB", "RBRACE"]
        INDENT_type = "_INDENT"
        DEDENT_type = "_DEDENT"
        tab_len = 8

    text = bench_grammar(lang).read_text(encoding="utf-8")
    if lang == "python":
        return Lark(text, parser="lalr", lexer="basic", postlex=PyIndenter())
    return Lark(text, parser="lalr", lexer="basic")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokenizers", nargs="+", default=list(TOKENIZERS))
    ap.add_argument("--langs", nargs="+", default=list(LANGS))
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()

    import greatgramma as gg
    from greatgramma.tokenize import encode_exact, load_tokenizer

    for lang in args.langs:
        parser = lark_parser(lang)
        for p in programs(lang):
            text = p.read_text(encoding="utf-8")
            if lang == "python" and not text.endswith("\n"):
                text += "\n"
            parser.parse(text)  # raises if the benchmark program is not in the grammar
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for tk in args.tokenizers:
        path = tokenizer_file(tk)
        vocab = gg.Vocabulary.from_file(path)
        hf = load_tokenizer(path)
        res = {"tokenizer": tk, "vocab_size": vocab.vocab_size, "eos_token_ids": list(vocab.eos_token_ids), "programs": {}}
        for lang in args.langs:
            rows = []
            for p in programs(lang):
                text = p.read_text(encoding="utf-8")
                ids = encode_exact(hf, text, vocab.token_bytes)
                assert b"".join(vocab.token_bytes[i] for i in ids) == text.encode("utf-8")
                rows.append({
                    "name": p.name,
                    "ids": ids,
                    "hex": [vocab.token_bytes[i].hex() for i in ids],  # each token's bytes, for reports
                    "text_sha256": hashlib.sha256(text.encode()).hexdigest(),
                })
            res["programs"][lang] = rows
        (out / f"{tk}.json").write_text(json.dumps(res))
        n = {lang: sum(len(r["ids"]) for r in rows) for lang, rows in res["programs"].items()}
        print(f"{tk}: vocab {vocab.vocab_size}, eos {res['eos_token_ids']}, tokens per language {n}", file=sys.stderr)


if __name__ == "__main__":
    main()
