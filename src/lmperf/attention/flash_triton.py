"""FlashAttention-2 in Triton behind a torch.autograd.Function, with Hopper's Gluon kernels where
they are faster.

`FlashAttention2Triton.apply(q, k, v, is_causal[, backward])` -> softmax(q k^T / sqrt(d)) v over
(..., seq, head_dim) inputs (lmperf.attention.contract), the causal mask top-left aligned (query
i sees keys j <= i). The forward runs the portable kernel (lmperf.attention.triton_kernels) or,
where lmperf.attention.dispatch says so, the Gluon forward (lmperf.attention.sm90); both leave O
and the log-sum-exp laid out alike for either backward. Backward: D = rowsum(dO * O) first,
then dK and dV by one program per key tile (summed over the query heads of its group under
GQA), and dQ one of three ways:
  - "atomic": the dK/dV program adds its dS K share to an fp32 dQ (5 matmuls, the FLOP
    convention's count; the order of the adds varies, so the bits may vary from run to run), by
    TMA bulk reductions on Hopper where a tile spans the head_dim, else by per-thread atomics;
    on Hopper where dispatch says so, the Gluon backward instead;
  - "ordered": the same share added without atomics, in key-tile order, each dQ tile guarded by
    a counter that lets key tile n in only after tile n-1 (5 matmuls, bitwise repeatable);
  - "split": FA2's own split, a separate dQ kernel per query tile that recomputes S and dP
    (7 matmuls, no shared writes, bitwise repeatable).
Named, "atomic" is refused while torch.are_deterministic_algorithms_enabled(); unnamed (None),
dispatch.backward_mode picks. GQA/MQA: k and v may have fewer heads than q.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import math

import torch
import triton
from triton.runtime import _allocation

from lmperf.attention import dispatch
from lmperf.attention.contract import as_4d, check_inputs
from lmperf.attention.dispatch import BACKWARDS
from lmperf.attention.launch import CachedLaunch
from lmperf.attention.triton_kernels.backward import _bwd_preprocess_kernel
from lmperf.attention.triton_kernels.common import LOG2E
from lmperf.attention.triton_kernels.tiles import column_blocks, run_kernel
from lmperf.errors import UsageError

MAX_GRID_Y = 65535  # CUDA's limit on the grid's second dimension (batch * heads here)
# The Gluon kernels' launches, imported only with the Triton they are written for: another
# Triton never imports a Gluon module.
sm90_forward, sm90_backward = (
    (
        importlib.import_module("lmperf.attention.sm90.forward"),
        importlib.import_module("lmperf.attention.sm90.backward"),
    )
    if dispatch.GLUON_TRITON_OK
    else (None, None)
)


def _precision(dtype: torch.dtype) -> str:
    # fp32 inputs get true fp32 products; Triton's default would use TF32 (about 3e-4 error).
    return "ieee" if dtype == torch.float32 else "tf32"


def _check_device(q: torch.Tensor) -> None:
    if q.device.type != "cuda" and not dispatch.INTERPRETED:
        raise UsageError("FlashAttention2Triton needs CUDA tensors (or TRITON_INTERPRET=1 set before import)")


def _strides(x: torch.Tensor) -> tuple[int, int, int]:
    return x.stride(0), x.stride(1), x.stride(2)


# ----------------------------------------------------------------------------- forward


def triton_forward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, gluon: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """O (B, H, seq_q, d), stored (B, seq_q, H, d), and LSE (B, H, seq_q) in fp32 from 4-d inputs
    with unit-stride d. gluon: dispatch.gluon_kernels_run's answer, where the caller has it."""
    B, H, seq_q, head_dim = q.shape
    seq_k = k.shape[2]
    if B * H > MAX_GRID_Y:
        raise UsageError(f"batch * heads = {B * H} exceeds {MAX_GRID_Y}")
    if gluon is None:
        gluon = dispatch.gluon_kernels_run(q, k, v)
    if dispatch.gluon_forward_runs(head_dim, seq_k, is_causal, gluon):
        return sm90_forward.forward(q, k, v, is_causal)
    # Laid out (B, seq_q, H, d), as SDPA's flash and cuDNN outputs are: the model's next step,
    # y.transpose(1, 2).reshape(B, T, H * d) for the output projection, is then a view, not a copy.
    o = torch.empty((B, seq_q, H, head_dim), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((B, H, seq_q), dtype=torch.float32, device=q.device)
    grid = lambda meta: (triton.cdiv(seq_q, meta["BLOCK_M"]), B * H)  # noqa: E731
    run_kernel(
        "fwd",
        grid,
        q,
        k,
        v,
        o,
        lse,
        LOG2E / math.sqrt(head_dim),
        *_strides(q),
        *_strides(k),
        *_strides(v),
        *_strides(o),
        H,
        H // k.shape[1],
        seq_q,
        seq_k,
        HEAD_DIM=head_dim,
        **column_blocks(head_dim),
        CAUSAL=is_causal,
        PRECISION=_precision(q.dtype),
    )
    return o, lse


# ----------------------------------------------------------------------------- backward


def _tma_scratch(size: int, alignment: int, stream, device: torch.device) -> torch.Tensor:
    """Global memory where device-side TMA descriptors are written, on the kernel's device."""
    return torch.empty(size, dtype=torch.int8, device=device)


@contextlib.contextmanager
def tma_scratch_on(device: torch.device):
    """Triton's allocator for device-side TMA descriptors, set for the block only, allocating on
    `device`, and the previous one restored after. Triton keeps the allocator in a ContextVar
    that triton.set_allocator sets for the rest of the program; setting the ContextVar directly
    gives the token that undoes it."""
    token = _allocation._allocator.set(functools.partial(_tma_scratch, device=device))
    try:
        yield
    finally:
        _allocation._allocator.reset(token)


def row_delta(o: torch.Tensor, do: torch.Tensor) -> torch.Tensor:
    """D = rowsum(dO * O) in fp32, (B, H, seq_q), from 4-d O and dO: the backwards' first step."""
    B, H, seq_q, head_dim = o.shape
    delta = torch.empty((B, H, seq_q), dtype=torch.float32, device=o.device)
    _PREPROCESS_LAUNCH(
        (triton.cdiv(seq_q, 64), B * H),
        o,
        do,
        delta,
        *_strides(o),
        *_strides(do),
        H,
        seq_q,
        HEAD_DIM=head_dim,
        **column_blocks(head_dim),
        BLOCK_M=64,
    )
    return delta


# Repeat launches skip JITFunction.run's binding (launch.CachedLaunch).
_PREPROCESS_LAUNCH = CachedLaunch(_bwd_preprocess_kernel)


def _dkdv(q, k, v, lse, delta, do, is_causal: bool, mode: str):
    """The portable dK/dV kernel ("split": and the dQ kernel after it): dQ, dK, dV."""
    B, H, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    dk = torch.empty((B, kv_heads, seq_k, head_dim), dtype=k.dtype, device=k.device)
    dv = torch.empty_like(dk)
    if mode == "split":
        dq_acc = torch.empty((B, H, seq_q, head_dim), dtype=q.dtype, device=q.device)
    else:  # fp32 sums of every key tile's share
        dq_acc = torch.zeros((B, H, seq_q, head_dim), dtype=torch.float32, device=q.device)
    # One counter per (query head, 16-row tile): enough for any BLOCK_M the tuner picks.
    locks = torch.zeros(
        (B * H, triton.cdiv(seq_q, 16)) if mode == "ordered" else (1,), dtype=torch.int32, device=q.device
    )
    scale = 1.0 / math.sqrt(head_dim)
    strides = (*_strides(q), *_strides(k), *_strides(v), *_strides(do))
    # "ordered" pads head_dim to one column block: its dQ path (_add_dq_share, DQ_MODE 2) adds
    # the first block only.
    constexprs = dict(
        HEAD_DIM=head_dim,
        **column_blocks(head_dim, split=mode != "ordered"),
        CAUSAL=is_causal,
        PRECISION=_precision(q.dtype),
    )
    by_tma = mode == "atomic" and dispatch.dq_by_tma(q, head_dim, constexprs["BLOCK_E"])
    with tma_scratch_on(q.device) if by_tma else contextlib.nullcontext():
        run_kernel(
            "dkdv" if mode == "split" else "dkdv_dq",
            lambda meta: (triton.cdiv(seq_k, meta["BLOCK_N"]), B * kv_heads),
            q,
            k,
            v,
            do,
            lse,
            delta,
            dk,
            dv,
            dq_acc,
            locks,
            scale * LOG2E,
            scale,
            *strides,
            H,
            seq_q,
            seq_k,
            **constexprs,
            DQ_MODE=3 if by_tma else BACKWARDS[mode],
            GROUP=H // kv_heads,
        )
    if mode != "split":
        return dq_acc.to(q.dtype), dk, dv
    run_kernel(
        "dq",
        lambda meta: (triton.cdiv(seq_q, meta["BLOCK_M"]), B * H),
        q,
        k,
        v,
        do,
        lse,
        delta,
        dq_acc,
        scale * LOG2E,
        scale,
        *strides,
        H,
        H // kv_heads,
        seq_q,
        seq_k,
        **constexprs,
    )
    return dq_acc, dk, dv


def triton_backward(q, k, v, o, lse, do, is_causal: bool, mode: str, gluon: bool | None = None):
    """dQ, dK, dV (4-d, contiguous) from the forward's inputs, O, LSE and the output gradient.
    gluon: whether "atomic" runs the Gluon backward (None: dispatch decides here)."""
    delta = row_delta(o, do)
    if gluon is None:
        gluon = dispatch.gluon_backward_runs(k.shape[2], dispatch.gluon_kernels_run(q, k, v))
    if mode == "atomic" and gluon:
        return sm90_backward.backward(q, k, v, do, lse, delta, is_causal)
    return _dkdv(q, k, v, lse, delta, do, is_causal, mode)


# ----------------------------------------------------------------------------- the operator


# One PyTorch operator for the forward and one for the backward, so that torch.compile sees one
# opaque call without graph breaks, FSDP2 and DTensor pass through, and a selective-checkpoint
# policy can name the forward and keep its outputs (lmperf.model.transformer). `gluon` carries
# dispatch.ENABLED from the call, so that dispatch.gluon_disabled() around a forward holds for
# its backward too, and `backward` the dQ strategy asked for (None: dispatch.backward_mode's);
# the rest of each kernel choice is made when the kernel runs, from the real tensors.


@torch.library.custom_op("lmperf::flash_attention", mutates_args=())
def flash_attention_op(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, gluon: bool, backward: str | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """O (q's shape) and the log-sum-exp (q's shape without head_dim), fp32."""
    q4, k4, v4 = as_4d(q), as_4d(k), as_4d(v)
    o, lse = triton_forward(q4, k4, v4, is_causal, gluon and dispatch.gluon_kernels_run(q4, k4, v4))
    return (o, lse) if q.dim() == 4 else (o.view(q.shape), lse.view(q.shape[:-1]))


@flash_attention_op.register_fake
def _(q, k, v, is_causal, gluon, backward):
    q4 = as_4d(q)
    batch, heads, seq_q, head_dim = q4.shape
    o = q4.new_empty((batch, seq_q, heads, head_dim)).transpose(1, 2)  # as triton_forward lays it out
    lse = q4.new_empty((batch, heads, seq_q), dtype=torch.float32)
    return (o, lse) if q.dim() == 4 else (o.view(q.shape), lse.view(q.shape[:-1]))


@torch.library.custom_op("lmperf::flash_attention_backward", mutates_args=())
def flash_attention_backward_op(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    o: torch.Tensor,
    lse: torch.Tensor,
    do: torch.Tensor,
    is_causal: bool,
    gluon: bool,
    backward: str | None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV (contiguous, the inputs' shapes); backward: the dQ strategy asked for, or None."""
    q4, k4, v4, o4, do4 = as_4d(q), as_4d(k), as_4d(v), as_4d(o), as_4d(do)
    gluon_backward = dispatch.gluon_backward_runs(k4.shape[2], gluon and dispatch.gluon_kernels_run(q4, k4, v4))
    mode = dispatch.backward_mode(backward, is_causal, k4.shape[2], gluon_backward)
    lse4 = lse if q.dim() == 4 else lse.view(o4.shape[:-1])
    dq, dk, dv = triton_backward(q4, k4, v4, o4, lse4, do4, is_causal, mode, gluon_backward)
    return (dq, dk, dv) if q.dim() == 4 else (dq.view(q.shape), dk.view(k.shape), dv.view(k.shape))


@flash_attention_backward_op.register_fake
def _(q, k, v, o, lse, do, is_causal, gluon, backward):
    return (
        torch.empty_like(q, memory_format=torch.contiguous_format),
        torch.empty_like(k, memory_format=torch.contiguous_format),
        k.new_empty(k.shape),
    )


def _keep_for_backward(ctx, inputs, output):
    q, k, v, ctx.is_causal, ctx.gluon, ctx.backward = inputs
    ctx.save_for_backward(q, k, v, *output)


def _backward(ctx, grad_o, grad_lse):
    # The log-sum-exp is an output for the backward's sake: no loss differentiates through it.
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = flash_attention_backward_op(q, k, v, o, lse, grad_o, ctx.is_causal, ctx.gluon, ctx.backward)
    return dq, dk, dv, None, None, None


flash_attention_op.register_autograd(_backward, setup_context=_keep_for_backward)


def flash_attention_triton_with_lse(q, k, v, is_causal: bool = False):
    """Forward only: output (..., seq_q, d) and log-sum-exp (..., seq_q), fp32."""
    check_inputs(q, k, v)
    _check_device(q)
    return flash_attention_op(q, k, v, is_causal, dispatch.ENABLED, None)


def flash_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False, backward: str | None = None
) -> torch.Tensor:
    """softmax(q k^T / sqrt(d)) v through lmperf::flash_attention, differentiable.

    backward: "split", "atomic", "ordered" or None (dispatch.backward_mode; module docstring),
    checked here, at the forward, against torch's determinism setting."""
    check_inputs(q, k, v)
    _check_device(q)
    if backward is not None:
        dispatch.backward_mode(backward)
    return flash_attention_op(q, k, v, is_causal, dispatch.ENABLED, backward)[0]


class FlashAttention2Triton:
    """`FlashAttention2Triton.apply(q, k, v, is_causal[, backward])`: `flash_attention` under the
    name lmperf's implementation registry and the attention benchmark call it by."""

    apply = staticmethod(flash_attention)


__all__ = [
    "BACKWARDS",
    "FlashAttention2Triton",
    "flash_attention",
    "flash_attention_op",
    "flash_attention_triton_with_lse",
    "triton_backward",
    "triton_forward",
]
