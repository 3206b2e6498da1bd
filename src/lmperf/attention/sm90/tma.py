"""What TMA can address: a tensor's alignment, and the column blocks a head_dim is cut into.

Plain torch, so that dispatch can ask before anything imports Gluon.
"""

from __future__ import annotations

import torch


def tma_ready(x: torch.Tensor) -> bool:
    """A TMA descriptor can address x: unit-stride last dim, 16-byte aligned strides and base.
    Asked with real tensors only: torch.compile sees the lmperf::flash_attention operator, never
    what runs inside it."""
    size = x.element_size()
    strides_ok = x.stride(-1) == 1 and all(stride * size % 16 == 0 for stride in x.stride()[:-1])
    return strides_ok and x.data_ptr() % 16 == 0


def aligned(x: torch.Tensor) -> torch.Tensor:
    """x, or a contiguous copy (a fresh allocation, 16-byte aligned) where TMA cannot address it."""
    return x if tma_ready(x) else x.clone(memory_format=torch.contiguous_format)


def column_blocks(head_dim: int) -> tuple[int, int]:
    """The widths of the column blocks the kernels split head_dim into: (head_dim, 0) for a power
    of two, else its largest power of two and the rest, which must be one too, >= 16 (80 = 64 +
    16: wgmma and TMA boxes span powers of two; padding 80 to 128 would compute 60% more)."""
    main = 1 << (head_dim.bit_length() - 1)
    tail = head_dim - main
    if tail and (tail < 16 or tail & (tail - 1)):
        raise ValueError(f"head_dim {head_dim} is not a power of two plus a power of two >= 16")
    return main, tail
