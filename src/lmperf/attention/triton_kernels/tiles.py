"""The portable kernels' tile sizes: autotuned on the GPU, fixed under the interpreter, and the
column blocks a head_dim is tiled in.

Tile sizes are autotuned per (lengths, head_dim and its column blocks, causal, precision; the
dK/dV kernel also per dQ mode and GQA group). Under TRITON_INTERPRET=1 (CPU tests) small fixed
tiles are used instead; LMPERF_ATTENTION_AUTOTUNE=0 uses `fixed_tiles` everywhere (quick first
calls, e.g. in GPU tests).
"""

from __future__ import annotations

import os

import torch
import triton

from lmperf.attention import dispatch
from lmperf.attention.triton_kernels.backward import _bwd_dkdv_kernel, _bwd_dq_kernel
from lmperf.attention.triton_kernels.forward import _fwd_kernel

# BLOCK_E too: the same head_dim split in two column blocks or padded ("ordered") is another
# kernel, whose tiles the other's tuning must not pick.
TUNE_KEY = ["seq_q", "seq_k", "HEAD_DIM", "BLOCK_E", "CAUSAL", "PRECISION"]
# Per kernel and head_dim class (<= 64, > 64): (BLOCK_M, BLOCK_N, num_warps, num_stages[, maxnreg]).
# The configs each kernel's autotuner picked on an H100 plus the runners-up; maxnreg=128 caps
# registers so two 8-warp programs share an SM (one's softmax overlaps the other's matmuls). Few
# on purpose: each costs a compilation per (head_dim, causal, dtype) on first use; configs that
# overflow shared memory are skipped.
TILES = {
    "fwd": {
        False: [(128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2, 128), (128, 64, 4, 3)],
        True: [(128, 64, 8, 3), (128, 64, 8, 2, 128), (128, 128, 8, 3), (128, 128, 8, 2)],
    },
    "dkdv": {
        False: [(32, 128, 4, 3), (32, 64, 4, 3), (32, 128, 4, 5)],
        True: [(64, 128, 8, 3), (64, 128, 8, 2), (64, 64, 4, 2)],
    },
    "dq": {
        False: [(128, 64, 8, 3), (128, 64, 8, 2, 128), (128, 32, 4, 3)],
        True: [(128, 64, 8, 3), (128, 32, 4, 3), (64, 64, 4, 2)],
    },
    # The dK/dV kernel when it also makes dQ's shares ("atomic", "ordered"): at least 64 query
    # rows, because its fifth product, dS^T K, has BLOCK_M rows and the sm90 compiler makes a
    # wgmma of it only from 64 (a 32-row tile gets the register-operand mma path). Same
    # candidates as dkdv's above 64.
    "dkdv_dq": {
        False: [(64, 128, 8, 3), (64, 64, 4, 3), (64, 128, 8, 2)],
        True: [(64, 128, 8, 3), (64, 128, 8, 2), (64, 64, 4, 2)],
    },
}
# Under the interpreter: small tiles with BLOCK_M != BLOCK_N so misaligned diagonals are tested.
INTERPRETED_TILES = {
    "fwd": {"BLOCK_M": 32, "BLOCK_N": 16},
    "dkdv": {"BLOCK_M": 16, "BLOCK_N": 32},
    "dq": {"BLOCK_M": 16, "BLOCK_N": 32},
    "dkdv_dq": {"BLOCK_M": 16, "BLOCK_N": 32},
}
AUTOTUNE = os.environ.get("LMPERF_ATTENTION_AUTOTUNE", "1") != "0"
KERNELS = {"fwd": _fwd_kernel, "dkdv": _bwd_dkdv_kernel, "dq": _bwd_dq_kernel, "dkdv_dq": _bwd_dkdv_kernel}


def _configs(tiles: list[tuple]) -> list[triton.Config]:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages[, maxnreg]) -> autotuning configs."""
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s, maxnreg=rest[0] if rest else None)
        for m, n, w, s, *rest in tiles
    ]


def tuned_kernels(tiles: dict) -> dict:
    """Autotuned kernels keyed (name, head_dim > 64) from a TILES-shaped table."""
    tuned = {}
    for name, by_size in tiles.items():
        for large, size_tiles in by_size.items():
            if KERNELS[name] is _bwd_dkdv_kernel:
                # Keyed by GQA group too (the kernel is unrolled over it); trial runs add into dQ
                # and advance the counters: zero both after each.
                tuner = triton.autotune(_configs(size_tiles), key=[*TUNE_KEY, "DQ_MODE", "GROUP"],
                                        reset_to_zero=["DQ", "LOCKS"])
            else:
                tuner = triton.autotune(_configs(size_tiles), key=TUNE_KEY)
            tuned[name, large] = tuner(KERNELS[name])
    return tuned


TUNED = tuned_kernels(TILES)


def fixed_tiles(name: str, head_dim: int, itemsize: int) -> dict:
    """Tiles that fit shared memory for every head_dim and dtype (fp32 or d=256: small ones)."""
    if itemsize == 4 or head_dim > 128:
        m, n, warps, stages = (64, 32, 4, 2) if name == "fwd" else (32, 32, 4, 2)
    else:
        m, n, warps, stages = (128, 64, 4, 3) if name == "fwd" else (64, 64, 4, 3)
    return {"BLOCK_M": m, "BLOCK_N": n, "num_warps": warps, "num_stages": stages}


def run_kernel(name: str, grid, q: torch.Tensor, *args, **constexprs) -> None:
    """Launch kernel `name`: autotuned for fp16/bf16 with head_dim <= 128, else fixed tiles."""
    head_dim, itemsize = block_d(q.shape[-1]), q.element_size()
    if dispatch.INTERPRETED:
        KERNELS[name][grid](q, *args, **constexprs, **INTERPRETED_TILES[name])
    elif AUTOTUNE and itemsize == 2 and head_dim <= 128:
        TUNED[name, head_dim > 64][grid](q, *args, **constexprs)
    else:
        KERNELS[name][grid](q, *args, **constexprs, **fixed_tiles(name, head_dim, itemsize))


def block_d(head_dim: int) -> int:
    """The columns a tile spans: head_dim rounded up to a power of two >= 16 (tile-size class)."""
    return max(16, triton.next_power_of_2(head_dim))


def column_blocks(head_dim: int, split: bool = True) -> dict:
    """BLOCK_D (the first block's width) and BLOCK_E (the second block's, or 0); the kernels read
    the first block's real columns as HEAD_DIM - BLOCK_E.

    A head_dim that is the sum of two powers of two >= 16 (80 = 64 + 16, 96 = 64 + 32, 48 = 32 +
    16) is tiled as two column blocks, every matmul over it done as two chained ones (tl.dot's
    smallest inner size is 16), instead of padding it to the next power of two (80 -> 128
    computes 60% more). Other head dims, or split=False, are padded to one block and masked."""
    padded = block_d(head_dim)
    rest = head_dim - padded // 2
    if split and head_dim != padded and rest >= 16 and rest & (rest - 1) == 0:
        return {"BLOCK_D": padded // 2, "BLOCK_E": rest}
    return {"BLOCK_D": padded, "BLOCK_E": 0}
