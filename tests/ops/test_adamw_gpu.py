"""lmperf's Triton AdamW on a GPU, bf16 included: beside PyTorch's fused AdamW, step by step.

Both compute in fp32 and round once to the storage dtype, in the same order of operations, but
Triton's fp32 division and square root are its fast ones, and the two compilers contract
multiply-adds differently, so the fp32 results may differ by a few units in the last place. Once
rounded to bf16, such a difference may become one bf16 unit of a moment, which the next step
carries into its update at a relative size of bf16's eps: after a few steps the two trajectories
differ by more than any one step's rounding explains. So each step starts both optimizers from
the same parameter and moments (PyTorch's), and checks that one step: each new value (parameter,
moments) within one unit in the last place of the storage dtype (at most eps times its size)
plus a few fp32 units of the terms it sums (the old value, the update of about the learning
rate, the gradient's share). A wrong formula (a bias correction or the weight decay misplaced) moves a
small parameter by a sizeable part of the learning rate, far outside that; the formula itself is
checked exactly under the interpreter.
"""

import pytest
import torch

from lmperf.ops import AdamW

pytestmark = pytest.mark.gpu
MOMENTS = ("exp_avg", "exp_avg_sq")
FP32_UNITS = 8 * torch.finfo(torch.float32).eps


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("shape", [(1,), (4097,), (257, 131), (2048, 4096)])
def test_each_step_matches_pytorch_fused_adamw(dtype, shape):
    generator = torch.Generator(device="cuda").manual_seed(sum(shape))
    start = torch.randn(shape, device="cuda", generator=generator).to(dtype)
    ours, theirs = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    hyper = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    optimizers = AdamW([ours], **hyper), torch.optim.AdamW([theirs], fused=True, **hyper)
    eps, (beta1, beta2) = torch.finfo(dtype).eps, hyper["betas"]
    for step in range(1, 4):
        with torch.no_grad():
            ours.copy_(theirs)
            for key in MOMENTS if step > 1 else ():
                optimizers[0].state[ours][key].copy_(optimizers[1].state[theirs][key])
        before = {"param": theirs.detach().float().abs()}
        for key in MOMENTS:
            before[key] = (
                optimizers[1].state[theirs][key].float().abs() if step > 1 else torch.zeros(shape, device="cuda")
            )
        grad = (torch.randn(shape, device="cuda", generator=generator) * 1e-2).to(dtype)
        for param, optimizer in zip((ours, theirs), optimizers):
            param.grad = grad.clone()
            optimizer.step()
        g = grad.float().abs()
        # the sizes of the terms each new value sums: fp32 rounding is relative to them, not to
        # the result, which may be near zero where they cancel
        terms = {
            "param": before["param"] + 2 * hyper["lr"],
            "exp_avg": beta1 * before["exp_avg"] + (1 - beta1) * g,
            "exp_avg_sq": beta2 * before["exp_avg_sq"] + (1 - beta2) * g * g,
        }
        news = {"param": (ours.detach(), theirs.detach())}
        news |= {k: (optimizers[0].state[ours][k], optimizers[1].state[theirs][k]) for k in MOMENTS}
        for name, (mine, reference) in news.items():
            reference = reference.float()
            unit = torch.clamp(reference.abs(), min=torch.finfo(dtype).tiny) * eps  # subnormals: fixed spacing
            excess = (mine.float() - reference).abs() - unit - FP32_UNITS * terms[name]
            assert (excess <= 0).all(), f"step {step}: {name} off at {int((excess > 0).sum())} elements"
    assert not torch.equal(ours.detach(), start)  # it moved
