"""The fused loss's Triton row kernel under TRITON_INTERPRET=1 on the CPU (fp32 and fp16).

Not collected on its own (no test_ prefix): test_cross_entropy_rows_interpreted.py runs this file
in a subprocess with TRITON_INTERPRET=1 set before Triton compiles anything. The interpreter's
row block is 32 wide, so rows of 1-257 columns cover one, several and ragged blocks.
Expected values: PyTorch's F.cross_entropy and autograd in float64.
"""

import os

import pytest
import torch
import torch.nn.functional as F

from lmperf.ops import cross_entropy_rows_triton, fused_linear_cross_entropy
from lmperf.ops.fused_linear_cross_entropy import IGNORE_INDEX

assert os.environ.get("TRITON_INTERPRET") == "1", "run through test_cross_entropy_rows_interpreted.py"
assert cross_entropy_rows_triton.BLOCK == 32


def _rows(n_rows, n_cols, dtype, spread, seed):
    generator = torch.Generator().manual_seed(seed)
    logits = (torch.randn(n_rows, n_cols, generator=generator, dtype=torch.float64) * spread).to(dtype)
    targets = torch.randint(0, n_cols, (n_rows,), generator=generator)
    targets[::3] = IGNORE_INDEX  # the first row among them
    return logits, targets


def _reference(logits, targets, scale):
    """Per-row losses and the gradient of scale * their sum, in float64 from the stored values."""
    exact = logits.double().requires_grad_()
    losses = F.cross_entropy(exact, targets, ignore_index=IGNORE_INDEX, reduction="none")
    (grad,) = torch.autograd.grad(losses.sum() * scale, exact)
    return losses.detach(), grad


@pytest.mark.parametrize("dtype, tolerance", [(torch.float32, 2e-6), (torch.float16, 1e-3)])
@pytest.mark.parametrize("n_cols", [1, 31, 32, 33, 100, 257])
@pytest.mark.parametrize("spread", [1.0, 30.0])  # 30: exp() of the raw logits would overflow fp16 and lose fp32
def test_losses_and_gradient_equal_float64_cross_entropy(dtype, tolerance, n_cols, spread):
    logits, targets = _rows(7, n_cols, dtype, spread, seed=n_cols)
    want_losses, want_grad = _reference(logits, targets, scale=0.37)
    losses = cross_entropy_rows_triton.cross_entropy_rows_(logits, targets, 0.37, IGNORE_INDEX)
    assert losses.dtype == torch.float32 and logits.dtype == dtype
    torch.testing.assert_close(losses.double(), want_losses, rtol=tolerance, atol=tolerance * spread)
    torch.testing.assert_close(logits.double(), want_grad, rtol=tolerance, atol=tolerance * 0.37)
    assert not logits[::3].any()  # ignored rows: zero gradient


def test_without_gradient_the_logits_stay():
    logits, targets = _rows(5, 45, torch.float32, 3.0, seed=1)
    before = logits.clone()
    losses = cross_entropy_rows_triton.cross_entropy_rows_(logits, targets, 1.0, IGNORE_INDEX, need_grad=False)
    torch.testing.assert_close(losses.double(), _reference(before, targets, 1.0)[0], rtol=2e-6, atol=2e-6)
    assert torch.equal(logits, before)


def test_a_strided_block_of_rows():
    wide, targets = _rows(6, 80, torch.float32, 2.0, seed=2)
    block = wide[:, :50]  # rows 80 apart, 50 columns each: only the first 50 are touched
    want_losses, want_grad = _reference(block.clone(), targets.clamp(max=49), 1.0)
    losses = cross_entropy_rows_triton.cross_entropy_rows_(block, targets.clamp(max=49), 1.0, IGNORE_INDEX)
    torch.testing.assert_close(losses.double(), want_losses, rtol=2e-6, atol=2e-6)
    torch.testing.assert_close(block.double(), want_grad, rtol=2e-6, atol=2e-6)


def test_bad_blocks_are_value_errors():
    logits, targets = _rows(4, 9, torch.float32, 1.0, seed=3)
    with pytest.raises(ValueError, match="contiguous rows"):
        cross_entropy_rows_triton.cross_entropy_rows_(logits.T, targets[:4], 1.0, IGNORE_INDEX)
    with pytest.raises(ValueError, match="targets"):
        cross_entropy_rows_triton.cross_entropy_rows_(logits, targets[:3], 1.0, IGNORE_INDEX)
    targets[2] = 9  # one past the row: the kernel would read the next row's first logit
    before = logits.clone()
    with pytest.raises(ValueError, match="target 9 at position 2 is outside"):
        cross_entropy_rows_triton.cross_entropy_rows_(logits, targets, 1.0, IGNORE_INDEX)
    assert torch.equal(logits, before)  # refused before the kernel wrote a gradient over them


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("n, v, d, chunk", [(37, 53, 19, 8), (45, 100, 7, None)])
def test_fused_loss_takes_the_kernel_and_equals_cross_entropy(n, v, d, chunk, reduction, monkeypatch):
    calls = []
    kernel = cross_entropy_rows_triton.cross_entropy_rows_
    monkeypatch.setattr(
        cross_entropy_rows_triton,
        "cross_entropy_rows_",
        lambda *args, **kw: calls.append(args[0].shape) or kernel(*args, **kw),
    )
    generator = torch.Generator().manual_seed(n)
    hidden = torch.randn(n, d, generator=generator, dtype=torch.float64)
    weight = torch.randn(v, d, generator=generator, dtype=torch.float64) / d**0.5
    targets = torch.randint(0, v, (n,), generator=generator)
    targets[::5] = IGNORE_INDEX
    results = []
    for dtype, loss_fn in [
        (torch.float32, lambda h, w: fused_linear_cross_entropy(h, w, targets, reduction, chunk)),
        (torch.float64, lambda h, w: F.cross_entropy(h @ w.T, targets, reduction=reduction)),
    ]:
        h, w = hidden.to(dtype).requires_grad_(), weight.to(dtype).requires_grad_()
        loss = loss_fn(h, w)
        results.append((loss, *torch.autograd.grad(loss * 1.3, (h, w))))
    assert len(calls) == -(-n // (chunk or n))  # every chunk went through the kernel
    for got, want in zip(*results):
        torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-6)
