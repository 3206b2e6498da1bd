"""Workload for an Nsight Compute stall profile of the attention kernels (run under ncu).

Each case runs forward + backward a few times outside any NVTX range (the autotuner's trials and
the compilations), then once inside ranges named `prof` (ncu --nvtx --nvtx-include "prof/"), so
ncu sees exactly one launch of each kernel per case. NVTX push/pop ranges belong to a thread, and
autograd runs CUDA backward nodes on its own device thread, so the backward's range is opened and
closed there, by hooks: on O's gradient (before attention's backward) and on q's (after it). Cases, in this order (printed, so the report's
kernels can be matched to them by order and grid): bf16, 16k tokens per batch, heads x head_dim =
2048, as in variants.py:
    d64 causal 16k   Triton default (since e53598a the Gluon forward and backward) and SDPA cuDNN
    d128 causal 16k  Triton default (since 46bf753 the Gluon forward and backward) and SDPA cuDNN
    d64 full 16k     Triton split (the dK/dV and dQ kernels)
    d128 causal 16k  flash_triton's atomic backward (the Gluon backward off), which is ahead of
                     the Gluon one there (Triton's time / Gluon's 0.948-1.011): to see why
    d128 full 4k     Triton default (the Gluon forward and backward) and SDPA cuDNN
    d64 full 4k      Triton default and SDPA cuDNN (the Gluon backward's widest gap to cuDNN's)
    d128 causal 2k   Triton default and SDPA cuDNN (the Gluon forward's widest gap to cuDNN's)
    d128 full 1k     Triton default and SDPA cuDNN (short: the per-query-tile costs)
    d64 full 2k      Triton default and SDPA cuDNN (with 4k, the two points short of 1.1x cuDNN)
STALL_CASES (comma-separated indices into CASES) profiles a subset.
Usage: ncu --nvtx --nvtx-include "prof/" ... python3 benchmarks/attention/stall_profile.py
"""

import os

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from lmperf.attention import flash_triton
from lmperf.attention.flash_triton import FlashAttention2Triton

CASES = [
    (64, True, 16384, "triton"),
    (64, True, 16384, "sdpa-cudnn"),
    (128, True, 16384, "triton"),
    (128, True, 16384, "sdpa-cudnn"),
    (64, False, 16384, "triton-split"),
    (128, True, 16384, "triton-atomic-backward"),
    (128, False, 4096, "triton"),
    (128, False, 4096, "sdpa-cudnn"),
    (64, False, 4096, "triton"),
    (64, False, 4096, "sdpa-cudnn"),
    (128, True, 2048, "triton"),
    (128, True, 2048, "sdpa-cudnn"),
    (128, False, 1024, "triton"),
    (128, False, 1024, "sdpa-cudnn"),
    (64, False, 2048, "triton"),
    (64, False, 2048, "sdpa-cudnn"),
]
# STALL_CASES="2,3,6,7": profile only these cases (indices into CASES); all by default.
_CHOSEN = os.environ.get("STALL_CASES")
if _CHOSEN:
    CASES = [CASES[int(i)] for i in _CHOSEN.split(",")]


def _open_range(grad):
    torch.cuda.nvtx.range_push("prof")  # returns the depth; a hook must return None


def _close_range(grad):
    torch.cuda.nvtx.range_pop()


def run(impl, q, k, v, causal, do, profiled=False):
    if profiled:
        torch.cuda.nvtx.range_push("prof")
    if impl == "sdpa-cudnn":
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
    elif impl == "triton-atomic-backward":  # flash_triton's own kernels where the Gluon backward runs
        gluon_backward = flash_triton.flash_gluon_backward
        enabled, gluon_backward.ENABLED = gluon_backward.ENABLED, False
        try:
            o = FlashAttention2Triton.apply(q, k, v, causal, "atomic")  # the forward decides for the backward
        finally:
            gluon_backward.ENABLED = enabled
    else:
        o = FlashAttention2Triton.apply(q, k, v, causal, "split" if impl == "triton-split" else None)
    if profiled:
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        o.register_hook(_open_range)
        handle = q.register_hook(_close_range)
    o.backward(do)
    if profiled:
        handle.remove()


def main():
    for d, causal, seq, impl in CASES:
        batch, heads = 16384 // seq, 2048 // d
        shape = (batch, heads, seq, d)
        q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
        do = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
        for _ in range(3):  # autotuning and compilation, outside the profiled range
            run(impl, q, k, v, causal, do)
        torch.cuda.synchronize()
        print(f"case d={d} causal={causal} seq={seq} {impl} shape={shape}", flush=True)
        run(impl, q, k, v, causal, do, profiled=True)
        torch.cuda.synchronize()


if __name__ == "__main__":
    main()
