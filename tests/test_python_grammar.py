"""grammars/bench/python.lark with the indentation postlexer (gg.Indenter.python()) against Lark's Indenter.

- Always runs: a small vocabulary built from the test programs' bytes; the own programs in
  tests/data/python walk token by token; hand-written indentation cases check the mask (deeper
  indentation after a block opener, dedents only to a level on the stack, several at once,
  indentation free inside brackets, EOS closing open blocks), each completeness claim checked
  against Lark too; a few seeded random walks whose EOS-ended outputs must parse with Lark.
- Real tokenizers (tokenizers/): every program (the benchmark's, eval/data/programs/python, and
  the own) walks cleanly with llama2, llama3, qwen3; seeded random walks never
  meet an empty mask and every output ended with EOS parses with Lark + the indenter.
"""

from __future__ import annotations

import re
import zlib
from pathlib import Path

import numpy as np
import pytest
from helpers import TOKENIZER_NAMES as TOKENIZERS
from helpers import TEST_DATA, allowed_ids, bit, compile_shipped, grammar_path, split_ids
from lark_indenter import lark_parser, lark_parses, python_indenter

import greatgramma as gg

GRAMMAR_PATH = grammar_path("python")
GRAMMAR_TEXT = GRAMMAR_PATH.read_text()
OWN_PROGRAMS = sorted((TEST_DATA / "python").glob("*.py"))


def python_grammar() -> gg.Grammar:
    return gg.Grammar.from_file(GRAMMAR_PATH, indenter=gg.Indenter.python())


def walk_ids(masker: gg.Masker, ids: list[int], name: str, state: gg.State | None = None) -> gg.State:
    """Feed ids one by one (from `state`, or the start), checking each is in the mask and accepted."""
    token_bytes = masker.compiled.vocab.token_bytes
    state, done = state or masker.initial_state(), b""
    for i, tok in enumerate(ids):
        tb = token_bytes[tok]
        assert bit(masker.mask(state), tok), f"{name}: token #{i} {tb!r} masked out after ...{done[-60:]!r}"
        try:
            state = masker.advance(state, tok)
        except gg.TokenRejectedError as exc:
            pytest.fail(f"{name}: token #{i} {tb!r} rejected after ...{done[-60:]!r}: {exc}")
        done += tb
    return state


def test_programs_parse_with_lark() -> None:
    """The test material itself: every program is accepted by Lark with the indenter."""
    assert 6 <= len(OWN_PROGRAMS) <= 10
    assert_parse_with_lark(OWN_PROGRAMS)


def test_bench_programs_parse_with_lark(bench_programs) -> None:
    assert_parse_with_lark(bench_programs("python"))


def assert_parse_with_lark(programs: list[Path]) -> None:
    for program in programs:
        data = program.read_bytes()
        assert data.endswith(b"\n") and data.isascii(), program.name
        lark_parser(GRAMMAR_TEXT, python_indenter()).parse(data.decode())  # raises with the position


# --------------------------------------------------------------------------- small vocabulary

KEYWORDS = [
    b"def", b"class", b"return", b"if", b"elif", b"else", b"for", b"while", b"in", b"not", b"and", b"or",
    b"try", b"except", b"finally", b"with", b"as", b"import", b"from", b"lambda", b"yield", b"pass",
    b"break", b"continue", b"raise", b"None", b"True", b"False", b"self", b"print", b"is", b"global",
]
SMALL_TOKENS: list[bytes | None] = [None]  # id 0 = EOS
SMALL_TOKENS += [bytes([b]) for b in range(0x20, 0x7F)] + [b"\n", b"\t", b"\r"]
SMALL_TOKENS += KEYWORDS + [b" " + k for k in KEYWORDS] + [b" " + k + b" " for k in KEYWORDS]
SMALL_TOKENS += [b"  ", b"    ", b"        ", b"\n\n", b"\n  ", b"\n    ", b"\n        ", b"\n\n\n", b"\n\t"]
SMALL_TOKENS += [b"):\n", b":\n", b":\n    ", b"):\n    ", b"\n    return", b'"""', b"'''", b'"""\n', b"(self", b"()",
                 b"[]", b"{}", b" = ", b", ", b"):", b"# ", b"\\n", b"\\\n", b'")', b"'s", b"\n#", b"0x", b"1."]
