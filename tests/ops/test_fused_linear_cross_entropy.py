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
    for g, w in zip(
        _loss_and_grads(fused, hidden, weight, targets, "mean"),
        _loss_and_grads(_reference, hidden, weight, targets, "mean"),
    ):
        torch.testing.assert_close(g, w, rtol=1e-12, atol=1e-13)


def test_all_rows_ignored_gives_zero_loss_and_gradients():
    hidden, weight, targets = _problem(9, 11, 4)
    targets.fill_(IGNORE_INDEX)
    loss, dh, dw = _loss_and_grads(fused_linear_cross_entropy, hidden, weight, targets, "sum")
    assert loss.item() == 0 and not dh.any() and not dw.any()


def test_all_rows_ignored_with_mean_is_nan_as_in_pytorch():
    hidden, weight, targets = _problem(9, 11, 4)
    targets.fill_(IGNORE_INDEX)
    loss, dh, dw = _loss_and_grads(fused_linear_cross_entropy, hidden, weight, targets, "mean")
    want, want_dh, want_dw = _loss_and_grads(_reference, hidden, weight, targets, "mean")
    assert torch.isnan(want) and torch.isnan(loss)  # 0 / 0: PyTorch's answer, and ours
    torch.testing.assert_close((dh, dw), (want_dh, want_dw))  # zeros, as PyTorch's


