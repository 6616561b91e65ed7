"""The ``gg`` command line: preprocess a grammar for a tokenizer, inspect an artifact, check a file."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

from .compiled import STAGES, CompiledGrammar, compile, load
from .errors import GrammarWarning, GreatGrammaError, TokenRejectedError
from .grammar import Grammar
from .indenter import Indenter
from .semicolons import Semicolons
from .masker import Masker
from .version import __version__
from .vocab import Vocabulary


def _vocab(args: argparse.Namespace) -> Vocabulary:
    eos = tuple(args.eos) if args.eos else None
    return Vocabulary.from_pretrained(args.tokenizer, vocab_size=args.vocab_size, eos_token_ids=eos)


POSTLEXERS = {"python": Indenter.python, "go": Semicolons.go}  # --postlexer (--indenter: python only)


def _grammar(args: argparse.Namespace) -> Grammar:
    names = [n for n in (getattr(args, "indenter", None), getattr(args, "postlexer", None)) if n]
    if len(names) > 1:
        raise GreatGrammaError("give --postlexer or --indenter, not both")
    start = "start" if args.start is None else args.start
    return Grammar.from_file(args.grammar, start=start, postlexer=POSTLEXERS[names[0]]() if names else None)


def _print_summary(summary: dict) -> None:
    for key, value in summary.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:.2f}s" if isinstance(v, float) else f"{k} {v}" for k, v in value.items())
        print(f"  {key:22} {value}")


class _StageBar:
    """Progress over the preprocessing stages on stderr (tqdm when installed, plain lines otherwise)."""

    def __init__(self, enabled: bool):
        self.bar = None
        self.enabled = enabled
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=len(STAGES), desc="preprocess", unit="stage", file=sys.stderr, leave=False)

    def __call__(self, stage: str, seconds: float) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(f"{stage} {seconds:.2f}s")
            self.bar.update(1)
        elif self.enabled:
            print(f"  {stage:12} {seconds:6.2f}s", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_preprocess(args: argparse.Namespace) -> int:
    t = time.perf_counter()
    grammar, vocab = _grammar(args), _vocab(args)
    bar = _StageBar(not args.quiet)
    try:
        compiled = compile(grammar, vocab, eager=not args.lazy, progress=bar)
    finally:
        bar.close()
    seconds = time.perf_counter() - t
    summary = compiled.summary()
    summary["total_seconds"] = round(seconds, 3)
    if args.output:
        compiled.save(args.output)
        summary["artifact"] = f"{args.output} ({os.path.getsize(args.output) / 1e6:.1f} MB)"
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"preprocessed {args.grammar} for {args.tokenizer} in {seconds:.2f}s")
        _print_summary(summary)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from .artifact import read_header

    compiled = load(args.artifact)
    header = read_header(args.artifact)
    summary = {
        "file_bytes": os.path.getsize(args.artifact),
        "format": f"{header['format']} (written by greatgramma {header['library_version']})",
        **compiled.summary(),
    }
    # a loaded transducer walks subtrees on demand: the figure is the one preprocessing recorded
    summary["subtrees"] = f"{summary['subtrees']} (walked when preprocessed, as the file records)"
    summary["suffix_rows"] = f"{summary['suffix_rows']} (computed when saved)"
    summary["vocab_fingerprint"] = compiled.vocab.fingerprint()[:16]
    summary["eos_token_ids"] = list(compiled.vocab.eos_token_ids)
    print(f"{args.artifact}:")
    _print_summary(summary)
    return 0


def _read_utf8(path: str) -> str:
    """The file's text; a file that cannot be read or is not UTF-8 is an error naming it and the place."""
    from .tokenize import line_and_column

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise GreatGrammaError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = line_and_column(data, exc.start)
        raise GreatGrammaError(
            f"{path}: not UTF-8 text ({exc.reason}): byte 0x{data[exc.start]:02x} at byte offset {exc.start} "
            f"(line {line}, column {column})"
        ) from None


def _is_artifact(path: str) -> bool:
    """Whether the file starts like a compiled artifact (its JSON header names the format)."""
    from .artifact import MAGIC

    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return head.startswith(b"{") and MAGIC.encode() in head


def _compiled(args: argparse.Namespace) -> CompiledGrammar:
    """The grammar compiled for the tokenizer, or the compiled artifact read as it is (checked
    against the tokenizer)."""
    if not _is_artifact(args.grammar):
        return compile(_grammar(args), _vocab(args))
    given = [flag for flag, value in (("--start", args.start), ("--indenter", args.indenter), ("--postlexer", args.postlexer),
                                      ("--eos", args.eos), ("--vocab-size", args.vocab_size)) if value is not None]
    if given:
        them = "them" if len(given) > 1 else "it"
        raise GreatGrammaError(f"{args.grammar} is a compiled artifact: it fixes {', '.join(given)}; drop {them}")
    compiled = load(args.grammar)
    stored = compiled.vocab
    mine = Vocabulary.from_pretrained(args.tokenizer, vocab_size=stored.vocab_size, eos_token_ids=stored.eos_token_ids)
    if mine.fingerprint() != stored.fingerprint():
        raise GreatGrammaError(f"{args.grammar} was compiled for another tokenizer than {args.tokenizer}")
    return compiled


