"""The float64 reference every attention test trusts (lmperf's naive attention) checked against
PyTorch's own ops: scaled_dot_product_attention for the output and gradients, torch.logsumexp of
scores built here for the log-sum-exp. Odd lengths, causal and not, seq_q != seq_k."""

import math

import pytest
import torch
import torch.nn.functional as F

from attention_reference import top_left_and_bottom_right
from lmperf.attention.naive import naive_attention_with_lse


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("seq_q, seq_k, head_dim", [(1, 1, 8), (7, 7, 16), (37, 37, 24), (5, 19, 32), (19, 5, 16)])
def test_reference_matches_pytorch_in_float64(is_causal, seq_q, seq_k, head_dim):
    # rectangular causal cases too: PyTorch's is_causal aligns the mask top-left, as lmperf does
    generator = torch.Generator().manual_seed(seq_q * 100 + seq_k)
    q, k, v = (
        torch.randn(2, 3, n, head_dim, generator=generator, dtype=torch.float64, requires_grad=True)
        for n in (seq_q, seq_k, seq_k)
    )
    out, lse = naive_attention_with_lse(q, k, v, is_causal)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    assert out.dtype == lse.dtype == torch.float64
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=1e-12)

    scores = q @ k.transpose(-2, -1) / math.sqrt(head_dim)
    if is_causal:
        scores = scores.masked_fill(torch.ones(seq_q, seq_k, dtype=torch.bool).triu(1), float("-inf"))
    torch.testing.assert_close(lse, torch.logsumexp(scores, dim=-1), rtol=1e-12, atol=1e-12)

    grad = torch.randn(out.shape, generator=generator, dtype=torch.float64)
    ours = torch.autograd.grad(out, (q, k, v), grad)
    theirs = torch.autograd.grad(expected, (q, k, v), grad)
    for mine, reference in zip(ours, theirs):
        torch.testing.assert_close(mine, reference, rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize(
    "impl, dtype, tolerance",
    [("naive", torch.float64, 1e-10), ("sdpa", torch.float64, 1e-10), ("torch", torch.float32, 1e-5)],
)
@pytest.mark.parametrize("seq_q, seq_k", [(5, 19), (19, 5)])
def test_causal_masks_are_top_left_aligned_not_bottom_right(impl, dtype, tolerance, seq_q, seq_k):
    """`attention(..., is_causal=True)`: query i sees keys 0..i (top-left), which differs from
    FlashAttention's bottom-right alignment (query i sees keys up to i + seq_k - seq_q) wherever
    the lengths differ. Both references are built here from explicit masks, in float64."""
    from lmperf.attention import attention

    generator = torch.Generator().manual_seed(seq_q * 100 + seq_k)
    q, k, v = (torch.randn(2, 3, n, 16, generator=generator, dtype=dtype) for n in (seq_q, seq_k, seq_k))
    top_left, bottom_right, live = top_left_and_bottom_right(q, k, v)
    ours = attention(q, k, v, is_causal=True, impl=impl).double()
    torch.testing.assert_close(ours, top_left, rtol=tolerance, atol=tolerance)
    assert (ours[..., live, :] - bottom_right).abs().max() > 1e-2
