"""Which attention kernel runs for which inputs: every rule, each with the reason for it.

FlashAttention2Triton asks here once per call, for its forward and its backward together:
  - the Gluon kernels (lmperf.attention.sm90) run only with the Triton they were written
    against (GLUON_TRITON), never under Triton's interpreter, on an sm90 GPU, for inputs they
    fit (`gluon_fits`), and where they are faster than the portable kernels (thresholds in
    sm90.tuning); everything else runs the portable Triton kernels (lmperf.attention.flash_triton);
  - the portable backward's dQ strategy (`backward_mode`) follows PyTorch's determinism setting
    and, unnamed, the faster strategy for the shape.
LMPERF_ATTENTION_GLUON=0 in the environment, or `gluon_disabled()` around a call, keeps the
portable kernels everywhere (to time the two side by side).
"""

from __future__ import annotations

import contextlib
import functools
import os

import torch
import triton

from lmperf.attention.sm90 import tuning as sm90_tuning
from lmperf.attention.sm90.tma import tma_ready
from lmperf.errors import UsageError

# The Triton releases the Gluon kernels were checked on: they use Triton's internals (the op
# builder's TMA reduction, TensorDescriptor's fields, warp_specialize's calling convention).
GLUON_TRITON = ">=3.6,<3.7"
# Read once: triton.jit decides at import time whether kernels are interpreted.
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
ENABLED = os.environ.get("LMPERF_ATTENTION_GLUON", "1") != "0"
# The portable backward's dQ strategies, as the dK/dV kernel's DQ_MODE (3: "atomic" by TMA).
BACKWARDS = {"split": 0, "atomic": 1, "ordered": 2}
# Unnamed and nondeterminism allowed, the portable "atomic" backward from this many keys (causal):
# its five matmuls beat "split"'s seven there; shorter or non-causal, "split" is as fast or faster.
ATOMIC_FROM_KEYS = 4096


def _version(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def in_gluon_range(version: str, supported: str = GLUON_TRITON) -> bool:
    """Whether Triton `version` satisfies `supported`, comma-separated >=X.Y and <X.Y bounds."""
    ours = _version(version)
    for bound in supported.split(","):
        if bound.startswith(">=") and ours < _version(bound[2:]):
            return False
        if bound.startswith("<") and ours >= _version(bound[1:]):
            return False
    return True


GLUON_TRITON_OK = in_gluon_range(triton.__version__)


@contextlib.contextmanager
def gluon_disabled():
    """The portable kernels everywhere inside the block (ENABLED restored after, as it was).
    Around a forward alone it holds for that call's backward too (decided with the forward)."""
    global ENABLED
    enabled, ENABLED = ENABLED, False
    try:
        yield
    finally:
        ENABLED = enabled


def _asks_sm90(device: torch.device) -> bool:
    return torch.cuda.get_device_capability(device) == (9, 0)


_sm90 = functools.cache(_asks_sm90)


def hopper(device: torch.device) -> bool:
    """Whether `device` is an sm90 GPU (the Gluon kernels are written for Hopper's wgmma); cached,
    since every attention call asks."""
    return _sm90(device)


def gluon_fits(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the Gluon kernels take these 4-d (B, H, S, d) inputs, on any device: bf16/fp16
    alike (wgmma's 16-bit operands), a head_dim whose tiles are fitted (sm90.tuning.HEAD_DIMS)
    for all three, non-empty, and every tensor TMA-addressable."""
    return (
        q.dtype in (torch.bfloat16, torch.float16)
        and k.dtype == v.dtype == q.dtype
        and q.shape[-1] in sm90_tuning.HEAD_DIMS
        and k.shape[-1] == v.shape[-1] == q.shape[-1]
        and q.shape[-2] > 0
        and k.shape[-2] > 0
        and all(tma_ready(x) for x in (q, k, v))
    )


def gluon_kernels_run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the Gluon kernels may take these 4-d inputs at all: enabled, the Triton they were
    written for, compiled (the interpreter runs no Gluon), an sm90 GPU and `gluon_fits`. Asked
    once per call, for the forward and the backward."""
    return ENABLED and GLUON_TRITON_OK and not INTERPRETED and q.is_cuda and hopper(q.device) and gluon_fits(q, k, v)


def gluon_forward_runs(head_dim: int, seq_k: int, is_causal: bool, gluon: bool) -> bool:
    """Whether the Gluon forward runs (gluon: `gluon_kernels_run`'s answer): where it is faster
    than the portable forward (sm90.tuning's forward_from_keys)."""
    return gluon and seq_k >= sm90_tuning.current().forward_from_keys.get((head_dim, is_causal), 1)


def gluon_backward_runs(seq_k: int, gluon: bool) -> bool:
    """Whether "atomic" runs the Gluon backward (gluon: `gluon_kernels_run`'s answer): where it
    is faster than both portable backwards (sm90.tuning's backward_from_keys)."""
    return gluon and seq_k >= sm90_tuning.current().backward_from_keys


def backward_mode(requested: str | None = None, is_causal: bool = False, seq_k: int = 0, gluon: bool = False) -> str:
    """The dQ strategy: the one requested (checked against PyTorch's determinism); unnamed,
    "split" while torch.use_deterministic_algorithms(True) is set (the only repeatable one that
    is fast), else "atomic" where the Gluon backward runs (`gluon`: faster than both portable
    backwards wherever it runs) or ATOMIC_FROM_KEYS says so, "split" elsewhere."""
    if requested is None:
        fast_atomic = gluon or (is_causal and seq_k >= ATOMIC_FROM_KEYS)
        return "atomic" if fast_atomic and not torch.are_deterministic_algorithms_enabled() else "split"
    if requested not in BACKWARDS:
        raise UsageError(f"unknown backward {requested!r}; choose from {', '.join(BACKWARDS)}")
    if requested == "atomic" and torch.are_deterministic_algorithms_enabled():
        raise UsageError(
            'backward="atomic" adds dQ in a varying order; torch.use_deterministic_algorithms(True) '
            'is set, so use "split" or "ordered"'
        )
    return requested


def dq_by_tma(q: torch.Tensor, head_dim: int, second_block: int) -> bool:
    """Whether the portable "atomic" backward adds dQ's shares by TMA bulk reductions rather than
    per-thread atomics (which need each share moved through shared memory into a coalesced
    layout, with barriers, every query tile): a Hopper or newer GPU, compiled (the interpreter
    has no TMA), one column block (second_block 0: a reduction per block of 80 = 64 + 16 is
    slower than the atomics) and dQ's fp32 rows 16-byte aligned for the descriptor (head_dim a
    multiple of 4). Compiled models get it too: torch.compile sees the lmperf::flash_attention
    operator, not the scratch allocator the device-side descriptor needs."""
    return (
        not INTERPRETED
        and second_block == 0
        and head_dim % 4 == 0
        and torch.cuda.get_device_capability(q.device)[0] >= 9
    )
