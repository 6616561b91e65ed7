"""apply_token_bitmask_inplace against an independent numpy reference; numpy bitmask helpers round trip."""

from __future__ import annotations

import numpy as np
import pytest

import greatgramma as gg

try:
    import torch

    from greatgramma.kernels import torch as gk
except ImportError:  # the numpy helper tests still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed (pip install '.[torch]')")
DTYPES = ["float32", "float16", "bfloat16"]


def as_dtype(name: str):
    return getattr(torch, name)


def ref_allowed(bitmask: np.ndarray, vocab: int) -> np.ndarray:
    """bool (B, vocab): bit t & 31 of word t >> 5, low bit first; columns past 32 * W are not allowed."""
    bm = np.atleast_2d(np.asarray(bitmask, dtype="<i4"))
    bits = np.unpackbits(bm.view(np.uint8), axis=1, bitorder="little").astype(bool)
    out = np.zeros((bm.shape[0], vocab), dtype=bool)
    n = min(vocab, bits.shape[1])
    out[:, :n] = bits[:, :n]
    return out


def expected(logits: "torch.Tensor", bitmask: np.ndarray, rows: list[int] | None) -> "torch.Tensor":
    allowed = ref_allowed(bitmask, logits.shape[-1])
    want = logits.clone()
    want2 = want.view(-1, logits.shape[-1])
    for r in range(want2.shape[0]) if rows is None else sorted(set(rows)):
        want2[r][torch.from_numpy(~allowed[r])] = float("-inf")
    return want


def random_bitmask(rng: np.random.Generator, rows: int, words: int, density: float) -> np.ndarray:
    bits = rng.random((rows, 32 * words)) < density
    return np.packbits(bits, axis=1, bitorder="little").view("<i4").astype(np.int32).reshape(rows, words)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("batch", "vocab", "words"),
    [
        (3, 100, 4),  # V % 32 != 0, W = ceil(V / 32)
        (2, 128, 4),  # V % 32 == 0
        (4, 130, 4),  # logits wider than the bitmask: the last 2 columns are disallowed
        (2, 50, 3),  # bitmask wider than the logits: extra bits ignored
        (1, 1000, 32),  # 1000 = 31 * 32 + 8
        (5, 1, 1),
    ],
)
def test_kernel_matches_reference(dtype, batch: int, vocab: int, words: int) -> None:
    rng = np.random.default_rng(batch * 1000 + vocab)
    for density in (0.0, 0.03, 0.5, 1.0):
        logits = torch.from_numpy(rng.standard_normal((batch, vocab)).astype(np.float32)).to(as_dtype(dtype))
        bm = random_bitmask(rng, batch, words, density)
        want = expected(logits, bm, None)
        got = logits.clone()
        gk.apply_token_bitmask_inplace(got, torch.from_numpy(bm))
        assert torch.equal(got, want)
        got = logits.clone()
        gg.apply_token_bitmask_inplace(got, bm)  # numpy bitmask, top-level name
        assert torch.equal(got, want)


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_with_indices(dtype) -> None:
    rng = np.random.default_rng(7)
    batch, vocab, words = 6, 77, 3
    logits = torch.from_numpy(rng.standard_normal((batch, vocab)).astype(np.float32)).to(as_dtype(dtype))
    bm = random_bitmask(rng, batch, words, 0.3)
    for rows in ([0, 3, 5], [4], [2, 2, 1], []):
        want = expected(logits, bm, rows)
        for idx in (rows, np.array(rows, dtype=np.int64), torch.tensor(rows, dtype=torch.int32)):
            got = logits.clone()
            gk.apply_token_bitmask_inplace(got, torch.from_numpy(bm), idx)
            assert torch.equal(got, want), (rows, type(idx))


@needs_torch
def test_indices_into_a_larger_bitmask() -> None:
    """Indices name logits rows and bitmask rows alike; either may have more rows than used."""
    rng = np.random.default_rng(3)
    logits = torch.randn(2, 64)
    bm = random_bitmask(rng, 5, 2, 0.5)
    want = expected(logits, bm[:2], [1])
    got = logits.clone()
    gk.apply_token_bitmask_inplace(got, bm, [1])
    assert torch.equal(got, want)
    with pytest.raises(IndexError):
        gk.apply_token_bitmask_inplace(got, bm, [2])
    with pytest.raises(IndexError):
        gk.apply_token_bitmask_inplace(got, bm, [-1])


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_1d(dtype) -> None:
    rng = np.random.default_rng(11)
    for vocab, words in ((45, 2), (70, 2), (10, 4)):
        logits = torch.from_numpy(rng.standard_normal(vocab).astype(np.float32)).to(as_dtype(dtype))
        bm = random_bitmask(rng, 1, words, 0.4)[0]
        want = expected(logits, bm, None)
        for mask in (torch.from_numpy(bm), torch.from_numpy(bm[None, :])):
            got = logits.clone()
            gk.apply_token_bitmask_inplace(got, mask)
            assert got.shape == (vocab,) and torch.equal(got, want)


