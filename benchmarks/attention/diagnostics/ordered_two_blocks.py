"""Reproduce the illegal memory access of the ordered dK/dV kernel with two column blocks (head_dim
80 = 64 + 16) on a small GQA shape, for compute-sanitizer: `compute-sanitizer --tool memcheck
python3 benchmarks/attention/diagnostics/ordered_two_blocks.py [padded]`. lmperf itself pads the
head_dim in the ordered backward since 2026-11-23; this forces the two blocks back on.
Since that change (592db41) the ordered dQ path adds the first column block only, so on main's
kernels the forced run computes a wrong dQ instead of reproducing the fault: run it against the
kernels of ac8c5ab (`git worktree add /tmp/ac8c5ab ac8c5ab`, PYTHONPATH=/tmp/ac8c5ab/src)."""

import sys

import torch

from lmperf.attention import flash_triton as ft

ft.AUTOTUNE = False
if sys.argv[1:] == ["padded"]:
    ft.SPLIT_HEAD_DIM = False  # both versions pad then (main's ordered backward pads anyway)
else:
    column_blocks = ft._column_blocks
    # Each version's own default is two blocks: ac8c5ab's takes no `split` argument, main's pads on split=False.
    ft._column_blocks = lambda head_dim, split=True: column_blocks(head_dim)
q = torch.randn(1, 8, 300, 80, device="cuda", dtype=torch.bfloat16, requires_grad=True)
k, v = (torch.randn(1, 2, 300, 80, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
ft.FlashAttention2Triton.apply(q, k, v, True, "ordered").sum().backward()
torch.cuda.synchronize()
print("ordered backward finished", "(padded)" if sys.argv[1:] == ["padded"] else "(two column blocks)")
