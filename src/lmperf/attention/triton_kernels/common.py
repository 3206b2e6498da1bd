"""Pieces the portable FlashAttention-2 kernels share: key ranges, row masks and loads, the grid."""

from __future__ import annotations

import triton
import triton.language as tl

LOG2E = 1.4426950408889634
# Kernels may read only constexpr globals.
LOG2E_CONSTEXPR = tl.constexpr(LOG2E)
LN2_CONSTEXPR = tl.constexpr(0.6931471805599453)


@triton.jit
def key_ranges(start_m, seq_k, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Key range [0, hi) a query tile sees, and where its tiles start to need a mask."""
    if CAUSAL:
        hi = tl.minimum(seq_k, start_m + BLOCK_M)
        full_end = tl.minimum((start_m + 1) // BLOCK_N, seq_k // BLOCK_N) * BLOCK_N
    else:
        hi = seq_k
        full_end = seq_k // BLOCK_N * BLOCK_N
    return full_end, hi


@triton.jit
def row_mask(offs, limit, offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr):
    """Mask of a (rows, BLOCK_D) tile: rows below `limit` and, if head_dim is padded, real columns."""
    mask = offs[:, None] < limit
    if HEAD_DIM < BLOCK_D:  # a constexpr test: unpadded tiles keep their 16-byte loads
        mask = mask & (offs_d[None, :] < HEAD_DIM)
    return mask


@triton.jit
def load_rows(ptrs, offs, limit, offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, MASKED: tl.constexpr):
    """Rows offs of a tile; past `limit` (checked only when MASKED) or head_dim they read as 0."""
    if MASKED:
        return tl.load(ptrs, mask=row_mask(offs, limit, offs_d, HEAD_DIM, BLOCK_D), other=0.0)
    if HEAD_DIM < BLOCK_D:
        return tl.load(ptrs, mask=offs_d[None, :] < HEAD_DIM, other=0.0)
    return tl.load(ptrs)


@triton.jit
def load_second_block(ptrs, offs, limit, MASKED: tl.constexpr):
    """Rows offs of the head_dim's second column block, which is never padded: only rows past
    `limit` (checked when MASKED) read as 0."""
    if MASKED:
        return tl.load(ptrs, mask=offs[:, None] < limit, other=0.0)
    return tl.load(ptrs)


@triton.jit
def visible_scores(offs_m, offs_n, seq_k, CAUSAL: tl.constexpr):
    """(BM, BN) mask of the scores that count: real keys, and key <= query when causal."""
    keep = offs_n[None, :] < seq_k
    if CAUSAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None])
    return keep


@triton.jit
def query_tile(H, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """This program's query tile (first row) and (batch * head, batch, head) from its grid place."""
    tile = tl.program_id(0)
    if CAUSAL:  # the last query tiles see the most keys: start them first
        tile = tl.num_programs(0) - 1 - tile
    bh = tl.program_id(1)
    return tile * BLOCK_M, bh, (bh // H).to(tl.int64), (bh % H).to(tl.int64)
