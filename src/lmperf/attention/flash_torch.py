"""FlashAttention-2 written in PyTorch: the algorithm in readable tensor code.

Sequences are cut into tiles of TILE rows (zero-padded at the end). As in FA2's kernels, the
query tiles are independent (here: one batch dimension) and the key tiles are streamed one at a
time with the online softmax, so no (seq_q, seq_k) matrix is ever built. The backward streams
the query tiles, recomputing the probabilities from the saved log-sum-exp, with the key tiles as
a batch dimension. Causal (query i sees keys j <= i): with equal query and key tiles, query tile
t sees key tiles 0..t, so the loops slice the fully masked tiles away and mask only the rest.
Scores and the softmax are in fp32 whatever the input dtype (bf16 scores lose ~1% in exp).
Compile it with `torch.compile(FlashAttention2Torch.apply)`; the loops unroll, so keep the
number of tiles moderate.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from lmperf.attention.contract import check_inputs, group_size

TILE = 128


def _split(x: torch.Tensor, tile: int, seq_dim: int, fill: float = 0.0) -> torch.Tensor:
    """Pad dimension `seq_dim` (negative) to whole tiles and split it into (n_tiles, tile)."""
    pad = (-x.shape[seq_dim]) % tile
    if pad:
        widths = [0, 0] * (-seq_dim - 1) + [0, pad]
        x = F.pad(x, widths, value=fill)
    return x.unflatten(seq_dim, (-1, tile))


def _visible(rows: torch.Tensor, cols: torch.Tensor, seq_k: int, is_causal: bool) -> torch.Tensor:
    """Which (row, col) score positions count: real keys, and j <= i when causal."""
    keep = cols < seq_k
    return keep & (cols <= rows) if is_causal else keep


def _repeat_kv(x: torch.Tensor, group: int) -> torch.Tensor:
    """GQA: each key/value head repeated for the `group` query heads that read it."""
    return x if group == 1 else x.repeat_interleave(group, dim=-3)


def _sum_groups(grad: torch.Tensor, group: int) -> torch.Tensor:
    """Gradient of _repeat_kv: the query heads' shares summed per key/value head."""
    return grad if group == 1 else grad.unflatten(-3, (-1, group)).sum(-3)


def flash_attention_torch_with_lse(q, k, v, is_causal: bool = False, tile: int = TILE):
    """Output (..., seq_q, d) in q's dtype and log-sum-exp (..., seq_q) in fp32."""
    check_inputs(q, k, v)
    group = group_size(q, k)
    k, v = _repeat_kv(k, group), _repeat_kv(v, group)
    seq_q, seq_k = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    qt = _split(q.float() * scale, tile, -2)  # (..., Tq, tile, d)
    kt, vt = _split(k.float(), tile, -2), _split(v, tile, -2)  # (..., Tk, tile, d)
    n_q, n_k = qt.shape[-3], kt.shape[-3]
    rows = torch.arange(n_q * tile, device=q.device).view(n_q, tile, 1)
    acc = torch.zeros(qt.shape, dtype=torch.float32, device=q.device)  # (..., Tq, tile, d)
    m = torch.full(qt.shape[:-1], float("-inf"), device=q.device)  # running row max
    l = torch.zeros(qt.shape[:-1], device=q.device)  # running row sum of exp
    for j in range(n_k):
        first = j if is_causal else 0  # query tiles before j see nothing of key tile j
        if first >= n_q:
            break
        s = qt[..., first:, :, :] @ kt[..., j, None, :, :].transpose(-1, -2)  # (..., Tq', tile, tile)
        if is_causal or (j + 1) * tile > seq_k:  # only diagonal and ragged tiles need a mask
            cols = torch.arange(j * tile, (j + 1) * tile, device=q.device)
            s = s.masked_fill(~_visible(rows[first:], cols, seq_k, is_causal), float("-inf"))
        m_new = torch.maximum(m[..., first:, :], s.amax(-1))
        p = torch.exp(s - m_new[..., None])
        alpha = torch.exp(m[..., first:, :] - m_new)
        l[..., first:, :] = l[..., first:, :] * alpha + p.sum(-1)
        pv = (p.to(v.dtype) @ vt[..., j, None, :, :]).float()
        acc[..., first:, :, :] = acc[..., first:, :, :] * alpha[..., None] + pv
        m[..., first:, :] = m_new
    out = (acc / l[..., None]).flatten(-3, -2)[..., :seq_q, :]
    lse = (m + torch.log(l)).flatten(-2)[..., :seq_q]
    return out.to(q.dtype), lse