class _Ops(TorchDispatchMode):
    """Records the name of every aten op that runs."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.__name__)
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("bad", [11, 12, -1, -101])
def test_a_target_outside_the_vocabulary_is_named_before_any_matmul(bad):
    hidden, weight, targets = _problem(9, 11, 4)
    targets[5] = bad  # F.cross_entropy: an IndexError on a CPU, a device assert on a GPU
    with _Ops() as ops, pytest.raises(ValueError, match=rf"^target {bad} at position 5 is outside \[0, 11\)"):
        fused_linear_cross_entropy(hidden, weight, targets, chunk_size=4)
    assert not any(name.startswith(("mm", "addmm", "matmul")) for name in ops.names)


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


class _PeakHeap(TorchDispatchMode):
    """glibc's bytes in use (mallinfo2: heap and mmapped blocks) after every aten op, highest kept:
    what a CPU computation holds at its fullest, op by op, whatever allocates it."""

    def __init__(self, mallinfo2):
        super().__init__()
        self.mallinfo2, self.base, self.peak = mallinfo2, self._in_use(mallinfo2), 0

    @staticmethod
    def _in_use(mallinfo2) -> int:
        info = mallinfo2()
        return info.uordblks + info.hblkhd

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.peak = max(self.peak, self._in_use(self.mallinfo2) - self.base)
        return out


def _mallinfo2():
    import ctypes
    import ctypes.util

    try:
        mallinfo2 = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").mallinfo2
    except (OSError, AttributeError):
        pytest.skip("needs glibc's mallinfo2 (glibc 2.33 or later)")
    fields = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    mallinfo2.restype = type("mallinfo2", (ctypes.Structure,), {"_fields_": [(f, ctypes.c_size_t) for f in fields]})
    return mallinfo2


@pytest.mark.parametrize("dtype, blocks", [(torch.float32, 1.0), (torch.bfloat16, 1.5)])
def test_the_cpu_working_set_is_the_one_the_docstring_states(dtype, blocks):
    # One fp32 (chunk, V) block, in place; 16-bit inputs add a 16-bit block beside it while
    # converting (half an fp32 block). Beyond the block: the dhidden and fp32 dweight kept for the
    # backward, and small per-row vectors; a second block (the previous chunk's gradient kept into
    # the next chunk, or logsumexp's temporary) would exceed the bound by a whole block.
    n, v, d, chunk = 1024, 8192, 8, 256
    hidden, weight, targets = (t.detach() for t in _problem(n, v, d, dtype=dtype))
    hidden.requires_grad_(), weight.requires_grad_()
    with _PeakHeap(_mallinfo2()):  # one-time allocations (the first dispatch mode's too) out of the way
        fused_linear_cross_entropy(hidden, weight, targets, chunk_size=chunk)
    with _PeakHeap(_mallinfo2()) as heap:
        fused_linear_cross_entropy(hidden, weight, targets, chunk_size=chunk)
    block, kept = chunk * v * 4, n * d * hidden.element_size() + v * d * 4
    # 16-bit dweight also passes through a (V, d) 16-bit and fp32 product per chunk: 6 V d bytes
    per_chunk = v * d * 6 if dtype != torch.float32 else 0
    assert heap.peak <= kept + per_chunk + blocks * block + 0.1 * block, (heap.peak - kept - per_chunk) / block


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
    monkeypatch.setattr(
        cross_entropy_rows_triton, "cross_entropy_rows_", lambda *args, **kw: calls.append(1) or kernel(*args, **kw)
    )
    hidden, weight, targets = _problem(3001, 50257, 64, dtype=dtype, device="cuda")
    got = _loss_and_grads(
        lambda h, w, t, r: fused_linear_cross_entropy(h, w, t, r, chunk_size=1000), hidden, weight, targets, reduction
    )
    assert len(calls) == 4
    h64, w64 = (t.detach().double().requires_grad_() for t in (hidden, weight))
    want = _loss_and_grads(_reference, h64, w64, targets, reduction)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.double(), w, rtol=rtol, atol=rtol * w.abs().max().item())


class _HeadAndLoss(torch.nn.Module):
    """A last norm-free layer and the fused loss, as a model compiled whole calls it."""

    def __init__(self, d: int, v: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(d, d)
        self.head = torch.nn.Linear(d, v, bias=False)

    def forward(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return fused_linear_cross_entropy(torch.relu(self.proj(x)), self.head.weight, targets)


def _compiled_against_eager(device: str, dtype: torch.dtype, backend: str) -> None:
    torch.manual_seed(0)
    model = _HeadAndLoss(32, 50).to(device)
    x = torch.randn(37, 32, device=device)
    targets = torch.randint(0, 50, (37,), device=device)
    compiled = torch.compile(model, backend=backend)
    losses, grads = [], []
    for run in (model, compiled):
        model.zero_grad(set_to_none=True)
        with torch.autocast(device, dtype=dtype, enabled=dtype != torch.float32):
            loss = run(x, targets)
        loss.backward()
        losses.append(loss.detach())
        grads.append([p.grad.clone() for p in model.parameters()])
    # the reference: PyTorch's own cross-entropy of the same layers' logits, in fp64
    logits = (
        torch.relu(x.double() @ model.proj.weight.double().T + model.proj.bias.double()) @ model.head.weight.double().T
    )
    reference = F.cross_entropy(logits, targets)
    tolerance = 1e-5 if dtype == torch.float32 else 3e-2
    assert torch.allclose(losses[0].double(), reference, rtol=tolerance)
    assert torch.allclose(losses[1].double(), reference, rtol=tolerance)
    # bf16: inductor fuses the projection's epilogue and rounds where eager does not
    rtol = 1e-4 if dtype == torch.float32 else 3e-2
    for eager, compiled_grad in zip(*grads):
        torch.testing.assert_close(compiled_grad, eager, rtol=rtol, atol=rtol * eager.abs().max().item())


def test_a_model_compiled_whole_runs_the_loss_and_its_gradients():
    """torch.compile traces the model around the loss (a graph break at it) and gets the eager
    model's loss and gradients."""
    explained = torch._dynamo.explain(_HeadAndLoss(8, 10))(torch.randn(4, 8), torch.randint(0, 10, (4,)))
    # the loss runs outside the traced graph: dynamo skips it rather than tracing it
    assert any("disable" in reason.reason for reason in explained.break_reasons)
    _compiled_against_eager("cpu", torch.float32, "aot_eager")


@pytest.mark.gpu
def test_a_model_compiled_whole_with_inductor_runs_the_fused_loss_on_gpu():
    """The bf16 path whose fp32-accumulating addmm dynamo cannot trace, under inductor."""
    _compiled_against_eager("cuda", torch.bfloat16, "inductor")
