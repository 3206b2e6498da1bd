"""The merge of a split forward's runs (sm90.schedule.split_plan) into O and the log-sum-exp.

Every run leaves its rows' O normalised by its own sums, in fp32, and its log-sum-exp in base 2;
`combine` merges the runs of each tile as softmax over the union of their keys does:
    LSE = log2(sum_p 2^LSE_p),  O = sum_p 2^(LSE_p - LSE) O_p.
A Triton kernel (it needs no Hopper feature), one program per ROWS rows of a split tile, with
all of its runs loaded at once and merged as reductions over them.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from lmperf.attention.launch import CachedLaunch
from lmperf.attention.sm90.tuning import COMBINE_ELEMENTS


def buffers(runs: int, rows: int, head_dim: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The runs' O (runs, rows, head_dim) and base-2 log-sum-exp (runs, rows), fp32."""
    return (torch.empty((runs, rows, head_dim), dtype=torch.float32, device=device),
            torch.empty((runs, rows), dtype=torch.float32, device=device))


@triton.jit
def _combine_kernel(PART_O, PART_LSE, O, LSE, whole, parts, n_m, H, seq_q, stride_ob, stride_oh, stride_on,
                    BLOCK_M: tl.constexpr, ROWS: tl.constexpr, RUNS: tl.constexpr, HEAD_DIM: tl.constexpr,
                    COLUMNS: tl.constexpr):
    # RUNS: parts padded to a power of two. Every run's loads are issued at once: merged one run
    # at a time, each run's loads would wait for the one before.
    r = tl.program_id(0)
    tile = whole + r
    tile_m = tile % n_m
    bh = tile // n_m
    rows = tl.program_id(1) * ROWS + tl.arange(0, ROWS)
    runs = tl.arange(0, RUNS)
    cols = tl.arange(0, COLUMNS)
    present = runs < parts
    first = (r * parts + runs).to(tl.int64)[:, None] * BLOCK_M + rows[None, :]  # (RUNS, ROWS): rows of the runs' buffers
    lse = tl.load(PART_LSE + first, mask=present[:, None], other=float("-inf"))
    m = tl.max(lse, 0)
    weight = tl.exp2(lse - m[None, :])  # absent runs: 0
    total = tl.sum(weight, 0)
    o_runs = tl.load(PART_O + first[:, :, None] * HEAD_DIM + cols[None, None, :],
                     mask=present[:, None, None] & (cols[None, None, :] < HEAD_DIM), other=0.0)
    o = tl.sum(o_runs * weight[:, :, None], 0) / total[:, None]
    row = tile_m * BLOCK_M + rows
    out = O + (bh // H).to(tl.int64) * stride_ob + (bh % H).to(tl.int64) * stride_oh + row[:, None] * stride_on + cols[None, :]
    tl.store(out, o.to(O.dtype.element_ty), mask=(row[:, None] < seq_q) & (cols[None, :] < HEAD_DIM))
    # natural log (divided by log2(e)), as the forward's own rows: the backward reads it so
    tl.store(LSE + bh.to(tl.int64) * seq_q + row, (m + tl.log2(total)) / 1.4426950408889634, mask=row < seq_q)


_COMBINE_LAUNCH = CachedLaunch(_combine_kernel)


def rows_per_program(block_m: int, padded_runs: int, columns: int) -> int:
    """A power of two dividing the tile's rows (at most 64), and at most COMBINE_ELEMENTS run x
    row x column values loaded at once (one row where even that is more)."""
    rows = math.gcd(block_m, 64)
    while rows > 1 and padded_runs * rows * columns > COMBINE_ELEMENTS:
        rows //= 2
    return rows


def combine(part_o: torch.Tensor, part_lse: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, whole: int,
            parts: int, n_m: int) -> None:
    """Write O (B, H, seq_q, d), any strides with unit-stride d, and LSE (B, H, seq_q), natural
    log, of the split tiles (whole onwards, n_m query tiles a batch x head) from their runs."""
    runs, block_m, head_dim = part_o.shape
    _, heads, seq_q, _ = o.shape
    padded_runs, columns = triton.next_power_of_2(parts), triton.next_power_of_2(head_dim)
    rows = rows_per_program(block_m, padded_runs, columns)
    _COMBINE_LAUNCH((runs // parts, block_m // rows), part_o, part_lse, o, lse, whole, parts, n_m, heads, seq_q,
                    o.stride(0), o.stride(1), o.stride(2), BLOCK_M=block_m, ROWS=rows, RUNS=padded_runs,
                    HEAD_DIM=head_dim, COLUMNS=columns)
