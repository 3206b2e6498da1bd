"""lmperf's Triton AdamW on a GPU, bf16 included: beside PyTorch's fused AdamW over several steps.

Both compute in fp32 and round once to the storage dtype, in the same order of operations, but
Triton's fp32 division and square root are its fast ones and may round differently from CUDA's by
a few units in the last place. That error is in the update, whose size is about the learning rate
per step: each step may then round the stored parameter the other way, so the two may differ by
one unit in the last place of the parameter per step plus a few fp32 units of the updates. A wrong
formula (a bias correction or eps misplaced) moves a parameter by a sizeable part of the learning
rate, outside that in fp32; the formula itself is checked exactly under the interpreter.
"""

import pytest
import torch

from lmperf.ops import AdamW

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(1,), (4097,), (257, 131), (2048, 4096)])
def test_steps_match_pytorch_fused_adamw(dtype, shape):
    generator = torch.Generator(device="cuda").manual_seed(sum(shape))
    start = torch.randn(shape, device="cuda", generator=generator).to(dtype)
    ours, theirs = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    hyper, steps = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1), 3
    optimizers = AdamW([ours], **hyper), torch.optim.AdamW([theirs], fused=True, **hyper)
    for _ in range(steps):
        grad = (torch.randn(shape, device="cuda", generator=generator) * 1e-2).to(dtype)
        for param, optimizer in zip((ours, theirs), optimizers):
            param.grad = grad.clone()
            optimizer.step()
    update_rounding = steps * hyper["lr"] * 8 * torch.finfo(torch.float32).eps
    tolerance = steps * torch.finfo(dtype).eps * ours.detach().abs().float() + update_rounding
    assert ((ours.detach().float() - theirs.detach().float()).abs() <= tolerance).all()
    assert not torch.equal(ours.detach(), start)  # it moved
    for key in ("exp_avg", "exp_avg_sq"):
        torch.testing.assert_close(optimizers[0].state[ours][key], optimizers[1].state[theirs][key])
