"""Named ranges around the parts of a step, seen by both torch.profiler and Nsight tools.

A region is a `torch.profiler.record_function` (for torch.profiler's tables) plus an NVTX range
(for nsys and ncu's `--nvtx-include`). Each is opened only when something listens: the profiler
when torch's profiler is running, NVTX when an Nsight tool has injected itself (it sets
NVTX_INJECTION64_PATH in the environment of the process it launches; LMPERF_NVTX=1 or 0 forces
NVTX on or off, and lmperf's own ncu/nsys launchers set it to 1). Otherwise a region is a
flag check, so the model keeps them on permanently. Inside a torch.compile graph they are
skipped: dynamo would otherwise break the graph at every range.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

import torch

# The canonical region names; profile tables group by them and the FLOP model uses the same keys.
ATTN_NORM = "attn_norm"
QKV_PROJ = "qkv_proj"
QK_NORM = "qk_norm"  # the per-head q and k norms of a model with qk_norm (Qwen3)
ROPE = "rope"
ATTN_SCORES = "attn_scores"
ATTN_SOFTMAX = "attn_softmax"
ATTN_WEIGHTED_SUM = "attn_weighted_sum"
ATTN_FUSED = "attn_fused"  # sdpa / flash kernels compute scores, softmax and sum in one kernel
OUT_PROJ = "out_proj"
FFN_NORM = "ffn_norm"
FFN = "ffn"
FINAL_NORM = "final_norm"
LM_HEAD = "lm_head"
LOSS = "loss"
EMBEDDING = "embedding"
FORWARD = "forward"
BACKWARD = "backward"
OPTIMIZER = "optimizer_step"


def _nvtx_listening() -> bool:
    forced = os.environ.get("LMPERF_NVTX")
    if forced is not None:
        return forced == "1" and torch.cuda.is_available()
    return torch.cuda.is_available() and bool(os.environ.get("NVTX_INJECTION64_PATH"))


NVTX_LISTENING = _nvtx_listening()


def _profiler_listening() -> bool:
    return torch._C._autograd._profiler_enabled()


@contextmanager
def region(name: str) -> Iterator[None]:
    """Mark `name` for whichever profiler listens; a no-op while torch.compile traces."""
    if torch.compiler.is_compiling():
        yield
        return
    if NVTX_LISTENING:
        torch.cuda.nvtx.range_push(name)
    try:
        if _profiler_listening():
            with torch.profiler.record_function(name):
                yield
        else:
            yield
    finally:
        if NVTX_LISTENING:
            torch.cuda.nvtx.range_pop()
