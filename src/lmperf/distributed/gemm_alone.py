"""The GEMMs of a profiled step timed alone, so a kernel table can say how much slower each runs
inside the step (beside NCCL kernels, after other kernels left the L2 cold) than on an idle GPU.

Each distinct GEMM (kernel_table.gemm_key) runs as its op (torch.mm, addmm, bmm, baddbmm) on
fresh random tensors with the step's shapes, strides and dtype, timed by run.timing.do_bench_ms
(median). Only the MAX_SHAPES GEMMs with the most time in the step are timed, each for about
WARMUP_MS + REP_MS, so a run pays a few seconds, not minutes. Operands small enough for the L2
cache stay in it between calls, as do_bench_ms does not flush it: for such GEMMs the figure alone
is a best case.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch

from lmperf.distributed.kernel_table import FIRST_OPERAND, gemm_key
from lmperf.dtypes import DTYPES
from lmperf.run.timing import do_bench_ms

MAX_SHAPES = 40
WARMUP_MS, REP_MS = 25.0, 75.0


def operand(dims: Sequence[int], strides: Sequence[int] | None, dtype: torch.dtype, device: torch.device):
    """Random values viewed with exactly `strides` (a transposed or sliced operand stays so)."""
    if strides is None:
        return torch.randn(dims, dtype=dtype, device=device)
    span = 1 + sum((size - 1) * stride for size, stride in zip(dims, strides)) if all(dims) else 0
    return torch.randn(span, dtype=dtype, device=device).as_strided(dims, strides)


def gemm_call(row: dict, device: torch.device) -> Callable[[], torch.Tensor]:
    """The row's op on fresh tensors for its bias and matrix operands; a recorded output tensor is
    left out (the op allocates its own) and addmm's beta and alpha keep their defaults."""
    dtype = DTYPES[row["dtype"]]
    count = FIRST_OPERAND[row["op"]] + 2
    strides = row["input_strides"] or [None] * count
    tensors = [operand(d, s, dtype, device) for d, s in zip(row["input_dims"][:count], strides[:count])]
    function = getattr(torch, row["op"].removeprefix("aten::"))
    return lambda: function(*tensors)


def _alone_ms(row: dict, device: torch.device) -> float | None:
    try:
        # Rank 0 times alone while the other ranks wait: no collective may agree the call count
        return do_bench_ms(gemm_call(row, device), WARMUP_MS, REP_MS, device, every_rank=False).median_ms
    except RuntimeError:  # out of memory beside the step's state, or operands the op refuses
        return None


def time_alone(rows: Sequence[dict], device: torch.device, max_shapes: int = MAX_SHAPES) -> int:
    """Set `alone_ms` and `alone_tflops` on the GEMM rows of the `max_shapes` distinct GEMMs with
    the most time in the step; how many were timed."""
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        key = gemm_key(row)
        if key is not None and row["dtype"] in DTYPES:
            groups.setdefault(key, []).append(row)
    longest = sorted(groups.values(), key=lambda group: -sum(r["duration_ms"] for r in group))[:max_shapes]
    for group in longest:
        ms = _alone_ms(group[0], device)
        for row in group:
            row["alone_ms"] = ms
            row["alone_tflops"] = row["flops"] / ms / 1e9 if ms else None
    return len(longest)