def flash_attention_torch_backward(q, k, v, o, lse, do, is_causal: bool = False, tile: int = TILE):
    """dQ, dK, dV in the inputs' dtypes, recomputing P = exp(S - LSE) tile by tile."""
    group = group_size(q, k)
    k, v = _repeat_kv(k, group), _repeat_kv(v, group)
    seq_k = k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    delta = (do.float() * o.float()).sum(-1)  # (..., seq_q): D = rowsum(dO * O)
    qt, dot = _split(q.float(), tile, -2), _split(do.float(), tile, -2)  # (..., Tq, tile, d)
    kt, vt = _split(k.float(), tile, -2), _split(v.float(), tile, -2)  # (..., Tk, tile, d)
    # Padded query rows get LSE = +inf, so their probabilities are exactly 0.
    lse_t = _split(lse, tile, -1, fill=float("inf"))  # (..., Tq, tile)
    delta_t = _split(delta, tile, -1)
    n_q, n_k = qt.shape[-3], kt.shape[-3]
    cols = torch.arange(n_k * tile, device=q.device).view(n_k, 1, tile)
    dq, dk, dv = torch.zeros_like(qt), torch.zeros_like(kt), torch.zeros_like(vt)
    for i in range(n_q):
        last = min(i + 1, n_k) if is_causal else n_k  # key tiles after i are fully masked
        q_i, do_i = qt[..., i, None, :, :], dot[..., i, None, :, :]  # (..., 1, tile, d)
        s = (q_i @ kt[..., :last, :, :].transpose(-1, -2)) * scale  # (..., last, tile, tile)
        p = torch.exp(s - lse_t[..., i, None, :, None])
        if is_causal or last * tile > seq_k:
            rows = torch.arange(i * tile, (i + 1) * tile, device=q.device)[:, None]
            p = p.masked_fill(~_visible(rows, cols[:last], seq_k, is_causal), 0.0)
        dv[..., :last, :, :] += p.transpose(-1, -2) @ do_i
        dp = do_i @ vt[..., :last, :, :].transpose(-1, -2)
        ds = p * (dp - delta_t[..., i, None, :, None])  # gradient of the scaled scores
        dq[..., i, :, :] = (ds @ kt[..., :last, :, :]).sum(-3) * scale
        dk[..., :last, :, :] += (ds.transpose(-1, -2) @ q_i) * scale
    seq_q = q.shape[-2]
    return (
        dq.flatten(-3, -2)[..., :seq_q, :].to(q.dtype),
        _sum_groups(dk.flatten(-3, -2)[..., :seq_k, :], group).to(k.dtype),
        _sum_groups(dv.flatten(-3, -2)[..., :seq_k, :], group).to(v.dtype),
    )


class FlashAttention2Torch(torch.autograd.Function):
    """`FlashAttention2Torch.apply(q, k, v, is_causal[, tile])` -> softmax(q k^T / sqrt(d)) v."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal=False, tile=TILE):
        o, lse = flash_attention_torch_with_lse(q, k, v, is_causal, tile)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.is_causal, ctx.tile = is_causal, tile
        return o

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, o, lse = ctx.saved_tensors
        grads = flash_attention_torch_backward(q, k, v, o, lse, grad_out, ctx.is_causal, ctx.tile)
        return *grads, None, None
