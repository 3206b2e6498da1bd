"""flash_triton's host side on the CPU, without Triton's interpreter: which kernels a call launches,
and the TMA scratch memory of the "atomic" backward."""

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

    monkeypatch.setattr(
        flash_triton, "_PREPROCESS_LAUNCH", lambda grid, *args, **kw: launched.append(("delta", None, None))
    )
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

    monkeypatch.setattr(flash_triton, "sm90_backward", Ops)
    q, k, v, o, lse, do = inputs()
    assert flash_triton.triton_backward(q, k, v, o, lse, do, True, "atomic", gluon=True) is grads
    assert [name for name, _, _ in recorded] == ["delta"]
    gq, gk, gv, gdo, glse, gdelta, causal = handed[0]
    assert (gq, gk, gv, gdo, glse) == (q, k, v, do, lse) and gdelta.shape == lse.shape and causal is True
    recorded.clear()
    flash_triton.triton_backward(q, k, v, o, lse, do, True, "split", gluon=True)
    assert [name for name, _, _ in recorded] == ["delta", "dkdv", "dq"] and len(handed) == 1


def test_tma_scratch_is_allocated_on_the_inputs_device(monkeypatch):
    """The allocator installed around an "atomic" launch whose dQ goes by TMA allocates its scratch
    memory on the input's device, not on the current CUDA device (cuda:0 here, for q on cuda:1)."""
    allocations = []
    monkeypatch.setattr(torch, "empty", lambda *args, **kw: allocations.append(kw.get("device")))
    with flash_triton.tma_scratch_on(torch.device("cuda", 1)):
        _allocation._allocator.get()(256, 128, None)
    assert allocations == [torch.device("cuda", 1)]


def test_the_tma_allocator_is_set_only_around_the_launch_and_the_previous_one_restored(monkeypatch, recorded):
    """Triton's allocator is a process-wide setting: the "atomic" backward sets its own only while
    the dK/dV kernel launches (the launch that needs scratch memory), then restores whatever was
    set before, a user's allocator or none."""
    monkeypatch.setattr(dispatch, "dq_by_tma", lambda q, head_dim, second_block: True)

    def users_allocator(size, alignment, stream):
        return torch.empty(size, dtype=torch.int8)

    q, k, v, o, lse, do = inputs()
    for previous in (None, users_allocator):
        token = _allocation._allocator.set(previous) if previous else None
        before = _allocation._allocator.get()
        try:
            recorded.clear()
            flash_triton.triton_backward(q, k, v, o, lse, do, True, "atomic", gluon=False)
            (_, _, _), (name, dq_mode, during) = recorded
            assert name == "dkdv_dq" and dq_mode == 3
            assert during is not before and during.keywords == {"device": q.device}
            assert _allocation._allocator.get() is before
        finally:
            if token is not None:
                _allocation._allocator.reset(token)


def test_without_tma_the_allocator_is_left_alone(monkeypatch, recorded):
    monkeypatch.setattr(dispatch, "dq_by_tma", lambda q, head_dim, second_block: False)
    before = _allocation._allocator.get()
    q, k, v, o, lse, do = inputs()
    flash_triton.triton_backward(q, k, v, o, lse, do, True, "atomic", gluon=False)
    assert [(name, mode) for name, mode, _ in recorded] == [("delta", None), ("dkdv_dq", 1)]
    assert recorded[1][2] is before is _allocation._allocator.get()


def test_the_forward_falls_back_to_the_portable_kernel(monkeypatch, recorded):
    """Where the Gluon kernels cannot run (CPU tensors here), or where they would but the Gluon
    forward was not faster, the portable forward kernel runs."""
    q = torch.randn(1, 2, 300, 64, dtype=torch.bfloat16)
    flash_triton.triton_forward(q, q, q, True)
    assert [name for name, _, _ in recorded] == ["fwd"]
    monkeypatch.setattr(flash_triton, "sm90_forward", None)  # the Gluon forward would fail here
    flash_triton.triton_forward(q, q, q, True, gluon=True)  # d64 causal over 300 keys: the portable forward
    assert [name for name, _, _ in recorded] == ["fwd", "fwd"]
