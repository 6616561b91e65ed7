"""Malformed artifacts with valid checksums: every one is a gg.ArtifactError naming the file.

Files are rewritten with a fresh payload checksum (``write_artifact``), so the checks under test
are the validation of what the file claims, not the checksum. A fuzz loop drops and retypes
header fields and edits arrays (names, dtypes, shapes, values). Each edited file must be refused
with an ArtifactError, or load; a file that loads must then pass ``verify=True`` only if it still
masks exactly like the original (or be refused by it).
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from helpers import CALC, compile_shipped

import greatgramma as gg

# single bytes, and strings that make the Go and Python lexers back up (extended lexer states)
FUZZ_TOKENS = [None] + [bytes([b]) for b in range(256)] + [
    b"\n    r", b'\n  r"', b"if ", b"else:", b"def f():", b"  ", b"x = 1", b"0x", b"1e", b"a /*b", b"/*", b"*/",
]


def fuzz_vocab() -> gg.Vocabulary:
    return gg.Vocabulary.from_token_bytes(FUZZ_TOKENS, eos_token_ids=[0])


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, tuple[Path, gg.CompiledGrammar]]:
    """Saved artifacts to edit, compiled eagerly (every table full): a small grammar, Go (extended
    lexer states) and Python (an indenter)."""
    out = {}
    directory = tmp_path_factory.mktemp("bases")
    for name, compiled in (
        ("calc", gg.compile(gg.Grammar(CALC), fuzz_vocab(), eager=True)),
        ("go", compile_shipped("go", fuzz_vocab(), eager=True)),
        ("python", compile_shipped("python", fuzz_vocab(), eager=True)),
    ):
        path = directory / f"{name}.ggc"
        compiled.save(path)
        out[name] = (path, compiled)
    assert out["go"][1].lexer.extended_keys() and out["python"][1].lexer.extended_keys()
    return out


def read_artifact(path: Path) -> tuple[dict, dict[str, np.ndarray]]:
    line, _, payload = path.read_bytes().partition(b"\n")
    with np.load(io.BytesIO(payload), allow_pickle=False) as npz:
        return json.loads(line), {name: npz[name] for name in npz.files}


def write_artifact(path: Path, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Rebuild the file from (edited) parts with a payload_sha256 that matches the payload."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    payload = buf.getvalue()
    if isinstance(header, dict) and "payload_sha256" in header:
        header["payload_sha256"] = hashlib.sha256(payload).hexdigest()
    path.write_bytes(json.dumps(header).encode() + b"\n" + payload)


def refused(path: Path, match: str = "", **kwargs) -> str:
    """Load must raise an ArtifactError that names the file (and matches ``match``)."""
    with pytest.raises(gg.ArtifactError) as info:
        gg.load(path, **kwargs)
    message = str(info.value)
    assert str(path) in message, message
    assert match in message, message
    return message


def masks_along(compiled: gg.CompiledGrammar, steps: int = 12) -> list[np.ndarray]:
    """Masks along a deterministic walk (the lowest allowed non-EOS token each step)."""
    masker = gg.Masker(compiled)
    state, out = masker.initial_state(), []
    for _ in range(steps):
        words = masker.mask(state)
        out.append(words)
        ids = np.nonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))[0]
        ids = ids[ids != 0]
        if not ids.size:
            break
        state = masker.advance(state, int(ids[len(ids) // 2]))
    return out


def outcome(path: Path, original: gg.CompiledGrammar) -> str:
    """'refused' (ArtifactError naming the file), 'refused by verify', or 'equivalent'; anything else fails.

    A file that loads must also be usable: a walk on it raises nothing but a TokenRejectedError
    (rows that lie about a token's end state let the mask allow a token that ``advance``, lexing
    its bytes, refuses), and a file whose walk raises that must be refused by verify.
    """
    try:
        loaded = gg.load(path)
    except gg.ArtifactError as exc:
        assert str(path) in str(exc), str(exc)
        return "refused"
    try:
        masks_along(loaded)
        walked = True
    except gg.TokenRejectedError:
        walked = False
    try:
        verified = gg.load(path, verify=True)
    except gg.ArtifactError as exc:
        assert str(path) in str(exc) and "fails verification" in str(exc), str(exc)
        return "refused by verify"
    assert walked, "a file that passed verification allowed a token that advance refused"
    for a, b in zip(masks_along(original), masks_along(verified), strict=True):
        assert np.array_equal(a, b), "a file that passed verification masks differently"
    return "equivalent"


# ------------------------------------------------------------------ specific faults


def test_header_without_grammar_or_vocab(bases, tmp_path) -> None:
    header, arrays = read_artifact(bases["calc"][0])
    for field in ("grammar", "vocab", "terminals", "lalr"):
        edited = copy.deepcopy(header)
        del edited[field]
        path = tmp_path / f"no-{field}.ggc"
        write_artifact(path, edited, arrays)
        refused(path, f"lacks {field}")


def test_extra_and_mistyped_fields(bases, tmp_path) -> None:
    header, arrays = read_artifact(bases["calc"][0])
    path = tmp_path / "edited.ggc"
    for edit, match in (
        (lambda h: h.update(extra=1), "unexpected extra"),
        (lambda h: h["grammar"].update(start=3), "grammar.start must be a string"),
        (lambda h: h["vocab"].update(eos_token_ids=[True]), "eos_token_ids[0] must be a number"),
        (lambda h: h["terminals"][0].update(priority="high"), "terminals[0].priority"),
        (lambda h: h["lalr"].update(start_state=10**6), "lalr.start_state"),
        (lambda h: h["vocab"].update(vocab_size=1), "vocabulary is invalid"),
    ):
        edited = copy.deepcopy(header)
        edit(edited)
        write_artifact(path, edited, arrays)
        refused(path, match)


def test_swapped_grammar_text(bases, tmp_path) -> None:
    header, arrays = read_artifact(bases["calc"][0])
    other = CALC.replace("[0-9]+", "[0-7]+")
    header["grammar"]["text"] = other
    path = tmp_path / "swapped.ggc"
    write_artifact(path, header, arrays)
    refused(path, "does not match grammar.text_sha256")
    header["grammar"]["text_sha256"] = hashlib.sha256(other.encode()).hexdigest()
    write_artifact(path, header, arrays)
    refused(path, "do not match grammar.fingerprint")
    header["grammar"]["fingerprint"] = gg.Grammar(other).fingerprint()
    write_artifact(path, header, arrays)
    gg.load(path)  # every stored hash agrees: only compiling again tells
    refused(path, "fails verification: lexer_delta", verify=True)


def test_verify_accepts_good_files(bases) -> None:
    for path, compiled in bases.values():
        assert gg.load(path, verify=True).summary() == compiled.summary()


def test_array_faults(bases, tmp_path) -> None:
    header, arrays = read_artifact(bases["go"][0])
    q = arrays["lexer_delta"].shape[0]
    n_rows = len(arrays["outcome_term"])
    end_row = int(np.nonzero(arrays["outcome_term"] == -2)[0][0])
    link_row = int(np.nonzero(arrays["outcome_term"] >= 0)[0][0])
    not_risky = int(np.nonzero(~bases["go"][1].lexer.risky)[0][1])
    cases = [
        ("lexer_delta", lambda a: a["lexer_delta"].astype(np.int64), "lexer_delta is int64"),
        ("lexer_delta", lambda a: a["lexer_delta"][:-1], "lexer_accept has shape"),
        ("lexer_delta", lambda a: _set(a["lexer_delta"], (1, 65), q), "lexer_delta holds"),
        ("lexer_accept_next", lambda a: _set(a["lexer_accept_next"], (0, 97), 0), "start state accepts"),
        ("lexer_ext_state", lambda a: _set(a["lexer_ext_state"], (0,), not_risky), "extended state 0"),
        ("lexer_ext_pending_lengths", lambda a: _set(a["lexer_ext_pending_lengths"], (0,), 99), "pending"),
        ("lalr_action", lambda a: _set(a["lalr_action"], (0, 0), -10**6), "lalr_action holds"),
        ("lalr_goto", lambda a: a["lalr_goto"][:, :-1], "lalr_goto has shape"),
        ("suffix", lambda a: _set(a["suffix"], (0,), n_rows), "suffix holds"),
        ("suffix", lambda a: _set(a["suffix"], (0,), -3), "suffix holds"),
        ("suffix", lambda a: a["suffix"][:-1], "suffix has shape"),
        ("outcome_next", lambda a: _set(a["outcome_next"], (link_row,), link_row), "link out of range"),
        ("outcome_next", lambda a: _set(a["outcome_next"], (end_row,), q + 10**4), "link out of range"),
        ("vocab_lengths", lambda a: _set(a["vocab_lengths"], (5,), -5), "vocab_lengths holds"),
    ]
    path = tmp_path / "edited.ggc"
    for name, edit, match in cases:
        edited = dict(arrays)
        edited[name] = edit(arrays)
        write_artifact(path, copy.deepcopy(header), edited)
        refused(path, match)
    for edited, match in (
        ({k: v for k, v in arrays.items() if k != "suffix"}, "lacks arrays ['suffix']"),
        ({**arrays, "extra": np.zeros(1)}, "unexpected arrays ['extra']"),
    ):
        write_artifact(path, copy.deepcopy(header), edited)
        refused(path, match)


def _set(array: np.ndarray, at: tuple, value: int) -> np.ndarray:
    out = array.copy()
    out[at] = value
    return out


# ------------------------------------------------------------------ fuzz


def _json_paths(value, path=()) -> list[tuple]:
    """Every path (keys and indices) into the header below the top level's integrity fields."""
    out = [path] if path else []
    if isinstance(value, dict):
        for k, v in value.items():
            if not (not path and k == "payload_sha256"):
                out += _json_paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value[:3]):  # a few items of long lists
            out += _json_paths(v, (*path, i))
    return out