# whole statement heads, so that random walks build blocks (see HEADS)
STATEMENTS = [b"if x:", b"elif y:", b"else:", b"while y:", b"for i in z:", b"def f():", b"class C:", b"try:",
              b"except:", b"finally:", b"pass", b"x = 1", b"return x", b"f(x)", b"break"]
SMALL_TOKENS += STATEMENTS
SMALL_TOKENS = list(dict.fromkeys(SMALL_TOKENS))  # no duplicates
SMALL_ID = {tb: i for i, tb in enumerate(SMALL_TOKENS) if tb is not None}

_small: list[gg.CompiledGrammar] = []


def small_compiled() -> gg.CompiledGrammar:
    if not _small:
        vocab = gg.Vocabulary.from_token_bytes(SMALL_TOKENS, eos_token_ids=[0])
        _small.append(gg.compile(python_grammar(), vocab))
    return _small[0]


def small_ids(data: bytes, greedy: bool = True) -> list[int]:
    """Split data into small-vocabulary ids: longest token first (greedy) or byte by byte."""
    return split_ids(data, SMALL_ID, greedy)


def small_state(masker: gg.Masker, prefix: bytes) -> gg.State:
    return walk_ids(masker, small_ids(prefix, greedy=False), f"prefix {prefix!r}")


@pytest.mark.parametrize("program", OWN_PROGRAMS, ids=lambda p: p.name)
def test_own_program_small_vocab(program: Path) -> None:
    masker = gg.Masker(small_compiled())
    data = program.read_bytes()
    for greedy in (True, False):
        state = walk_ids(masker, small_ids(data, greedy), f"{program.name} ({'tokens' if greedy else 'bytes'})")
        assert masker.is_complete(state), f"{program.name}: not complete at the end"
        assert bit(masker.mask(state), 0), f"{program.name}: EOS masked out at the end"
        assert masker.advance(state, 0).finished
    # cut before the final newline: a statement without its newline is not complete
    assert not lark_parses(GRAMMAR_TEXT, data[:-1], python_indenter())
    state = walk_ids(masker, small_ids(data[:-1]), program.name)
    assert not masker.is_complete(state), f"{program.name}: complete without its last newline"


