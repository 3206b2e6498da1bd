"""Attention implementations behind one function.

`attention(q, k, v, is_causal, impl)` takes inputs of shape (..., seq, head_dim) and dispatches:
- naive: explicit scores, masked softmax, weighted sum (lmperf.attention.naive);
- sdpa: torch.nn.functional.scaled_dot_product_attention (PyTorch picks its backend);
- torch: FlashAttention-2 tiled in PyTorch (lmperf.attention.flash_torch);
- triton: FlashAttention-2 in Triton (lmperf.attention.flash_triton).
The FlashAttention modules are imported on first use, so Triton is needed only by `triton`.
"""

from __future__ import annotations

import importlib
from typing import Callable

import torch
import torch.nn.functional as F

from lmperf import regions
from lmperf.attention.naive import naive_attention, naive_attention_with_lse
from lmperf.errors import UsageError

AttentionFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, bool], torch.Tensor]


def _sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> torch.Tensor:
    with regions.region(regions.ATTN_FUSED):
        return F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)


def _flash_function(module: str, name: str) -> AttentionFn:
    def run(q, k, v, is_causal):
        function = getattr(importlib.import_module(module), name)
        with regions.region(regions.ATTN_FUSED):
            return function.apply(q, k, v, is_causal)

    return run


IMPLEMENTATIONS: dict[str, AttentionFn] = {
    "naive": naive_attention,
    "sdpa": _sdpa,
    "torch": _flash_function("lmperf.attention.flash_torch", "FlashAttention2Torch"),
    "triton": _flash_function("lmperf.attention.flash_triton", "FlashAttention2Triton"),
}


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    is_causal: bool = False,
    impl: str = "sdpa",
) -> torch.Tensor:
    """Scaled dot-product attention over (..., seq, head_dim) inputs with the chosen `impl`."""
    if impl not in IMPLEMENTATIONS:
        raise UsageError(
            f"unknown attention implementation {impl!r}; choose from {', '.join(IMPLEMENTATIONS)}"
        )
    return IMPLEMENTATIONS[impl](q, k, v, is_causal)


__all__ = ["IMPLEMENTATIONS", "attention", "naive_attention", "naive_attention_with_lse"]