@needs_torch
def test_non_contiguous_logits_are_written_in_place() -> None:
    rng = np.random.default_rng(5)
    full = torch.randn(3, 4, 90)  # e.g. model outputs (B, T, V); mask the last position
    view = full[:, -1, :]
    assert not view.is_contiguous()
    bm = random_bitmask(rng, 3, 3, 0.5)
    want = expected(view, bm, None)
    before = full[:, :-1, :].clone()
    gk.apply_token_bitmask_inplace(view, bm)
    assert torch.equal(full[:, -1, :], want) and torch.equal(full[:, :-1, :], before)
    want = expected(full[:, 0, :], bm, [0, 2])
    gk.apply_token_bitmask_inplace(full[:, 0, :], bm, [0, 2])
    assert torch.equal(full[:, 0, :], want)


@needs_torch
def test_matcher_mask_through_kernel(calc_compiled) -> None:
    """End to end: a matcher's mask leaves exactly its allowed tokens finite, padding ids included."""
    m = gg.Matcher(calc_compiled)
    v = calc_compiled.vocab.vocab_size
    bm = gk.allocate_token_bitmask(1, v)
    assert bm.dtype == torch.int32 and tuple(bm.shape) == gk.get_bitmask_shape(1, v) and (bm == -1).all()
    m.fill_next_token_bitmask(bm)
    logits = torch.zeros(1, v + 40)  # the model's logits are wider than the vocabulary
    gk.apply_token_bitmask_inplace(logits, bm)
    finite = set(torch.nonzero(torch.isfinite(logits[0])).flatten().tolist())
    ok = {t for t in range(v) if m.validate_tokens([t]) == 1}
    assert finite == ok and ok


@needs_torch
def test_errors() -> None:
    logits = torch.zeros(2, 40)
    with pytest.raises(TypeError, match="int32"):
        gk.apply_token_bitmask_inplace(logits, torch.zeros(2, 2, dtype=torch.int64))
    with pytest.raises(TypeError, match="floating"):
        gk.apply_token_bitmask_inplace(torch.zeros(2, 40, dtype=torch.int32), torch.zeros(2, 2, dtype=torch.int32))
    with pytest.raises(ValueError, match="rows"):
        gk.apply_token_bitmask_inplace(logits, torch.zeros(3, 2, dtype=torch.int32))
    with pytest.raises(ValueError):
        gk.apply_token_bitmask_inplace(torch.zeros(1, 2, 40), torch.zeros(2, dtype=torch.int32))
    with pytest.raises(ValueError, match="CUDA"):
        gk.apply_token_bitmask_inplace(logits, torch.zeros(2, 2, dtype=torch.int32), backend="triton")
    with pytest.raises(ValueError, match="backend"):
        gk.apply_token_bitmask_inplace(logits, torch.zeros(2, 2, dtype=torch.int32), backend="cuda")


@needs_torch
def test_plain_path_on_cpu() -> None:
    assert gk.triton_available() is False or torch.cuda.is_available()


@pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="no CUDA device: the Triton/CUDA path is not exercised here")
@pytest.mark.parametrize("backend", ["auto", "torch"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_on_cuda(dtype, backend: str) -> None:
    rng = np.random.default_rng(13)
    for batch, vocab, words, rows in ((3, 100, 4, None), (4, 130, 4, [1, 3]), (2, 50, 3, None), (2, 128256, 4008, [0])):
        logits = torch.from_numpy(rng.standard_normal((batch, vocab)).astype(np.float32)).to(as_dtype(dtype))
        bm = random_bitmask(rng, batch, words, 0.5)
        want = expected(logits, bm, rows)
        got = logits.cuda()
        gk.apply_token_bitmask_inplace(got, torch.from_numpy(bm).cuda(), rows, backend=backend)
        assert torch.equal(got.cpu(), want)


# ------------------------------------------------------------------ numpy helpers


def test_numpy_helpers_round_trip() -> None:
    rng = np.random.default_rng(1)
    for vocab in (1, 31, 32, 33, 100, 1000):
        allowed = rng.random((3, vocab)) < 0.5
        words = gg.bool_to_bitmask(allowed)
        assert words.dtype == np.int32 and words.shape == gg.get_bitmask_shape(3, vocab)
        assert np.array_equal(ref_allowed(words, vocab), allowed)
        assert np.array_equal(gg.bitmask_to_bool(words, vocab), allowed)
        wide = gg.bool_to_bitmask(allowed, num_words=words.shape[1] + 2)
        assert np.array_equal(wide[:, : words.shape[1]], words) and (wide[:, words.shape[1] :] == 0).all()
        assert np.array_equal(gg.bitmask_to_bool(wide, vocab + 70)[:, :vocab], allowed)
        assert not gg.bitmask_to_bool(words, vocab + 70)[:, vocab:].any()  # past 32 * W: not allowed
    words = random_bitmask(rng, 2, 5, 0.5)
    assert np.array_equal(gg.bool_to_bitmask(gg.bitmask_to_bool(words, 160)), words)
    assert np.array_equal(gg.bitmask_to_bool(words[0], 160), ref_allowed(words[0], 160)[0])  # 1-D
    with pytest.raises(ValueError):
        gg.bool_to_bitmask(allowed, num_words=1)
    with pytest.raises(TypeError):
        gg.bitmask_to_bool(words.astype(np.int64), 160)
    assert (gg.allocate_token_bitmask(2, 33) == -1).all() and gg.allocate_token_bitmask(2, 33).shape == (2, 2)
    if torch is None:
        return
    t = gg.allocate_token_bitmask(2, 33, torch=True)
    assert isinstance(t, torch.Tensor) and t.dtype == torch.int32 and tuple(t.shape) == (2, 2)