# (prefix, next bytes, allowed?): the next bytes are fed byte by byte; allowed means every one is
# in the mask; not allowed means the last one is masked out and advance raises (the ones
# before it are allowed).
NEXT_CASES = [
    # a block opener needs a deeper indentation
    (b"if x:\n", b"y", False),
    (b"if x:\n", b" y", True),
    (b"if x:\n", b"    y", True),
    (b"if x:\n", b"\ty", True),
    (b"if x:\n", b"\n\n    # comment\n    y", True),  # blank lines and comments before the block
    (b"if x:\n", b"# comment\ny", False),
    (b"x = 1\n", b"    y", False),  # no indentation without a block opener
    (b"x = 1\n", b" ", True),  # could still become a blank or comment line
    (b"x = 1\n", b"  # comment\ny", True),
    (b"def f():\n    return 1\n", b"  g", False),
    # dedents must land on a level on the stack [0, 4, 8]
    (b"if a:\n    if b:\n        c\n", b"  d", False),
    (b"if a:\n    if b:\n        c\n", b"      d", False),
    (b"if a:\n    if b:\n        c\n", b"            d", False),  # deeper without an opener
    (b"if a:\n    if b:\n        c\n", b"    d", True),
    (b"if a:\n    if b:\n        c\n", b"d", True),  # two dedents at once
    (b"if a:\n    if b:\n        c\n", b"        d", True),
    (b"if a:\n    if b:\n        c\n", b"  \n\n    d", True),  # a blank line at column 2 is fine
    (b"if a:\n    if b:\n        c\n", b"  # c\n    d", True),  # so is a comment at column 2
    (b"if a:\n  if b:\n    if c:\n      d\n", b"e", True),  # three at once, 2-space steps
    (b"if a:\n  if b:\n    if c:\n      d\n", b" e", False),
    (b"if a:\n  if b:\n    if c:\n      d\n", b"  elif e:\n    f", True),
    (b"if a:\n  if b:\n    if c:\n      d\n", b"else:\n  f", True),
    (b"if a:\n    b\n", b"   c", False),
    (b"if a:\n    b\n", b"else:\n    c", True),
    (b"if a:\n    b\n", b"    else:", False),  # else at the wrong level (rejected at its ":")
    (b"if a:\n\tb\n", b"        c", True),  # a tab counts 8 columns
    (b"if a:\n\tb\n", b"    c", False),
    (b"if a:\n        b\n", b"\tc", True),
    # inside brackets newlines and indentation are free
    (b"x = (", b"\n1,\n        2,\n  3)\n", True),
    (b"if a:\n    x = [", b"\n1,\n\n# c\n            2]\n    y", True),
    (b"if a:\n    x = [\n1]\n", b"y", True),
    (b"if a:\n    x = [\n1]\n", b"  y", False),  # after the bracket closes, indentation counts again
    (b"f(a,\n", b"  b)\n", True),
    (b"d = {\n", b"'k':\n'v'}\nx", True),
    # a line continuation ignores the next line's indentation
    (b"if a:\n    x = 1 + \\\n", b"2\n    y", True),
    # block openers
    (b"def f(x):\n", b"    \"\"\"doc\"\"\"\n    return x", True),
    (b"class C:\n", b"    pass\n\n\nclass D(C):\n    x = 1", True),
    (b"try:\n    a\n", b"except E as e:\n    b\nfinally:\n    c", True),
    (b"while a:\n    b\n", b"else:\n    c", True),
    (b"for i in x:\n    b\n", b"else:\n    c", True),
    (b"@dec\n", b"def f():\n    pass", True),
    (b"@dec\n", b"    d", False),
    (b"if a: b\n", b"    c", False),  # a one-line suite opens no block
]


@pytest.mark.parametrize("prefix,more,ok", NEXT_CASES, ids=[repr(c[0] + b"|" + c[1])[2:-1] for c in NEXT_CASES])
def test_indentation_mask(prefix: bytes, more: bytes, ok: bool) -> None:
    masker = gg.Masker(small_compiled())
    state = small_state(masker, prefix)
    ids = small_ids(more, greedy=False)
    if ok:
        walk_ids(masker, ids, f"{prefix!r} + {more!r}", state)
        return
    state = small_state(masker, prefix + more[:-1])
    last = ids[-1]
    assert not bit(masker.mask(state), last), f"{more[-1:]!r} allowed after {prefix + more[:-1]!r}"
    with pytest.raises(gg.TokenRejectedError):
        masker.advance(state, last)


COMPLETE_CASES = [
    (b"", True),
    (b"\n", True),
    (b"if a:\n    b\n", True),
    (b"if a:\n    if b:\n        c\n", True),  # EOS closes two blocks
    (b"if a:\n  if b:\n    if c:\n      d\n", True),
    (b"if a:\n    b\n    ", True),  # trailing indentation at the block's level
    (b"if a:\n    b\n\n", True),
    (b"if a:\n    b\n# end\n", True),
    (b"if a:\n    b\n  ", False),  # trailing dedent to a level not on the stack
    (b"if a:\n    b", False),  # the last line must end with a newline
    (b"if a:\n", False),
    (b"if a:\n    ", False),
    (b"x = (1,\n", False),  # an open bracket
    (b"x = (1,\n)\n", True),
    (b"if a:\r\n    b\r\n", True),
    (b"if a:\n\tb\n        c\n", True),
    (b"def f():\n    \"\"\"doc\"\"\"\n    return 1\n", True),
    (b"def f():\n    '''doc'''\n", True),  # the docstring is part of the newline: "def f():" _NL
    (b"x = 1 + \\\n  2\n", True),
    (b"class C: pass\n", True),
]


