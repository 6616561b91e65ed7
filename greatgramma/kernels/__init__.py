"""Bitmask kernels for logits libraries; ``greatgramma.kernels.torch`` holds the torch ones (imported on first use)."""

from __future__ import annotations

from typing import Any

__all__ = ["apply_token_bitmask_inplace"]


def apply_token_bitmask_inplace(logits: Any, bitmask: Any, indices: Any = None, **kwargs: Any) -> None:
    """Disallowed logits -> -inf in place; see ``greatgramma.kernels.torch.apply_token_bitmask_inplace``.

    Lives here so that ``import greatgramma`` does not import torch.
    """
    from .torch import apply_token_bitmask_inplace as apply

    apply(logits, bitmask, indices, **kwargs)
