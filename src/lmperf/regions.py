"""Named ranges around the parts of a step, seen by both torch.profiler and Nsight tools.

A region is a `torch.profiler.record_function` (for torch.profiler's tables) plus an NVTX range
(for nsys and ncu's `--nvtx-include`). With no profiler listening both are a flag check, so the
model keeps them on permanently. Inside a torch.compile graph they are skipped: dynamo would
otherwise break the graph at every range.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import torch

# The canonical region names; profile tables group by them and the FLOP model uses the same keys.
ATTN_NORM = "attn_norm"
QKV_PROJ = "qkv_proj"
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

_nvtx_available = torch.cuda.is_available()


@contextmanager
def region(name: str) -> Iterator[None]:
    """Mark `name` for profilers; a no-op while torch.compile traces."""
    if torch.compiler.is_compiling():
        yield
        return
    if _nvtx_available:
        torch.cuda.nvtx.range_push(name)
    try:
        with torch.profiler.record_function(name):
            yield
    finally:
        if _nvtx_available:
            torch.cuda.nvtx.range_pop()