def _report(path: str, data: bytes, offset: int, message: str, expected: list[str], note: str = "") -> None:
    """A compiler's error: ``file:line:column: error: message``, the line with a caret under the
    byte, what was expected, and a note."""
    from .tokenize import line_and_column

    line, column = line_and_column(data, offset)
    print(f"{path}:{line}:{column}: error: {message}", file=sys.stderr)
    start = offset - column + 1
    text = data[start:].split(b"\n", 1)[0].decode("utf-8", errors="replace").rstrip("\r")
    if text.strip():
        pad = "".join("\t" if c == "\t" else " " for c in data[start:offset].decode("utf-8", errors="replace"))
        gutter = " " * len(str(line))
        print(f" {line} | {text}\n {gutter} | {pad}^", file=sys.stderr)
    if expected:
        print(f"  expected one of: {', '.join(expected)}", file=sys.stderr)
    if note:
        print(f"  {note}", file=sys.stderr)


def cmd_check(args: argparse.Namespace) -> int:
    from .tokenize import encode_exact, load_tokenizer

    text = _read_utf8(args.file)
    compiled = _compiled(args)
    vocab = compiled.vocab
    ids = encode_exact(load_tokenizer(args.tokenizer), text, vocab.token_bytes, source=args.file)
    masker = Masker(compiled)
    state, offset, data = masker.initial_state(), 0, text.encode("utf-8")
    for i, tok in enumerate(ids):
        piece = vocab.token_bytes[tok] or b""
        try:
            state = masker.advance(state, tok)
        except TokenRejectedError as exc:
            note = f"in token #{i} (id {tok}, {piece!r})" + (f", its byte {exc.offset}" if len(piece) > 1 else "")
            _report(args.file, data, offset + exc.offset, exc.reason, exc.expected, note)
            return 1
        offset += len(piece)
    if not masker.is_complete(state):
        why = masker.diagnose(state, None)
        _report(args.file, data, offset, why.message, why.expected)
        return 1
    print(f"{args.file}: OK ({len(ids)} tokens)")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    try:
        import torch
        from transformers import AutoModelForCausalLM, LogitsProcessorList
    except ImportError:
        print("gg: error: generate needs torch and transformers: pip install torch transformers", file=sys.stderr)
        return 2
    from .integrations.transformers import GrammarLogitsProcessor
    from .tokenize import load_tokenizer

    grammar = _grammar(args)  # the grammar is checked (rules, LALR table, lexer) before the model loads
    grammar.parse_table  # noqa: B018
    grammar.build_lexer()
    model_dir = Path(args.model)
    if not model_dir.is_dir():
        raise GreatGrammaError(f"--model must be a local model directory (config.json, weights, tokenizer.json): {args.model!r}")
    try:
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    except (OSError, ValueError) as exc:
        raise GreatGrammaError(f"cannot load a causal LM from {str(model_dir)!r}: {exc}") from None
    width = model.get_output_embeddings().weight.shape[0]
    eos = tuple(args.eos) if args.eos else None
    vocab = Vocabulary.from_pretrained(str(model_dir), vocab_size=width, eos_token_ids=eos)
    with warnings.catch_warnings():  # given when the grammar was checked
        warnings.simplefilter("ignore", GrammarWarning)
        compiled = compile(grammar, vocab)
    hf = load_tokenizer(model_dir)
    prompt = hf.encode(args.prompt).ids if args.prompt else [vocab.eos_token_ids[0]]
    torch.manual_seed(args.seed)
    out = model.generate(
        torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        logits_processor=LogitsProcessorList([GrammarLogitsProcessor(compiled)]),
        max_new_tokens=args.max_new_tokens,
        do_sample=args.temperature > 0,
        temperature=args.temperature if args.temperature > 0 else None,
        top_p=None,
        top_k=None,
        eos_token_id=list(vocab.eos_token_ids),
        pad_token_id=vocab.eos_token_ids[0],
    )
    new = [t for t in out[0, len(prompt) :].tolist() if t not in vocab.eos_token_ids]
    sys.stdout.write(b"".join(vocab.token_bytes[t] or b"" for t in new).decode("utf-8", errors="replace") + "\n")
    return 0


