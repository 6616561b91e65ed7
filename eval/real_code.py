"""What the real-code evals (``go_real_code``, ``python_real_code``) share: mutating a source file,
and walking a file's tokens through a masker with every mask timed."""

from __future__ import annotations

import random
import time


def mutate(data: bytes, rng: random.Random, inserted: bytes) -> bytes:
    """One random edit of a source file: a line dropped, doubled or swapped, a byte deleted, or
    one of ``inserted`` (the language's punctuation, mostly) inserted."""
    lines = data.split(b"\n")
    kind = rng.choice(["drop", "double", "swap", "delete", "insert"])
    i = rng.randrange(len(lines))
    if kind == "drop":
        del lines[i]
    elif kind == "double":
        lines.insert(i, lines[i])
    elif kind == "swap" and len(lines) > 1:
        j = min(i + 1, len(lines) - 1)
        lines[i], lines[j] = lines[j], lines[i]
    else:
        pos = rng.randrange(max(1, len(data)))
        if kind == "delete":
            return data[:pos] + data[pos + 1 :]
        return data[:pos] + bytes([rng.choice(inserted)]) + data[pos:]
    return b"\n".join(lines)


def timed_walk(masker, ids: list[int], times: list[float]) -> int | None:
    """Walk ``ids`` (the last one EOS) from the initial state, appending each mask's seconds to
    ``times``; the index of the first token the mask refuses, or None."""
    import greatgramma as gg

    vocab_size = masker.compiled.vocab.vocab_size
    state = masker.initial_state()
    for i, tok in enumerate(ids):
        t = time.perf_counter()
        words = masker.mask(state)
        times.append(time.perf_counter() - t)
        if not gg.bitmask_to_bool(words, vocab_size)[tok]:
            return i
        if i < len(ids) - 1:
            state = masker.advance(state, tok)
    return None
