"""fused_linear_cross_entropy against PyTorch's own F.cross_entropy(hidden @ weight.T, targets)."""

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from lmperf.ops import fused_linear_cross_entropy
from lmperf.ops.fused_linear_cross_entropy import IGNORE_INDEX


def _problem(n, v, d, dtype=torch.float32, device="cpu", seed=0):
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, d, generator=generator, dtype=torch.float64).to(device, dtype).requires_grad_()
    weight = (torch.randn(v, d, generator=generator, dtype=torch.float64) / d**0.5).to(device, dtype).requires_grad_()
    targets = torch.randint(0, v, (n,), generator=generator).to(device)
    targets[::7] = IGNORE_INDEX  # some ignored rows, the first among them
    return hidden, weight, targets


def _loss_and_grads(loss_fn, hidden, weight, targets, reduction, upstream=1.3):
    loss = loss_fn(hidden, weight, targets, reduction)
    grads = torch.autograd.grad(loss * upstream, (hidden, weight))  # a non-unit incoming gradient
    return loss, *grads


def _reference(hidden, weight, targets, reduction):
    return F.cross_entropy(hidden @ weight.T, targets, ignore_index=IGNORE_INDEX, reduction=reduction)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("n, v, d, chunk", [(37, 53, 19, 8), (101, 1000, 33, 17), (5, 7, 3, None), (64, 129, 16, 64)])
def test_equals_cross_entropy_of_the_logits_in_fp32(n, v, d, chunk, reduction):
    hidden, weight, targets = _problem(n, v, d)
    fused = lambda h, w, t, r: fused_linear_cross_entropy(h, w, t, r, chunk_size=chunk)
    got = _loss_and_grads(fused, hidden, weight, targets, reduction)
    want = _loss_and_grads(_reference, hidden, weight, targets, reduction)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-6)


def test_equals_float64_reference_to_float64_precision():
    hidden, weight, targets = _problem(45, 77, 13, dtype=torch.float64)
    fused = lambda h, w, t, r: fused_linear_cross_entropy(h, w, t, r, chunk_size=10)
    for g, w in zip(_loss_and_grads(fused, hidden, weight, targets, "mean"),
                    _loss_and_grads(_reference, hidden, weight, targets, "mean")):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-13)


def test_all_rows_ignored_gives_zero_loss_and_gradients():
    hidden, weight, targets = _problem(9, 11, 4)
    targets.fill_(IGNORE_INDEX)
    loss, dh, dw = _loss_and_grads(fused_linear_cross_entropy, hidden, weight, targets, "sum")
    assert loss.item() == 0 and not dh.any() and not dw.any()


class _LargestTensor(TorchDispatchMode):
    """Records the element count of every tensor any aten op produces."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in torch.utils._pytree.tree_leaves(out):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_never_allocates_the_logits():
    n, v, d, chunk = 512, 3000, 8, 64
    hidden, weight, targets = _problem(n, v, d)
    with _LargestTensor() as fused:
        fused_linear_cross_entropy(hidden, weight, targets, chunk_size=chunk).backward()
    with _LargestTensor() as eager:
        _reference(hidden, weight, targets, "mean").backward()
    assert eager.largest >= n * v  # the probe sees the logits when they exist
    assert fused.largest <= chunk * v < n * v


def test_bad_arguments_are_value_errors():
    hidden, weight, targets = _problem(4, 6, 3)
    with pytest.raises(ValueError, match="reduction"):
        fused_linear_cross_entropy(hidden, weight, targets, "none")
    with pytest.raises(ValueError, match="weight"):
        fused_linear_cross_entropy(hidden, weight.T, targets)


@pytest.mark.gpu
@pytest.mark.parametrize("n, v, d", [(4097, 32003, 256), (1000, 151936, 128)])
def test_bf16_on_gpu_matches_fp32_cross_entropy(n, v, d):
    hidden, weight, targets = _problem(n, v, d, dtype=torch.bfloat16, device="cuda")
    got = _loss_and_grads(fused_linear_cross_entropy, hidden, weight, targets, "mean")
    h32, w32 = (t.detach().float().requires_grad_() for t in (hidden, weight))
    want = _loss_and_grads(_reference, h32, w32, targets, "mean")
    torch.testing.assert_close(got[0], want[0], rtol=1e-3, atol=1e-3)
    for g, w in zip(got[1:], want[1:]):  # bf16 gradients: ~3 significant digits
        torch.testing.assert_close(g.float(), w, rtol=2e-2, atol=2e-2 * w.abs().max().item())


@pytest.mark.gpu
# fp16 with "sum": under "mean" the scaled gradient of the logits (~1e-8 here) is below fp16's
# smallest subnormal and flushes to zero, in eager F.cross_entropy as here (why fp16 needs loss scaling).
@pytest.mark.parametrize("dtype, reduction, rtol", [(torch.float32, "mean", 1e-4), (torch.float16, "sum", 2e-2)])
def test_on_gpu_the_triton_kernel_runs_and_matches_float64(dtype, reduction, rtol, monkeypatch):
    from lmperf.ops import cross_entropy_rows_triton

    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)  # fp32 round-off, not TF32's
    calls = []
    kernel = cross_entropy_rows_triton.cross_entropy_rows_
    monkeypatch.setattr(cross_entropy_rows_triton, "cross_entropy_rows_",
                        lambda *args, **kw: calls.append(1) or kernel(*args, **kw))
    hidden, weight, targets = _problem(3001, 50257, 64, dtype=dtype, device="cuda")
    got = _loss_and_grads(lambda h, w, t, r: fused_linear_cross_entropy(h, w, t, r, chunk_size=1000),
                          hidden, weight, targets, reduction)
    assert len(calls) == 4
    h64, w64 = (t.detach().double().requires_grad_() for t in (hidden, weight))
    want = _loss_and_grads(_reference, h64, w64, targets, reduction)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double(), w, rtol=rtol, atol=rtol * w.abs().max().item())
