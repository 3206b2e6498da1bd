"""A persistent forward's last round of query tiles split over their keys, and the merge of the parts.

The non-causal persistent forward (flash_gluon) gives each SM's program the equal-cost query
tiles pid, pid + programs, ... At the sweep's shapes that is 4096 tiles on 132 SMs: 31 rounds on
every SM, then a 32nd in which 4 SMs work and 128 wait, about 3% of the forward spent idle. Here
the R tiles of that last round are each cut into `parts` runs of their key tiles, one run per
idle program (FlashDecoding's split over keys, for the last round only); every run leaves its
rows' O normalised by its own sum, in fp32, and its log-sum-exp in base 2; `combine` merges the
runs of each tile as softmax over the union of their keys does:
    LSE = log2(sum_p 2^LSE_p),  O = sum_p 2^(LSE_p - LSE) O_p.
The forward launches its kernel twice: for the first `whole` tiles, which fill every round, and
with PIECES for the R x parts runs (item r x parts + p: run p of tile whole + r), one a program.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl

from lmperf.attention.launch import CachedLaunch


def plan(tiles: int, programs: int, key_tiles: int) -> tuple[int, int]:
    """(whole, parts): the first `whole` query tiles run whole and the other tiles - whole each as
    `parts` runs of their key tiles, so that the last round has a run for as many programs as it
    can. parts is 1 (nothing split) when the tiles fill every round, when the last round is more
    than half full (two runs a tile would not fit the programs), or with a single key tile."""
    last = tiles % programs
    if last == 0:
        return tiles, 1
    parts = min(programs // last, key_tiles)
    if parts < 2:
        return tiles, 1
    return tiles - last, parts


def key_range(part: int, parts: int, key_tiles: int) -> tuple[int, int]:
    """[first, stop) key tiles of run `part` of `parts` over `key_tiles` (runs differ by at most one
    tile); the kernel computes the same."""
    return part * key_tiles // parts, (part + 1) * key_tiles // parts


def buffers(runs: int, rows: int, head_dim: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The runs' O (runs, rows, head_dim) and base-2 log-sum-exp (runs, rows), fp32."""
    return (torch.empty((runs, rows, head_dim), dtype=torch.float32, device=device),
            torch.empty((runs, rows), dtype=torch.float32, device=device))


@triton.jit
def _combine_kernel(PART_O, PART_LSE, O, LSE, whole, parts, n_m, H, seq_q, stride_ob, stride_oh, stride_on,
                    BLOCK_M: tl.constexpr, ROWS: tl.constexpr, RUNS: tl.constexpr, HEAD_DIM: tl.constexpr,
                    COLUMNS: tl.constexpr):
    # One program per ROWS rows of a split tile (BLOCK_M of them: 128 or 192), all its runs (RUNS,
    # parts padded to a power of two) loaded at once and merged as reductions over them. Merged one
    # run at a time, every run's loads waited for the one before: 13 us for 16 runs of 128 x 64
    # (benchmarks/attention/forward-split-keys-67307cf, call 2).
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
    # natural log (divided by log2(e)), as the forward's own rows: flash_triton's backward reads it so
    tl.store(LSE + bh.to(tl.int64) * seq_q + row, (m + tl.log2(total)) / 1.4426950408889634, mask=row < seq_q)


_COMBINE_LAUNCH = CachedLaunch(_combine_kernel)
MERGED_ELEMENTS = 8192  # 64 fp32 registers a thread of the combine's four warps


def combine(part_o: torch.Tensor, part_lse: torch.Tensor, o: torch.Tensor, lse: torch.Tensor, whole: int,
            parts: int, n_m: int) -> None:
    """Write O (B, H, seq_q, d), any strides with unit-stride d, and LSE (B, H, seq_q), natural
    log, of the split tiles (whole onwards, n_m query tiles a batch x head) from their runs."""
    runs, block_m, head_dim = part_o.shape
    _, heads, seq_q, _ = o.shape
    padded_runs, columns = triton.next_power_of_2(parts), triton.next_power_of_2(head_dim)
    # rows a program: a power of two dividing the tile's (at most 64 of 128 or 192), and at most
    # MERGED_ELEMENTS run x row x column values loaded at once (one row where even that is more)
    rows = math.gcd(block_m, 64)
    while rows > 1 and padded_runs * rows * columns > MERGED_ELEMENTS:
        rows //= 2
    _COMBINE_LAUNCH((runs // parts, block_m // rows), part_o, part_lse, o, lse, whole, parts, n_m, heads, seq_q,
                    o.stride(0), o.stride(1), o.stride(2), BLOCK_M=block_m, ROWS=rows, RUNS=padded_runs,
                    HEAD_DIM=head_dim, COLUMNS=columns)
