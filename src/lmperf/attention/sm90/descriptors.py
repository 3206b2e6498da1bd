"""Host-side TMA descriptors of the Gluon kernels' operands, and their shared-memory layouts."""

from __future__ import annotations

import dataclasses
import functools

import torch
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from lmperf.attention.sm90.tma import column_blocks

GL_DTYPES = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16, torch.float32: gl.float32}


@functools.cache
def shared_layout(rows: int, columns: int, dtype: torch.dtype) -> gl.NVMMASharedLayout:
    """The shared-memory layout of a (1, 1, rows, columns) TMA box of dtype. Cached: deriving it
    is most of a descriptor's host cost, and every call makes several descriptors."""
    return gl.NVMMASharedLayout.get_default_for([1, 1, rows, columns], GL_DTYPES[dtype])


# TensorDescriptor's fields with defaults (padding; later Tritons add more), as from_tensor
# leaves them for bf16/fp16/fp32 boxes.
_DESCRIPTOR_DEFAULTS = {
    field.name: field.default
    for field in dataclasses.fields(TensorDescriptor)
    if field.default is not dataclasses.MISSING
}


def descriptor(x: torch.Tensor, rows: int, columns: int | None = None) -> TensorDescriptor:
    """A TMA descriptor of 4-d x in boxes of `rows` x `columns` (default: the whole head_dim).

    Built field by field, without TensorDescriptor's __post_init__ checks (base and strides
    16-byte aligned, last stride 1, shape positive, block shape powers of two), which cost most
    of a descriptor's host time: dispatch's `gluon_fits` has checked every tensor the kernels
    take (`tma.aligned` copies what TMA cannot address; dQ, dK and dV are fresh allocations;
    the boxes are the tuning's constants). A CPU test compares every field with
    TensorDescriptor.from_tensor's."""
    columns = columns or x.shape[-1]
    desc = TensorDescriptor.__new__(TensorDescriptor)
    desc.__dict__.update(_DESCRIPTOR_DEFAULTS)
    desc.base, desc.shape, desc.strides = x, x.shape, x.stride()
    desc.block_shape, desc.layout = [1, 1, rows, columns], shared_layout(rows, columns, x.dtype)
    return desc


def block_descriptors(
    x: torch.Tensor, rows: int, columns: int | None = None
) -> tuple[TensorDescriptor, TensorDescriptor | None]:
    """Descriptors of x's two column blocks (`tma.column_blocks`), as the Gluon kernels take them:
    the first in boxes of `rows` x `columns` (default: the whole block), the tail whole, each a
    view of x (a column view's base stays 16-byte aligned). Without a tail, None for the second:
    the kernels never read it then, and a constexpr None costs the launch nothing where every
    descriptor argument costs host time."""
    main, tail = column_blocks(x.shape[-1])
    if not tail:
        return descriptor(x, rows, columns), None
    return descriptor(x[..., :main], rows, columns), descriptor(x[..., main:], rows)