_OTHER_TYPES = [None, True, 7, -1, 2.5, "x", [], {}, [1], {"a": 1}]


def _mutate_header(header: dict, rng: np.random.Generator) -> str:
    paths = _json_paths(header)
    path = paths[rng.integers(len(paths))]
    parent = header
    for key in path[:-1]:
        parent = parent[key]
    kind = ("drop", "retype", "extra")[rng.integers(3)]
    if kind == "drop":
        del parent[path[-1]]
    elif kind == "retype":
        current = parent[path[-1]]
        choices = [v for v in _OTHER_TYPES if type(v) is not type(current)]
        parent[path[-1]] = copy.deepcopy(choices[rng.integers(len(choices))])
    else:
        target = parent if isinstance(parent, dict) else header
        target["unexpected"] = 0
    return f"{kind} {'.'.join(map(str, path))}"


_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.float64, np.bool_, ">i4"]


def _mutate_arrays(arrays: dict[str, np.ndarray], rng: np.random.Generator) -> str:
    names = sorted(arrays)
    name = names[rng.integers(len(names))]
    x = arrays[name]
    kind = ("drop", "extra", "dtype", "shape", "value", "value", "value")[rng.integers(7)]
    if kind == "drop":
        del arrays[name]
    elif kind == "extra":
        arrays[f"{name}_copy"] = x
    elif kind == "dtype":
        choices = [d for d in _DTYPES if np.dtype(d) != x.dtype]
        arrays[name] = x.astype(choices[rng.integers(len(choices))])
    elif kind == "shape":
        shapes = [x.reshape(-1), x[:-1], np.concatenate([x, x[:1]]), x[None]]
        arrays[name] = shapes[rng.integers(len(shapes))]
    elif x.size:
        y = x.copy().reshape(-1)
        limit = np.iinfo(x.dtype).max if x.dtype.kind in "iu" else 1
        values = [-(2**31) if x.dtype.kind == "i" else 0, -1000, -7, -2, -1, 0, 1, 3, limit, int(x.max()) + 1]
        value = values[rng.integers(len(values))]
        if x.dtype.kind in "iu" and not np.iinfo(x.dtype).min <= value <= np.iinfo(x.dtype).max:
            value = limit
        y[rng.integers(y.size)] = value
        arrays[name] = y.reshape(x.shape)
    return f"{kind} {name}"


@pytest.mark.parametrize("base,rounds", [("calc", 300), ("go", 80), ("python", 30)])
def test_fuzzed_files_are_refused_or_equivalent(bases, tmp_path, base, rounds) -> None:
    path0, original = bases[base]
    header0, arrays0 = read_artifact(path0)
    rng = np.random.default_rng(zlib_seed(base))
    path = tmp_path / f"{base}-fuzzed.ggc"
    seen: dict[str, int] = {}
    for i in range(rounds):
        header, arrays = copy.deepcopy(header0), dict(arrays0)
        edit = _mutate_header(header, rng) if i % 2 == 0 else _mutate_arrays(arrays, rng)
        write_artifact(path, header, arrays)
        try:
            got = outcome(path, original)
        except AssertionError as exc:
            raise AssertionError(f"round {i}, {edit}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the point: nothing but ArtifactError escapes load
            raise AssertionError(f"round {i}, {edit}: {type(exc).__name__}: {exc}") from exc
        seen[got] = seen.get(got, 0) + 1
    print(f"{base}: {seen}")
    assert seen.get("refused", 0) > rounds // 2, seen


def zlib_seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