def cmd_schema2lark(args: argparse.Namespace) -> int:
    """Print the Lark grammar of a JSON Schema file (checked as ``Grammar.from_json_schema`` checks it)."""
    whitespace = args.whitespace if args.whitespace in ("json", "compact") else int(args.whitespace)
    text = _read_utf8(args.schema)
    try:
        grammar = Grammar.from_json_schema(
            text, whitespace=whitespace, additional_properties=not args.no_additional_properties, max_repeat=args.max_repeat
        )
    except GreatGrammaError as exc:
        raise GreatGrammaError(f"{args.schema}: {exc}") from None
    sys.stdout.write(grammar.text)
    return 0


def _whitespace(value: str) -> str:
    if value in ("json", "compact") or value.isdigit():
        return value
    raise argparse.ArgumentTypeError('expected "json", "compact" or a number of characters')


def _add_tokenizer_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tokenizer", required=True, help="tokenizer.json(.gz) file, a directory holding one, or a hub id")
    p.add_argument("--eos", type=int, nargs="+", metavar="ID", help="EOS token ids (default: from tokenizer_config.json)")
    p.add_argument("--vocab-size", type=int, help="model logits width if larger than the tokenizer's vocabulary")


def _add_indenter_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--indenter",
        choices=["python"],
        help="postlexer for indentation-sensitive grammars (python: _NL/_INDENT/_DEDENT, brackets, tab 8)",
    )
    p.add_argument(
        "--postlexer",
        choices=sorted(POSTLEXERS),
        help="the grammar's postlexer: python (the indenter, as --indenter python) or go (semicolon insertion, grammars/go.lark)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gg", description="greatgramma: exact grammar-constrained decoding")
    parser.add_argument("--version", action="version", version=f"greatgramma {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("preprocess", help="compile a Lark grammar for a tokenizer and print a summary")
    p.add_argument("grammar", help="Lark grammar file (LALR(1), basic lexer)")
    _add_tokenizer_args(p)
    p.add_argument("-o", "--output", help="write the compiled artifact here")
    p.add_argument(
        "--lazy", action="store_true",
        help="compile only the lexer and parse table (milliseconds to a second); the token tables are "
        "then filled as decoding reaches them, as gg.compile does by default",
    )
    p.add_argument("--start", help="start rule (default: start)")
    _add_indenter_arg(p)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress output on stderr")
    p.set_defaults(func=cmd_preprocess)

    p = sub.add_parser("inspect", help="print what a compiled artifact holds")
    p.add_argument("artifact")
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("check", help="walk a file's tokens through the masks; report where it stops being valid")
    p.add_argument("grammar", help="Lark grammar file, or a compiled artifact (gg preprocess -o)")
    _add_tokenizer_args(p)
    p.add_argument("file", help="text file to check")
    p.add_argument("--start", help="start rule (default: start; an artifact has its own)")
    _add_indenter_arg(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("generate", help="generate grammatical text with a local transformers model")
    p.add_argument("grammar")
    p.add_argument("--model", required=True, help="local model directory (config.json, weights, tokenizer.json)")
    p.add_argument("--prompt", default="", help="prompt text (default: start from EOS as BOS)")
    p.add_argument("--max-new-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default); > 0: sampling")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eos", type=int, nargs="+", metavar="ID", help="EOS token ids (default: from the tokenizer files)")
    p.add_argument("--start", help="start rule (default: start)")
    _add_indenter_arg(p)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("schema2lark", help="print the Lark grammar generated for a JSON Schema")
    p.add_argument("schema", help="JSON Schema file")
    p.add_argument("--whitespace", type=_whitespace, default="json",
                   help='"json" (any, RFC 8259; default), "compact" (none) or N (runs of at most N characters)')
    p.add_argument("--no-additional-properties", action="store_true",
                   help="forbid members a schema does not name where it does not say (the standard allows them)")
    p.add_argument("--max-repeat", type=int, default=128, help="bound on unrolled lengths and item counts (default 128)")
    p.set_defaults(func=cmd_schema2lark)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """One ``gg: warning:`` line per warning; a GrammarWarning at the grammar's file and line."""
    text = str(message).strip().splitlines()[0] if str(message).strip() else category.__name__
    where = f"{filename}:{lineno}: " if issubclass(category, GrammarWarning) else ""
    print(f"gg: warning: {where}{text}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    """Run one command: exit 0 on success, 1 when `check` finds the text invalid, 2 on a usage
    or input error (one `gg: error:` line), 130 on Ctrl-C (one `gg: interrupted` line).
    Warnings are one `gg: warning:` line each."""
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run(argv)


def _run(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except GreatGrammaError as exc:
        print(f"gg: error: {exc.for_cli()}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"gg: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gg: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
