"""The float64 reference every attention test trusts (lmperf's naive attention) checked against
PyTorch's own ops: scaled_dot_product_attention for the output and gradients, torch.logsumexp of
scores built here for the log-sum-exp. Odd lengths, causal and not, seq_q != seq_k."""

import math

import pytest
import torch
import torch.nn.functional as F

from lmperf.attention.naive import naive_attention_with_lse


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("seq_q, seq_k, head_dim", [(1, 1, 8), (7, 7, 16), (37, 37, 24), (5, 19, 32)])
def test_reference_matches_pytorch_in_float64(is_causal, seq_q, seq_k, head_dim):
    if is_causal and seq_q != seq_k:
        pytest.skip("PyTorch aligns a rectangular causal mask top-left; lmperf only uses square causal attention")
    generator = torch.Generator().manual_seed(seq_q * 100 + seq_k)
    q, k, v = (torch.randn(2, 3, n, head_dim, generator=generator, dtype=torch.float64, requires_grad=True)
               for n in (seq_q, seq_k, seq_k))
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
