"""lmperf's Triton AdamW kernel and optimizer under TRITON_INTERPRET=1 on the CPU (fp32 and fp16).

Not collected on its own (no test_ prefix): test_adamw_interpreted.py runs this file in a
subprocess with TRITON_INTERPRET=1 set before Triton compiles anything. The interpreter's block is
64 elements, so tensors of 1-4,097 elements cover one, several and ragged blocks.
Expected values: AdamW's update written out in float64 from its definition (Loshchilov and
Hutter's decoupled weight decay, with PyTorch's eps outside the bias-corrected square root), and
torch.optim.AdamW itself for the optimizer.
"""

import os

import pytest
import torch

from lmperf.ops import adamw_triton
from lmperf.ops.adamw import AdamW, triton_kernel
from lmperf.ops.adamw_hyperparameters import Hyperparameters

assert os.environ.get("TRITON_INTERPRET") == "1", "run through test_adamw_interpreted.py"
assert adamw_triton.BLOCK == 64


def _adamw_float64(p, g, m, v, hyper, step):
    lr, beta1, beta2, eps, weight_decay = hyper.lr, hyper.beta1, hyper.beta2, hyper.eps, hyper.weight_decay
    p, g, m, v = (t.double() for t in (p, g, m, v))
    p = p * (1 - lr * weight_decay)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    m_hat = m / (1 - beta1**step)
    v_hat = v / (1 - beta2**step)
    return p - lr * m_hat / (v_hat.sqrt() + eps), m, v


def _tensors(n, dtype, seed):
    generator = torch.Generator().manual_seed(seed)
    p = torch.randn(n, generator=generator, dtype=torch.float64)
    g = torch.randn(n, generator=generator, dtype=torch.float64) * 1e-2
    g[::5] *= 1e-6  # gradients whose square is far below eps's scale: eps placement shows there
    m = torch.randn(n, generator=generator, dtype=torch.float64) * 1e-2
    v = torch.rand(n, generator=generator, dtype=torch.float64) * 1e-4
    return [t.to(dtype) for t in (p, g, m, v)]


@pytest.mark.parametrize("n", [1, 63, 64, 65, 1000, 4097])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("step,weight_decay", [(1, 0.0), (2, 0.1), (7, 0.01)])
def test_kernel_matches_float64_adamw(n, dtype, step, weight_decay):
    p, g, m, v = _tensors(n, dtype, seed=n + step)
    hyper = Hyperparameters(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=weight_decay)
    want_p, want_m, want_v = _adamw_float64(p, g, m, v, hyper, step)
    adamw_triton.adamw_((p, g, m, v), hyper, step)
    # fp32 arithmetic, then one rounding to the storage dtype
    tolerance = dict(rtol=2e-6, atol=1e-9) if dtype == torch.float32 else dict(rtol=1e-3, atol=1e-6)
    for got, want in ((p, want_p), (m, want_m), (v, want_v)):
        torch.testing.assert_close(got.double(), want.to(dtype).double(), **tolerance)


def test_mixed_storage_dtypes_keep_each_tensors_own():
    """An fp16 parameter with fp32 moments: each tensor is stored back in its own dtype."""
    p, g, m, v = _tensors(300, torch.float32, seed=3)
    p16, g16 = p.half(), g.half()
    hyper = Hyperparameters(lr=1e-3, beta1=0.9, beta2=0.95, eps=1e-8, weight_decay=0.1)
    want_p, want_m, want_v = _adamw_float64(p16, g16, m, v, hyper, 3)
    adamw_triton.adamw_((p16, g16, m, v), hyper, 3)
    assert (p16.dtype, m.dtype, v.dtype) == (torch.float16, torch.float32, torch.float32)
    torch.testing.assert_close(p16.double(), want_p.half().double(), rtol=1e-3, atol=1e-6)
    torch.testing.assert_close(m.double(), want_m, rtol=2e-6, atol=1e-9)
    torch.testing.assert_close(v.double(), want_v, rtol=2e-6, atol=1e-12)


def _model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(33, 65), torch.nn.GELU(), torch.nn.Linear(65, 7))


@pytest.mark.parametrize("weight_decay", [0.0, 0.05])
def test_optimizer_follows_torch_adamw_over_steps(weight_decay, monkeypatch):
    launches = []
    kernel_update = adamw_triton.adamw_
    monkeypatch.setattr(adamw_triton, "adamw_", lambda *a, **k: launches.append(1) or kernel_update(*a, **k))
    ours, theirs = _model(0), _model(0)
    hyper = dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-8, weight_decay=weight_decay)
    optimizers = [AdamW(ours.parameters(), **hyper), torch.optim.AdamW(theirs.parameters(), foreach=False, **hyper)]
    x = torch.randn(16, 33, generator=torch.Generator().manual_seed(1))
    for _ in range(4):
        for model, optimizer in zip((ours, theirs), optimizers):
            optimizer.zero_grad()
            model(x).square().mean().backward()
            optimizer.step()
    assert len(launches) == 4 * 4  # every parameter tensor took the kernel, not the fallback
    for a, b in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)
    state, their_state = optimizers[0].state[ours[0].weight], optimizers[1].state[theirs[0].weight]
    assert state["step"].item() == their_state["step"].item() == 4
    torch.testing.assert_close(state["exp_avg_sq"], their_state["exp_avg_sq"], rtol=1e-5, atol=1e-12)


def test_kernel_and_fallback_agree():
    """A transposed (non-contiguous) parameter takes the PyTorch path: the same update."""
    p, g, m, v = _tensors(24 * 40, torch.float32, seed=9)
    hyper = Hyperparameters(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.1)
    by_kernel = [t.clone() for t in (p, g, m, v)]
    adamw_triton.adamw_(by_kernel, hyper, 2)
    strided = [t.clone().view(40, 24).t() for t in (p, g, m, v)]
    assert triton_kernel(strided) is None
    from lmperf.ops.adamw import _adamw_torch_

    _adamw_torch_(strided, hyper, 2)
    for kernel_result, fallback_result in zip(by_kernel, strided):
        torch.testing.assert_close(fallback_result.t().reshape(-1), kernel_result, rtol=2e-6, atol=1e-9)
