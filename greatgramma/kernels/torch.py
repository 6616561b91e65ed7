"""Apply token bitmasks to torch logits in place: plain torch on any device, a Triton kernel on CUDA when available."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from .layout import get_bitmask_shape

__all__ = ["allocate_token_bitmask", "apply_token_bitmask_inplace", "get_bitmask_shape", "triton_available"]

_TRITON_BLOCK = 4096
_triton_kernel: Any = None  # built on first use
_triton_state: bool | None = None  # None: not probed yet; False: unavailable or failed once


def allocate_token_bitmask(batch_size: int, vocab_size: int, *, device: Any = None) -> torch.Tensor:
    """An int32 tensor of shape ``get_bitmask_shape(batch_size, vocab_size)`` with every token allowed (-1).

    On the CPU (the default) it is pinned when CUDA is available, so copies to the GPU can overlap.
    """
    dev = torch.device("cpu") if device is None else torch.device(device)
    pin = dev.type == "cpu" and torch.cuda.is_available()
    return torch.full(get_bitmask_shape(batch_size, vocab_size), -1, dtype=torch.int32, device=dev, pin_memory=pin)


def apply_token_bitmask_inplace(
    logits: torch.Tensor,
    bitmask: torch.Tensor | np.ndarray,
    indices: Sequence[int] | torch.Tensor | np.ndarray | None = None,
    *,
    backend: str = "auto",
) -> None:
    """Set every disallowed logit to -inf, in place.

    ``logits`` is ``(B, V)`` or ``(V,)`` (float32, float16, bfloat16 or float64, any device);
    ``bitmask`` is int32 ``(B', W)`` or ``(W,)`` (torch or numpy; moved to the logits' device),
    where token ``t`` is allowed when bit ``t & 31`` of word ``t >> 5`` is set. Columns at or past
    ``32 * W`` are disallowed; bits past ``V`` are ignored.

    ``indices`` (as in xgrammar) lists the rows to mask: row ``i`` of the logits is masked with row
    ``i`` of the bitmask, for each ``i`` in ``indices``; other rows are left untouched. Without it,
    every row is masked and the bitmask must have as many rows as the logits.

    ``backend``: "auto" uses the Triton kernel for CUDA tensors when ``triton`` imports (and
    ``GREATGRAMMA_DISABLE_TRITON`` is unset), else plain torch ops; "torch" or "triton" force one.
    """
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(f"logits must be a floating-point torch tensor, got {_describe(logits)}")
    if isinstance(bitmask, np.ndarray):
        bitmask = torch.from_numpy(np.ascontiguousarray(bitmask))
    if not isinstance(bitmask, torch.Tensor) or bitmask.dtype != torch.int32:
        raise TypeError(f"bitmask must be an int32 torch tensor or numpy array, got {_describe(bitmask)}")
    if logits.dim() not in (1, 2) or bitmask.dim() not in (1, 2):
        raise ValueError(
            f"logits must be (B, V) or (V,) and bitmask (B, W) or (W,); got {tuple(logits.shape)} "
            f"and {tuple(bitmask.shape)}"
        )
    logits2 = logits.unsqueeze(0) if logits.dim() == 1 else logits  # views: writes reach ``logits``
    mask2 = bitmask.unsqueeze(0) if bitmask.dim() == 1 else bitmask
    if mask2.device != logits.device:
        mask2 = mask2.to(logits.device)  # blocking: the caller may refill its host bitmask right after
    idx = _indices(indices, logits2.shape[0], mask2.shape[0], logits.device)
    if idx is None and logits2.shape[0] != mask2.shape[0]:
        raise ValueError(
            f"logits have {logits2.shape[0]} rows but the bitmask has {mask2.shape[0]}; pass indices to mask a subset"
        )
    if idx is not None and idx.numel() == 0:
        return
    if backend not in ("auto", "torch", "triton"):
        raise ValueError(f"backend must be 'auto', 'torch' or 'triton', got {backend!r}")
    if backend == "triton" or (backend == "auto" and logits.is_cuda and triton_available()):
        if not logits.is_cuda:
            raise ValueError("backend='triton' needs CUDA tensors")
        if _apply_triton(logits2, mask2, idx, strict=backend == "triton"):
            return
    _apply_torch(logits2, mask2, idx)


def triton_available() -> bool:
    """Whether the Triton path may be used: ``triton`` imports, CUDA is up, and it has not failed before."""
    global _triton_state
    if os.environ.get("GREATGRAMMA_DISABLE_TRITON", "") not in ("", "0"):
        return False
    if _triton_state is None:
        try:
            import triton  # noqa: F401

            _triton_state = torch.cuda.is_available()
        except Exception:  # ImportError, or a broken install
            _triton_state = False
    return _triton_state


# ---------------------------------------------------------------- plain torch


def _apply_torch(logits: torch.Tensor, bitmask: torch.Tensor, idx: torch.Tensor | None) -> None:
    """Unpack the words with shifts on the logits' device and masked_fill (no loop over the vocabulary)."""
    v, w = logits.shape[1], bitmask.shape[1]
    n = min(v, 32 * w)  # columns the bitmask covers
    words = (n + 31) // 32
    rows = bitmask if idx is None else bitmask.index_select(0, idx)
    shifts = torch.arange(32, dtype=torch.int32, device=logits.device)
    blocked = ((rows[:, :words, None] >> shifts) & 1) == 0  # (R, words, 32), arithmetic shift is fine: we keep one bit
    blocked = blocked.reshape(rows.shape[0], 32 * words)[:, :n]
    neg_inf = float("-inf")
    if idx is None:
        logits[:, :n].masked_fill_(blocked, neg_inf)
        if v > n:
            logits[:, n:].fill_(neg_inf)
        return
    sub = logits.index_select(0, idx)
    sub[:, :n].masked_fill_(blocked, neg_inf)
    if v > n:
        sub[:, n:].fill_(neg_inf)
    logits.index_copy_(0, idx, sub)  # duplicate indices write identical rows


