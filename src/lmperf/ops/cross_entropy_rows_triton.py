"""One Triton pass per logits row: the row's cross-entropy, and its logits overwritten by their gradient.

`cross_entropy_rows_(logits, targets, scale)` takes a (C, V) block of logits (fp32, fp16 or bf16,
rows contiguous), writes each row's loss `logsumexp(row) - row[target]` (0 for ignored rows) to
an fp32 (C,) result, and replaces the logits in place by `scale * (softmax(row) - one_hot(target))`
(zeros for ignored rows): the gradient of `scale * sum(loss)`. Arithmetic is fp32 whatever the
storage dtype. It is the fused loss's per-chunk elementwise work in two reads and one write of the
block, where the PyTorch path (upcast, logsumexp, gather, subtract, exp, scatter, scale, downcast)
moves about seven times the bytes.

Imported only where it runs (lmperf.ops.fused_linear_cross_entropy.triton_rows_kernel decides).
Each program owns one row: a first sweep keeps a running max and rescaled sum per lane (online
softmax), a second sweep writes the gradient. Runs on CUDA tensors, or on CPU tensors when
TRITON_INTERPRET=1 was set before import (the CPU tests).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from lmperf.ops.targets import check_targets
from lmperf.ops.triton_device import TRITON_INTERPRETED

# A row is swept in blocks this wide: 8 warps × 32 lanes × 16 elements on the GPU; the
# interpreter gets a small block so that a short test row still spans several blocks.
BLOCK = 32 if TRITON_INTERPRETED else 4096
NUM_WARPS = 8


@triton.jit
def _cross_entropy_rows_kernel(logits_ptr, row_stride, targets_ptr, loss_ptr, scale, n_cols,
                               IGNORE_INDEX: tl.constexpr, NEED_GRAD: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * row_stride
    target = tl.load(targets_ptr + row)
    valid = target != IGNORE_INDEX

    # Sweep 1: per-lane running max and sum of exp(x - max); a lane that has seen only padding
    # keeps max -inf and sum 0 (the guards avoid -inf - -inf).
    lane_max = tl.full((BLOCK,), float("-inf"), tl.float32)
    lane_sum = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(lane_max, x)
        seen = new_max != float("-inf")
        rescale = tl.where(seen, tl.exp(lane_max - new_max), 1.0)
        lane_sum = lane_sum * rescale + tl.where(seen, tl.exp(x - new_max), 0.0)
        lane_max = new_max
    row_max = tl.max(lane_max, 0)
    lse = row_max + tl.log(tl.sum(lane_sum * tl.exp(lane_max - row_max), 0))

    safe_target = tl.where(valid, target, 0)
    target_logit = tl.load(row_ptr + safe_target).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - target_logit, 0.0))

    if NEED_GRAD:
        # Sweep 2: the gradient, written over the logits it was computed from.
        row_scale = tl.where(valid, scale, 0.0)
        for start in range(0, n_cols, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            in_row = cols < n_cols
            x = tl.load(row_ptr + cols, mask=in_row, other=0.0).to(tl.float32)
            grad = tl.exp(x - lse) - tl.where(cols == safe_target, 1.0, 0.0)
            tl.store(row_ptr + cols, (grad * row_scale).to(logits_ptr.dtype.element_ty), mask=in_row)


def cross_entropy_rows_(logits: torch.Tensor, targets: torch.Tensor, scale: float, ignore_index: int,
                        need_grad: bool = True) -> torch.Tensor:
    """Per-row losses (fp32, (C,)); with `need_grad`, `logits` now holds the scaled gradient."""
    if logits.dim() != 2 or logits.stride(1) != 1:
        raise ValueError(f"need a (C, V) block with contiguous rows, got shape {tuple(logits.shape)}"
                         f" strides {logits.stride()}")
    if targets.shape != logits.shape[:1]:
        raise ValueError(f"targets must be ({logits.shape[0]},), got {tuple(targets.shape)}")
    check_targets(targets, logits.shape[1], ignore_index)
    losses = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
    if logits.shape[0] == 0:
        return losses
    _cross_entropy_rows_kernel[(logits.shape[0],)](
        logits, logits.stride(0), targets.contiguous(), losses, float(scale), logits.shape[1],
        IGNORE_INDEX=ignore_index, NEED_GRAD=need_grad, BLOCK=BLOCK, num_warps=NUM_WARPS,
    )
    return losses
