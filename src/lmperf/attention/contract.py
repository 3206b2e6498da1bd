"""The input contract both FlashAttention-2 Functions share: shapes, dtypes, and a 4-d view.

Inputs are (..., seq, head_dim) with any leading dimensions; q, k and v share the leading
dimensions and the head dimension, k and v share their length, and q's length may differ.
Grouped-query attention: with three or more dimensions, the one before seq counts heads, and k
and v may have fewer of them than q (a divisor: query head h reads key/value head h // group).
"""

from __future__ import annotations

import torch

from lmperf.errors import UsageError

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_HEAD_DIM = 256


def check_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """Raise UsageError unless q, k, v fit the contract above."""
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in DTYPES:
        raise UsageError(
            f"q, k, v must share one dtype among float32, float16, bfloat16; got {q.dtype}, {k.dtype}, {v.dtype}"
        )
    if min(q.dim(), k.dim(), v.dim()) < 2:
        raise UsageError("q, k, v need shape (..., seq, head_dim)")
    if k.shape != v.shape or q.dim() != k.dim() or q.shape[:-3] != k.shape[:-3] or group_size(q, k) == 0:
        raise UsageError(
            f"q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}: leading dimensions "
            "must match (k, v may have fewer heads, a divisor of q's) and k, v must have one shape"
        )
    head_dim = q.shape[-1]
    # Multiples of 8 keep every row 16-byte aligned in fp16/bf16 (the kernels' vector loads).
    if head_dim != k.shape[-1] or head_dim % 8 or not 8 <= head_dim <= MAX_HEAD_DIM:
        raise UsageError(
            f"head_dim must be a multiple of 8 up to {MAX_HEAD_DIM} and equal in q and k; "
            f"got {head_dim} and {k.shape[-1]}"
        )
    if q.shape[-2] == 0 or k.shape[-2] == 0:
        raise UsageError("sequence lengths must be positive")
    if not (q.device == k.device == v.device):
        raise UsageError(f"q, k, v are on different devices: {q.device}, {k.device}, {v.device}")


def group_size(q: torch.Tensor, k: torch.Tensor) -> int:
    """Query heads per key/value head (1 without GQA); 0 when k's heads do not divide q's."""
    if q.dim() < 3:
        return 1 if q.shape[:-2] == k.shape[:-2] else 0
    heads, kv_heads = q.shape[-3], k.shape[-3]
    return heads // kv_heads if kv_heads and heads % kv_heads == 0 else 0


def as_4d(x: torch.Tensor) -> torch.Tensor:
    """(..., seq, d) -> (B, H, seq, d) with unit stride along d; a view where one exists.

    Two leading dimensions are kept apart so the model's (B, H, T, hd) slices of a packed qkv
    projection pass without a copy; more than two are merged (a copy only if they can't be).
    """
    if x.dim() == 2:
        x = x[None, None]
    elif x.dim() == 3:
        x = x[None]
    elif x.dim() > 4:
        x = x.reshape(-1, *x.shape[-3:])
    return x if x.stride(-1) == 1 else x.contiguous()