def _indices(indices: Any, logit_rows: int, mask_rows: int, device: torch.device) -> torch.Tensor | None:
    """Indices as an int64 tensor on ``device``, bounds-checked when they come from the host."""
    if indices is None:
        return None
    if isinstance(indices, torch.Tensor):
        if indices.dtype not in (torch.int32, torch.int64) or indices.dim() != 1:
            raise TypeError(f"indices must be a 1-D integer tensor, got {_describe(indices)}")
        host = indices if indices.device.type == "cpu" else None
        idx = indices.to(device=device, dtype=torch.int64)
    else:
        arr = np.asarray(indices)
        if arr.size == 0:
            arr = arr.astype(np.int64)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise TypeError(f"indices must be a 1-D sequence of ints, got {indices!r}")
        host = torch.from_numpy(arr.astype(np.int64))
        idx = host.to(device)
    if host is not None and host.numel():
        lo, hi, limit = int(host.min()), int(host.max()), min(logit_rows, mask_rows)
        if lo < 0 or hi >= limit:
            raise IndexError(
                f"indices must lie in [0, {limit}) for logits with {logit_rows} rows and a bitmask with "
                f"{mask_rows} rows; got min {lo}, max {hi}"
            )
    return idx


def _describe(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"torch tensor {x.dtype} {tuple(x.shape)}"
    if isinstance(x, np.ndarray):
        return f"numpy array {x.dtype} {x.shape}"
    return type(x).__name__


# ---------------------------------------------------------------- Triton (CUDA)


def _build_triton_kernel() -> Any:
    """One program per (row, block of BLOCK columns): load each column's word, test its bit, store -inf."""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(
        logits_ptr,
        bitmask_ptr,
        indices_ptr,
        n_cols,
        n_words,
        logits_stride,
        bitmask_stride,
        HAS_INDICES: tl.constexpr,
        BLOCK: tl.constexpr,
    ):
        r = tl.program_id(0)
        if HAS_INDICES:
            row = tl.load(indices_ptr + r).to(tl.int64)
        else:
            row = r.to(tl.int64)
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        in_row = cols < n_cols
        word = cols // 32
        has_word = in_row & (word < n_words)  # columns past 32 * W read as 0: disallowed
        packed = tl.load(bitmask_ptr + row * bitmask_stride + word, mask=has_word, other=0)
        bit = (packed >> (cols % 32)) & 1
        tl.store(logits_ptr + row * logits_stride + cols, float("-inf"), mask=in_row & (bit == 0))

    return kernel


def _apply_triton(logits: torch.Tensor, bitmask: torch.Tensor, idx: torch.Tensor | None, *, strict: bool) -> bool:
    """Run the Triton kernel; False (after one warning) when it cannot, so the caller takes the torch path."""
    global _triton_kernel, _triton_state
    if logits.stride(1) != 1:
        if strict:
            raise ValueError("backend='triton' needs logits with contiguous rows (stride 1 along the vocabulary)")
        return False
    try:
        import triton

        if _triton_kernel is None:
            _triton_kernel = _build_triton_kernel()
        mask = bitmask.contiguous()
        rows = logits.shape[0] if idx is None else idx.numel()
        n_cols = logits.shape[1]
        grid = (rows, triton.cdiv(n_cols, _TRITON_BLOCK))
        _triton_kernel[grid](
            logits,
            mask,
            idx if idx is not None else mask,  # unused when HAS_INDICES is False
            n_cols,
            mask.shape[1],
            logits.stride(0),
            mask.stride(0),
            HAS_INDICES=idx is not None,
            BLOCK=_TRITON_BLOCK,
        )
        return True
    except Exception as exc:  # compile or launch failure: never fail a generation for it
        if strict:
            raise
        _triton_state = False
        warnings.warn(f"greatgramma: Triton bitmask kernel failed ({exc!r}); using the plain torch path", stacklevel=3)
        return False
