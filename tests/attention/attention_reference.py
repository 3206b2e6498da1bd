"""The float64 reference every attention test compares against, and shared input drawing."""

from __future__ import annotations

import math

import torch
from hypothesis import strategies as st

from lmperf.attention.naive import naive_attention_with_lse
from lmperf.model.step import ModelStep, StepConfig


def random_qkv(lead, seq_q, seq_k, head_dim, dtype, device="cpu", seed=0, kv_heads=None):
    """q, k, v (requiring grad) and an output gradient; kv_heads replaces k's and v's lead[-1] (GQA)."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    draw = lambda lead, n: torch.randn(*lead, n, head_dim, generator=generator).to(device, dtype)  # noqa: E731
    kv_lead = (*lead[:-1], kv_heads) if kv_heads else lead
    q, k, v = draw(lead, seq_q), draw(kv_lead, seq_k), draw(kv_lead, seq_k)
    do = draw(lead, seq_q)
    return [t.requires_grad_() for t in (q, k, v)] + [do]


def reference(q, k, v, do, is_causal):
    """Output, LSE, dQ, dK, dV in float64 (GQA: k, v repeated per query head; autograd sums dK, dV)."""
    q64, k64, v64 = (t.detach().double().requires_grad_() for t in (q, k, v))
    group = q.shape[-3] // k.shape[-3] if q.dim() > 2 else 1
    repeat = lambda t: t.repeat_interleave(group, dim=-3) if group > 1 else t  # noqa: E731
    out, lse = naive_attention_with_lse(q64, repeat(k64), repeat(v64), is_causal)
    out.backward(do.double())
    return out, lse, q64.grad, k64.grad, v64.grad


def masked_softmax_reference(q, k, v, visible):
    """softmax(q k^T / sqrt(d)) v over the scores `visible` marks."""
    scores = (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).masked_fill(~visible, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def top_left_and_bottom_right(q, k, v):
    """Causal attention in float64 with each alignment: (top-left output, bottom-right output
    over the rows that see a key, those rows)."""
    q, k, v = (t.double() for t in (q, k, v))
    rows, cols = torch.arange(q.shape[-2])[:, None], torch.arange(k.shape[-2])[None, :]
    top_left = masked_softmax_reference(q, k, v, cols <= rows)
    bottom_right_visible = cols <= rows + (k.shape[-2] - q.shape[-2])
    live = bottom_right_visible.any(-1)  # bottom-right rows that see no key at all have no output
    return top_left, masked_softmax_reference(q[..., live, :], k, v, bottom_right_visible[live]), live


def rel_err(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """||actual - expected|| / ||expected||; NaN anywhere fails every bound.

    Below a norm of 1 the error is absolute: with one visible key dQ is exactly 0.
    """
    actual = actual.double().to(expected.device)
    if not torch.isfinite(actual).all():
        return float("inf")
    return ((actual - expected).norm() / max(expected.norm().item(), 1.0)).item()


def check_against_reference(forward_with_lse, apply, q, k, v, do, is_causal, tolerance):
    """The implementation's output/LSE (forward_with_lse) and gradients (apply + autograd)."""
    expected = reference(q, k, v, do, is_causal)
    out, lse = forward_with_lse(q, k, v, is_causal)
    apply(q, k, v, is_causal).backward(do)
    actual = (out, lse, q.grad, k.grad, v.grad)
    for name, a, e in zip(("out", "lse", "dq", "dk", "dv"), actual, expected):
        assert a.shape == e.shape, name
        assert rel_err(a, e) < tolerance, f"{name}: relative error {rel_err(a, e):.2e}"


def model_loss_and_grads(attention: str, device: str = "cpu", precision: str = "fp32"):
    """Loss and parameter gradients of the tiny model, same weights and batch for every `attention`."""
    torch.manual_seed(0)
    config = StepConfig("tiny", 24, "forward-backward", precision, attention=attention, batch=2)
    step = ModelStep(config, torch.device(device))
    loss = step.loss()
    loss.backward()
    return loss.detach(), [p.grad for p in step.model.parameters()]


def shapes(max_seq: int, max_lead: int) -> st.SearchStrategy:
    """Drawn (lead, seq_q, seq_k, head_dim, is_causal, seed): odd lengths, seq_q != seq_k, 0-3 leading dims."""
    return st.tuples(
        st.lists(st.integers(1, max_lead), min_size=0, max_size=3),
        st.integers(1, max_seq),
        st.integers(1, max_seq),
        st.sampled_from([8, 16, 24, 32]),  # 8 and 24 are padded to 16 and 32 in Triton
        st.booleans(),
        st.integers(0, 2**16),
    )
