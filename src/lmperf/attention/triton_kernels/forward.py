"""The portable FlashAttention-2 forward kernel: one program per (query tile, batch x head).

It streams the key tiles with the online softmax in base 2 (log2(e) folded into the scale) and
stores O and the log-sum-exp (natural log). Causal, fully masked key tiles are never visited,
and the loop runs in two phases: the tiles that need no mask, then the few diagonal or ragged
ones that do. A head_dim of two power-of-two column blocks (80 = 64 + 16) runs every matmul
over it as two chained ones.
"""

from __future__ import annotations

import triton
import triton.language as tl

from lmperf.attention.triton_kernels.common import (
    LN2_CONSTEXPR, key_ranges, load_rows, load_second_block, query_tile, row_mask, visible_scores,
)


@triton.jit
def _fwd_tiles(
    acc, acc_e, m_i, l_i, q, q_e, K, V, stride_kn, stride_vn, offs_m, lo, hi, seq_k, qk_scale,
    D_A: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    offs_d = tl.arange(0, BLOCK_D)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = load_rows(K + offs_n[:, None] * stride_kn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION)  # (BM, BN), unscaled
        if BLOCK_E > 0:  # the head_dim's remaining columns, chained into the same accumulator
            offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
            k_e = load_second_block(K + offs_n[:, None] * stride_kn + offs_e[None, :], offs_n, seq_k, MASKED)
            qk = tl.dot(q_e, tl.trans(k_e), qk, input_precision=PRECISION)
        if MASKED:
            qk = tl.where(visible_scores(offs_m, offs_n, seq_k, CAUSAL), qk, float("-inf"))
        # Scale folded into one FMA per score (log2 units), not a separate multiply pass.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = load_rows(V + offs_n[:, None] * stride_vn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        if BLOCK_E > 0:
            v_e = load_second_block(V + offs_n[:, None] * stride_vn + offs_e[None, :], offs_n, seq_k, MASKED)
            acc_e = tl.dot(p.to(v.dtype), v_e, acc_e * alpha[:, None], input_precision=PRECISION)
        m_i = m_new
    return acc, acc_e, m_i, l_i


@triton.jit
def _fwd_kernel(
    Q, K, V, O, LSE, qk_scale,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    stride_vb, stride_vh, stride_vn, stride_ob, stride_oh, stride_on,
    H, group, seq_q, seq_k,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    qk_scale = tl.cast(qk_scale, tl.float32)  # torch.compile passes Python floats as fp64
    D_A: tl.constexpr = HEAD_DIM - BLOCK_E  # real columns of the first column block
    start_m, bh, b, h = query_tile(H, BLOCK_M, CAUSAL)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    Q += b * stride_qb + h * stride_qh
    q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :], mask=row_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D), other=0.0)
    K += b * stride_kb + h // group * stride_kh
    V += b * stride_vb + h // group * stride_vh
    O += b * stride_ob + h * stride_oh

    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    q_e, acc_e = q, acc  # stand-ins, unused unless the head_dim has a second column block
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        q_e = load_second_block(Q + offs_m[:, None] * stride_qn + offs_e[None, :], offs_m, seq_q, True)
        acc_e = tl.zeros([BLOCK_M, BLOCK_E], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    full_end, hi = key_ranges(start_m, seq_k, BLOCK_M, BLOCK_N, CAUSAL)
    acc, acc_e, m_i, l_i = _fwd_tiles(
        acc, acc_e, m_i, l_i, q, q_e, K, V, stride_kn, stride_vn, offs_m, 0, full_end, seq_k, qk_scale,
        D_A, BLOCK_D, BLOCK_E, BLOCK_N, False, CAUSAL, PRECISION,
    )
    acc, acc_e, m_i, l_i = _fwd_tiles(
        acc, acc_e, m_i, l_i, q, q_e, K, V, stride_kn, stride_vn, offs_m, full_end, hi, seq_k, qk_scale,
        D_A, BLOCK_D, BLOCK_E, BLOCK_N, True, CAUSAL, PRECISION,
    )
    tl.store(
        O + offs_m[:, None] * stride_on + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
        mask=row_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D),
    )
    if BLOCK_E > 0:
        tl.store(
            O + offs_m[:, None] * stride_on + offs_e[None, :], (acc_e / l_i[:, None]).to(O.dtype.element_ty),
            mask=offs_m[:, None] < seq_q,
        )
    tl.store(LSE + bh.to(tl.int64) * seq_q + offs_m, (m_i + tl.math.log2(l_i)) * LN2_CONSTEXPR, mask=offs_m < seq_q)
