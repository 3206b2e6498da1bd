"""AdamW's update of one parameter tensor in one Triton pass: `adamw_(p, g, m, v, ...)`.

Reads the parameter, its gradient and both moments once and writes the parameter and the
moments once: 14 bytes per bf16 parameter, the least an AdamW step can move. Arithmetic is fp32
whatever the storage dtype, in the order of PyTorch's fused AdamW (decoupled weight decay first,
then the moments, then the bias-corrected step). Triton's fp32 division and square root are its
fast ones, so the update may differ from PyTorch's by a few fp32 units in the last place.

Imported only where it runs (lmperf.ops.adamw decides). Runs on CUDA tensors, or on CPU tensors
when TRITON_INTERPRET=1 was set before import (the CPU tests).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from lmperf.ops.adamw_hyperparameters import Hyperparameters
from lmperf.ops.triton_device import TRITON_INTERPRETED

# Elements per program: 4 warps x 32 lanes x 16 elements, so each lane moves two 16-byte vectors
# of a bf16 tensor; the interpreter gets a small block so that a short test tensor spans several.
BLOCK = 64 if TRITON_INTERPRETED else 2048
NUM_WARPS = 4


@triton.jit
def _adamw_kernel(
    p_ptr,
    g_ptr,
    m_ptr,
    v_ptr,
    n,
    lr,
    beta1,
    beta2,
    eps,
    weight_decay,
    step_size,
    bias_correction2_sqrt,
    BLOCK: tl.constexpr,
):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inside = offsets < n
    p = tl.load(p_ptr + offsets, mask=inside).to(tl.float32)
    g = tl.load(g_ptr + offsets, mask=inside).to(tl.float32)
    m = tl.load(m_ptr + offsets, mask=inside).to(tl.float32)
    v = tl.load(v_ptr + offsets, mask=inside).to(tl.float32)
    p = p - lr * weight_decay * p
    m = beta1 * m + (1.0 - beta1) * g
    v = beta2 * v + (1.0 - beta2) * g * g
    denominator = tl.sqrt(v) / bias_correction2_sqrt + eps
    p = p - step_size * m / denominator
    tl.store(p_ptr + offsets, p.to(p_ptr.dtype.element_ty), mask=inside)
    tl.store(m_ptr + offsets, m.to(m_ptr.dtype.element_ty), mask=inside)
    tl.store(v_ptr + offsets, v.to(v_ptr.dtype.element_ty), mask=inside)


def adamw_(tensors: Sequence[torch.Tensor], hyper: Hyperparameters, step: int) -> None:
    """The `step`-th (from 1) AdamW step of `tensors` = (param, grad, exp_avg, exp_avg_sq): the
    parameter and its moments in place.

    Every tensor is contiguous with the parameter's number of elements; dtypes may differ."""
    param, grad, exp_avg, exp_avg_sq = tensors
    n = param.numel()
    if n == 0:
        return
    _adamw_kernel[(triton.cdiv(n, BLOCK),)](
        param, grad, exp_avg, exp_avg_sq, n, hyper.lr, hyper.beta1, hyper.beta2, hyper.eps, hyper.weight_decay,
        hyper.step_size(step), hyper.bias_correction2_sqrt(step), BLOCK=BLOCK, num_warps=NUM_WARPS,
    )  # fmt: skip