@pytest.mark.parametrize("data,complete", COMPLETE_CASES, ids=[repr(c[0])[2:-1] for c in COMPLETE_CASES])
def test_eos_completes(data: bytes, complete: bool) -> None:
    assert lark_parses(GRAMMAR_TEXT, data, python_indenter()) == complete, "the case disagrees with Lark"
    masker = gg.Masker(small_compiled())
    state = small_state(masker, data)
    assert masker.is_complete(state) == complete
    assert bit(masker.mask(state), 0) == complete


# Random-walk policy: token pools by where the output stands, so that walks build lines, blocks and
# dedents rather than one long string. The mask decides; a pool only says what to try first.
CLOSERS = [b"\n", b":", b")", b"]", b"}", b'"', b"'", b"x", b" x", b"0", b" 0", b'"""', b"'''", b" else"]
NEWLINES = [b"\n", b":\n", b"\n  ", b"\n    ", b"\n        ", b"\n\t", b"):\n", b"):\n    ", b":\n    "]
INDENTS = [b"  ", b"    ", b"        ", b"\t", b" "]
HEADS = STATEMENTS + [b"if", b"while", b"for", b"def", b"class", b"try", b"else", b"elif", b"return", b"pass", b"x"]
MIDDLE = [b" ", b":", b")", b"]", b" x", b" =", b" if", b" in", b" for", b" else", b" and", b"(", b"0", b" 0", b"."]
NAME_LIKE = re.compile(rb" ?[A-Za-z_][A-Za-z_0-9]*")
STRING_PREFIX = re.compile(rb" ?[ubfUBF]?[rR]?")  # names that may be forced to start a string


def random_walks(compiled: gg.CompiledGrammar, seed: str, walks: int, max_steps: int) -> tuple[int, list[bytes]]:
    """Seeded random walks: (how many ended with EOS, their outputs); each of those parses with Lark.

    At every step the mask is not empty and its EOS bit agrees with is_complete. A step tries
    pools of tokens in an order drawn by where the output stands (after a newline: indentation
    or a statement head; at a line start: a statement head; mid-line: newlines, operators,
    NAME-like tokens), then any token that opens no string or comment, then any; in the second
    half closers come first (one that completes the output if any) and EOS is taken as soon as
    allowed (before that, with a small probability).
    """
    vocab = compiled.vocab
    masker = gg.Masker(compiled)
    tb = vocab.token_bytes

    def pool(tokens: list[bytes]) -> np.ndarray:
        wanted = set(tokens)
        return np.array([i for i, b in enumerate(tb) if b in wanted], dtype=np.int64)

    closers, newlines, indents, heads, middle = map(pool, (CLOSERS, NEWLINES, INDENTS, HEADS, MIDDLE))
    names = [i for i, b in enumerate(tb) if b and NAME_LIKE.fullmatch(b) and not STRING_PREFIX.fullmatch(b)]
    names = np.array(names, dtype=np.int64)
    openers = [i for i, b in enumerate(tb) if b and (any(c in b for c in b"\"'#\\") or STRING_PREFIX.fullmatch(b))]
    openers = np.array(openers, dtype=np.int64)  # tokens that open (or may be forced to open) a string or comment
    eos_ids = np.array(sorted(vocab.eos_token_ids), dtype=np.int64)
    rng = np.random.default_rng(zlib.crc32(seed.encode()))
    newline = [i for i, b in enumerate(tb) if b == b"\n"]

    def completing(state: gg.State, candidates: np.ndarray) -> list[int]:
        """Candidates after which the output is complete (first) or complete after a newline."""
        found = []
        for c in candidates.tolist():
            after = masker.advance(state, c)
            if masker.is_complete(after):
                return [c]
            try:
                if newline and masker.is_complete(masker.advance(after, newline[0])):
                    found.append(c)
            except gg.TokenRejectedError:
                pass
        return found

    outputs = []
    for walk in range(walks):
        state, out = masker.initial_state(), b""
        for step in range(max_steps):
            ids = allowed_ids(masker.mask(state))
            assert len(ids), f"walk {walk}: empty mask after {out!r}"
            ending = step > max_steps // 2
            eos_ok = np.isin(eos_ids, ids)
            assert eos_ok.any() == masker.is_complete(state), f"walk {walk}: EOS bit vs is_complete after {out!r}"
            if eos_ok.any() and (ending or (step >= 8 and rng.random() < 0.05)):
                state = masker.advance(state, int(eos_ids[eos_ok][0]))
                break
            line = out.rsplit(b"\n", 1)[-1]
            r = rng.random()
            if not out or out.endswith(b"\n"):
                pools = [heads, indents, newlines] if r < 0.7 else [indents, heads, newlines]
            elif not line.strip(b" \t"):
                pools = [heads, names, newlines, indents]
            else:
                pools = [newlines, middle, names] if r < 0.3 else [middle, names, newlines] if r < 0.7 else [names]
            if ending:
                pools = [closers] + pools
            pools += [None] if r > 0.98 else [openers, None]  # None: any token; openers: any but these
            for p in pools:
                if p is None:
                    options = ids[~np.isin(ids, eos_ids)]
                elif p is openers:
                    options = ids[~np.isin(ids, eos_ids) & ~np.isin(ids, openers)]
                else:
                    options = ids[np.isin(ids, p)]
                if len(options):
                    break
            pick = int(rng.choice(options))
            if ending:  # a closer that completes the output, alone or before a newline, if there is one
                pick = next(iter(completing(state, ids[np.isin(ids, closers)])), pick)
            state = masker.advance(state, pick)
            out += tb[pick]
        if state.finished:
            outputs.append(out)
            assert lark_parses(GRAMMAR_TEXT, out, python_indenter()), f"walk {walk}: Lark rejects {out!r}"
    return len(outputs), outputs


