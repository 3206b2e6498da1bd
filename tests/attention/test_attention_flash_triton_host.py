"""flash_triton's host side on the CPU, without Triton's interpreter: which kernels a call launches."""

import pytest
import torch

flash_triton = pytest.importorskip("lmperf.attention.flash_triton")
from triton.runtime import _allocation  # noqa: E402  (after the importorskip: needs Triton)

from lmperf.attention import dispatch  # noqa: E402


@pytest.fixture
def recorded(monkeypatch):
    """The kernels the host launches, by name (delta: the preprocess kernel), and the allocator
    Triton would have used for each launch's scratch memory."""
    launched = []

    def run_kernel(name, *args, **kw):
        launched.append((name, kw.get("DQ_MODE"), _allocation._allocator.get()))

    monkeypatch.setattr(flash_triton, "_PREPROCESS_LAUNCH", lambda grid, *args, **kw: launched.append(("delta", None, None)))
    monkeypatch.setattr(flash_triton, "run_kernel", run_kernel)
    return launched


def inputs(head_dim=64):
    q, do, o = (torch.randn(2, 3, 40, head_dim) for _ in range(3))
    k, v = torch.randn(2, 1, 50, head_dim), torch.randn(2, 1, 50, head_dim)
    return q, k, v, o, torch.randn(2, 3, 40), do


def test_the_atomic_backward_hands_over_to_gluon_with_the_preprocessed_delta(monkeypatch, recorded):
    """Where the Gluon backward runs, "atomic" launches it with the preprocess kernel's delta and
    nothing of the portable dK/dV kernel; "split" never does."""
    grads = tuple(torch.full((1,), float(n)) for n in range(3))
    handed = []

    class Ops:
        @staticmethod
        def backward(*args):
            handed.append(args)
            return grads

    monkeypatch.setattr(dispatch, "sm90_ops", lambda: Ops)
    q, k, v, o, lse, do = inputs()
    assert flash_triton.triton_backward(q, k, v, o, lse, do, True, "atomic", gluon=True) is grads
    assert [name for name, _, _ in recorded] == ["delta"]
    gq, gk, gv, gdo, glse, gdelta, causal = handed[0]
    assert (gq, gk, gv, gdo, glse) == (q, k, v, do, lse) and gdelta.shape == lse.shape and causal is True
    recorded.clear()
    flash_triton.triton_backward(q, k, v, o, lse, do, True, "split", gluon=True)
    assert [name for name, _, _ in recorded] == ["delta", "dkdv", "dq"] and len(handed) == 1


def test_the_forward_falls_back_to_the_portable_kernel(monkeypatch, recorded):
    """Where the Gluon kernels cannot run (CPU tensors here), or where they would but the Gluon
    forward was not faster, the portable forward kernel runs."""
    q = torch.randn(1, 2, 300, 64, dtype=torch.bfloat16)
    flash_triton.triton_forward(q, q, q, True)
    assert [name for name, _, _ in recorded] == ["fwd"]
    monkeypatch.setattr(dispatch, "sm90_ops", lambda: pytest.fail("the Gluon forward ran"))
    flash_triton.triton_forward(q, q, q, True, gluon=True)  # d64 causal over 300 keys: the portable forward
    assert [name for name, _, _ in recorded] == ["fwd", "fwd"]
