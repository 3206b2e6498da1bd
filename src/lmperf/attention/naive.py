"""Attention written out: QK^T / sqrt(d), masked softmax, weighted sum of V.

This is the reference every other implementation is checked against, and the one whose three
steps show up as separate regions (and kernels) in a profile.
"""

from __future__ import annotations

import math

import torch

from lmperf import regions


def causal_mask(seq_q: int, seq_k: int, device: torch.device) -> torch.Tensor:
    """True where query i may see key j, i.e. j <= i (top-left aligned when lengths differ)."""
    rows = torch.arange(seq_q, device=device)[:, None]
    cols = torch.arange(seq_k, device=device)[None, :]
    return cols <= rows


def _masked_scores(q: torch.Tensor, k: torch.Tensor, is_causal: bool) -> torch.Tensor:
    scale = 1.0 / math.sqrt(q.shape[-1])
    with regions.region(regions.ATTN_SCORES):
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale  # (..., Tq, Tk)
        if is_causal:
            mask = causal_mask(q.shape[-2], k.shape[-2], q.device)
            scores = scores.masked_fill(~mask, float("-inf"))
    return scores


def naive_attention_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False
) -> tuple[torch.Tensor, torch.Tensor]:
    """Output (..., seq_q, d) and log-sum-exp of the scaled, masked scores (..., seq_q)."""
    scores = _masked_scores(q, k, is_causal)
    with regions.region(regions.ATTN_SOFTMAX):
        # At least fp32 (a bf16 LSE would lose the kernels' precision), float64 kept for references.
        lse = torch.logsumexp(scores.to(torch.promote_types(scores.dtype, torch.float32)), dim=-1)
        probs = torch.softmax(scores, dim=-1)
    with regions.region(regions.ATTN_WEIGHTED_SUM):
        return torch.matmul(probs, v), lse  # (..., Tq, d), (..., Tq)


def naive_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool = False) -> torch.Tensor:
    scores = _masked_scores(q, k, is_causal)
    with regions.region(regions.ATTN_SOFTMAX):
        probs = torch.softmax(scores, dim=-1)
    with regions.region(regions.ATTN_WEIGHTED_SUM):
        return torch.matmul(probs, v)  # (..., Tq, d)
