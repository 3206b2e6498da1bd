"""The Gluon kernels as torch custom ops, for torch.compile, and the launches that use them.

Dynamo does not trace a Gluon launch: while torch.compile traces, `forward` and `backward` go
through opaque custom ops (lmperf::flash_gluon_forward, lmperf::flash_gluon_backward) whose fake
implementations give the output shapes; eagerly they call the host code directly, which spares
small shapes the dispatcher's cost. The ops realign a base address TMA cannot take (tracing
decided by strides alone: sm90.tma.tma_ready).
"""

from __future__ import annotations

import torch

from lmperf.attention.sm90 import backward as sm90_backward
from lmperf.attention.sm90 import forward as sm90_forward
from lmperf.attention.sm90.tma import aligned


@torch.library.custom_op("lmperf::flash_gluon_forward", mutates_args=())
def _forward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return sm90_forward.forward(aligned(q), aligned(k), aligned(v), is_causal)


@_forward_op.register_fake
def _(q, k, v, is_causal):
    batch, heads, seq_q, head_dim = q.shape
    o = q.new_empty((batch, seq_q, heads, head_dim)).transpose(1, 2)
    return o, q.new_empty((batch, heads, seq_q), dtype=torch.float32)


@torch.library.custom_op("lmperf::flash_gluon_backward", mutates_args=())
def _backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, lse: torch.Tensor,
                 delta: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return sm90_backward.backward(aligned(q), aligned(k), aligned(v), do, lse, delta, is_causal)


@_backward_op.register_fake
def _(q, k, v, do, lse, delta, is_causal):
    return torch.empty_like(q, memory_format=torch.contiguous_format), k.new_empty(k.shape), v.new_empty(k.shape)


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """sm90.forward.forward, through its custom op while torch.compile traces."""
    if torch.compiler.is_compiling():
        return _forward_op(q, k, v, is_causal)
    return sm90_forward.forward(q, k, v, is_causal)


def backward(q, k, v, do, lse, delta, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """sm90.backward.backward, through its custom op while torch.compile traces."""
    if torch.compiler.is_compiling():
        return _backward_op(q, k, v, do, lse, delta, is_causal)
    return sm90_backward.backward(q, k, v, do, lse, delta, is_causal)