def test_random_walks_small_vocab() -> None:
    finished, _ = random_walks(small_compiled(), "python-small", walks=30, max_steps=120)
    print(f"python x small vocabulary: {finished}/30 walks ended with EOS")
    assert finished > 0, "no walk reached EOS"


# --------------------------------------------------------------------------- real tokenizers


@pytest.fixture(scope="module", params=TOKENIZERS)
def real_compiled(request, vocabularies) -> gg.CompiledGrammar:
    """python.lark compiled for one tokenizer; module scope with params makes pytest run all the
    tests of one tokenizer together, so each compiles once and one is in memory at a time."""
    return compile_shipped("python", vocabularies(request.param))


@pytest.mark.real_tokenizers
def test_programs_walk_cleanly(real_compiled: gg.CompiledGrammar, request, hf_tokenizers, bench_programs) -> None:
    from greatgramma.tokenize import encode_exact

    compiled = real_compiled
    vocab = compiled.vocab
    masker = gg.Masker(compiled)
    hf = hf_tokenizers(request.node.callspec.params["real_compiled"])
    bench = bench_programs("python")
    assert bench and OWN_PROGRAMS
    for program in bench + OWN_PROGRAMS:
        ids = encode_exact(hf, program.read_text(encoding="utf-8"), vocab.token_bytes)
        state = masker.initial_state()
        done = b""
        for i, tok in enumerate(ids):
            where = f"{program.name}: token #{i} {vocab.token_bytes[tok]!r} after ...{done[-60:]!r}"
            assert bit(masker.mask(state), tok), f"{where}: masked out"
            try:
                state = masker.advance(state, tok)
            except gg.TokenRejectedError as exc:
                pytest.fail(f"{where}: rejected: {exc}")
            done += vocab.token_bytes[tok]
        assert masker.is_complete(state), f"{program.name}: not complete at the end"
        words = masker.mask(state)
        for eos in vocab.eos_token_ids:
            assert bit(words, eos), f"{program.name}: EOS blocked at the end"


@pytest.mark.real_tokenizers
def test_random_walks(real_compiled: gg.CompiledGrammar, request) -> None:
    name = request.node.callspec.params["real_compiled"]
    finished, _ = random_walks(real_compiled, f"python-{name}", walks=50, max_steps=150)
    print(f"python x {name}: {finished}/50 walks ended with EOS")
    assert finished > 0, "no walk reached EOS"
