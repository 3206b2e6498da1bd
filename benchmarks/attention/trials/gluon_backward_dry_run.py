"""Dry run of gluon_backward.py's device harnesses on the CPU, every kernel replaced by a torch
stand-in (the Gluon kernel needs an H100): shows that the rows come out as intended, and that the
float64 check reports bf16-sized errors for a correct backward, before a device call is spent.

    PYTHONPATH=src python benchmarks/attention/trials/gluon_backward_dry_run.py next_step   (or check_and_time, ablate)
"""
import json
import math
import sys
import time
from pathlib import Path

import torch
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gluon_backward as g
import lmperf.attention.flash_triton as ft
import triton.testing

g.DEVICE = "cpu"

def ref_forward(q, k, v, causal):
    group = q.shape[1] // k.shape[1]
    kk, vv = k.repeat_interleave(group, 1).float(), v.repeat_interleave(group, 1).float()
    s = q.float() @ kk.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1)
    return (torch.softmax(s, -1) @ vv).to(q.dtype), lse

def stand_in_backward(q, k, v, o, lse, do, causal, *args, **kwargs):
    with torch.enable_grad():
        qq, kk, vv = (t.detach().float().requires_grad_() for t in (q, k, v))
        o2, _ = ref_forward(qq, kk, vv, causal)
        o2.float().backward(do.float())
    return qq.grad.to(q.dtype), kk.grad.to(k.dtype), vv.grad.to(v.dtype)

ft.triton_forward = ref_forward
ft.triton_backward = stand_in_backward
g.gluon_backward = stand_in_backward
class FA(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal=False):
        ctx.save_for_backward(q, k, v); ctx.causal = causal
        return ref_forward(q, k, v, causal)[0]
    @staticmethod
    def backward(ctx, do):
        q, k, v = ctx.saved_tensors
        return (*stand_in_backward(q, k, v, None, None, do, ctx.causal), None)
ft.FlashAttention2Triton = FA
g._cudnn = lambda q, k, v, c: torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=c).to(q.dtype)
def fake_bench(fn, warmup=25, rep=100, grad_to_none=None):
    t = time.perf_counter(); fn(); return (time.perf_counter() - t) * 1e3
triton.testing.do_bench = fake_bench
g.GRID = [(64, False, 256), (64, True, 256), (128, True, 128)]
g.RAGGED = [(64, True, 77, 105, 8, 2), (128, False, 105, 77, 4, 1)]
getattr(g, sys.argv[1])('/tmp/gluon-backward-dry-run.jsonl', tokens=512)
rows = [json.loads(line) for line in open('/tmp/gluon-backward-dry-run.jsonl')]
print(len(rows), {r['kind'] for r in rows}, sorted({r.get('peer', r.get('variant')) for r in rows}))
print([ (r['variant'], round(r['max_rel_error_dq'],4)) for r in rows if r['kind']=='check'])
