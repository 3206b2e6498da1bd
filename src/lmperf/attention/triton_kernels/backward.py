"""The portable FlashAttention-2 backward kernels: D = rowsum(dO O), dK/dV (and dQ shares), dQ.

The dK/dV kernel runs one program per key tile of a key/value head and streams the query
tiles of every query head of its group; with DQ_MODE it also adds each tile's dQ share
(`_add_dq_share`). The dQ kernel is FA2's own split: one program per query tile recomputes S
and dP. Query rows past seq_q load as zeros with LSE = +inf, so their P is exactly 0.
"""

from __future__ import annotations

import triton
import triton.language as tl

from lmperf.attention.triton_kernels.common import (
    LOG2E_CONSTEXPR, key_ranges, load_rows, load_second_block, query_tile, row_mask, visible_scores,
)


@triton.jit
def _bwd_preprocess_kernel(
    O, DO, DELTA, stride_ob, stride_oh, stride_on, stride_dob, stride_doh, stride_don, H, seq_q,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr,
    BLOCK_M: tl.constexpr,
):
    """D = rowsum(dO * O) in fp32, the softmax term the dK/dV and dQ kernels both need."""
    D_A: tl.constexpr = HEAD_DIM - BLOCK_E  # real columns of the first column block
    bh = tl.program_id(1)
    b, h = (bh // H).to(tl.int64), (bh % H).to(tl.int64)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    O += b * stride_ob + h * stride_oh
    DO += b * stride_dob + h * stride_doh
    rows = row_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D)
    o = tl.load(O + offs_m[:, None] * stride_on + offs_d[None, :], mask=rows, other=0.0)
    do = tl.load(DO + offs_m[:, None] * stride_don + offs_d[None, :], mask=rows, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        o_e = load_second_block(O + offs_m[:, None] * stride_on + offs_e[None, :], offs_m, seq_q, True)
        do_e = load_second_block(DO + offs_m[:, None] * stride_don + offs_e[None, :], offs_m, seq_q, True)
        delta += tl.sum(o_e.to(tl.float32) * do_e.to(tl.float32), 1)
    tl.store(DELTA + bh.to(tl.int64) * seq_q + offs_m, delta, mask=offs_m < seq_q)


@triton.jit
def _add_dq_share(
    dq, dq_e, DQ, DQ_E, DQ_DESC, bh, LOCKS, start_m, rows, rows_e, turn,
    BLOCK_M: tl.constexpr, BLOCK_E: tl.constexpr, DQ_MODE: tl.constexpr,
):
    """Add one key tile's share to fp32 dQ rows (dq_e: the head_dim's second column block, if
    any): with atomics (1), in key-tile order (2), or by one TMA bulk reduction of the whole
    tile, done in L2 by the copy engine (3). The host runs 2 and 3 only without a second block."""
    if DQ_MODE == 1:
        tl.atomic_add(DQ, dq, mask=rows, sem="relaxed")
        if BLOCK_E > 0:
            tl.atomic_add(DQ_E, dq_e, mask=rows_e, sem="relaxed")
    elif DQ_MODE == 3:
        DQ_DESC.atomic_add([bh.to(tl.int32), start_m, 0], dq.reshape([1, dq.shape[0], dq.shape[1]]))
    else:
        lock = LOCKS + start_m // BLOCK_M
        while tl.atomic_add(lock, 0, sem="acquire") != turn:  # key tile `turn` - 1 has added
            pass
        # .cg reads L2, where the previous key tile's program (another SM) left its sum.
        tl.store(DQ, tl.load(DQ, mask=rows, other=0.0, cache_modifier=".cg") + dq, mask=rows)
        tl.debug_barrier()  # every thread's store issued before the next key tile is let in
        tl.atomic_xchg(lock, turn + 1, sem="release")


@triton.jit
def _dkdv_tiles(
    dk, dv, dk_e, dv_e, k, v, k_e, v_e, Q, DO, LSE, DELTA, DQ, DQ_DESC, bh, LOCKS, stride_qn, stride_don,
    offs_n, lo, hi, seq_q, qk_scale, sm_scale, turn,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr,
    BLOCK_M: tl.constexpr, MASKED: tl.constexpr, PRECISION: tl.constexpr, DQ_MODE: tl.constexpr,
):
    # Query rows past seq_q load as zeros with LSE = +inf, so their P is exactly 0.
    D_A: tl.constexpr = HEAD_DIM - BLOCK_E  # real columns of the first column block
    offs_d = tl.arange(0, BLOCK_D)
    for start_m in range(lo, hi, BLOCK_M):
        offs_m = start_m + tl.arange(0, BLOCK_M)
        row_ok = offs_m < seq_q
        rows = row_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D)
        q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :], mask=rows, other=0.0)
        lse = tl.load(LSE + offs_m, mask=row_ok, other=float("inf")) * LOG2E_CONSTEXPR
        qk_t = tl.dot(k, tl.trans(q), input_precision=PRECISION)  # (BN, BM)
        rows_e = rows  # stand-in, unused unless the head_dim has a second column block
        if BLOCK_E > 0:
            offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
            # The column test is always true, yet the compiler makes other sm90 code without it
            # (no faster): kept, so that the machine code stays the one measured.
            rows_e = row_ok[:, None] & (offs_e[None, :] < HEAD_DIM)
            q_e = tl.load(Q + offs_m[:, None] * stride_qn + offs_e[None, :], mask=rows_e, other=0.0)
            qk_t = tl.dot(k_e, tl.trans(q_e), qk_t, input_precision=PRECISION)
        # dP^T right after S^T, before the softmax: the tensor cores run the two back to back.
        do = tl.load(DO + offs_m[:, None] * stride_don + offs_d[None, :], mask=rows, other=0.0)
        dp_t = tl.dot(v, tl.trans(do), input_precision=PRECISION)  # (BN, BM)
        do_e = do  # stand-in, as rows_e
        if BLOCK_E > 0:
            do_e = tl.load(DO + offs_m[:, None] * stride_don + offs_e[None, :], mask=rows_e, other=0.0)
            dp_t = tl.dot(v_e, tl.trans(do_e), dp_t, input_precision=PRECISION)
        p_t = tl.math.exp2(qk_t * qk_scale - lse[None, :])
        if MASKED:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION)
        if BLOCK_E > 0:
            dv_e = tl.dot(p_t.to(do.dtype), do_e, dv_e, input_precision=PRECISION)
        delta = tl.load(DELTA + offs_m, mask=row_ok, other=0.0)
        ds_t = (p_t * (dp_t - delta[None, :])).to(q.dtype)
        dk = tl.dot(ds_t, q, dk, input_precision=PRECISION)
        if BLOCK_E > 0:
            dk_e = tl.dot(ds_t, q_e, dk_e, input_precision=PRECISION)
        if DQ_MODE != 0:
            # dQ^T = K^T dS^T, then transposed: both operands read from shared memory as they
            # are (dS^T stored once), where dS K needs dS^T transposed into registers first
            # (a shared-memory round trip and a barrier per query tile in the sm90 code).
            dq = tl.trans(tl.dot(tl.trans(k), ds_t, input_precision=PRECISION)) * sm_scale  # (BM, d)
            dq_ptrs = DQ + offs_m[:, None] * HEAD_DIM + offs_d[None, :]
            dq_e, dq_e_ptrs = dq, dq_ptrs  # stand-ins, as rows_e
            if BLOCK_E > 0:  # as dS K_e: K_e^T would be a left operand of BLOCK_E (< 64) rows
                dq_e = tl.dot(tl.trans(ds_t), k_e, input_precision=PRECISION) * sm_scale
                dq_e_ptrs = DQ + offs_m[:, None] * HEAD_DIM + offs_e[None, :]
            _add_dq_share(
                dq, dq_e, dq_ptrs, dq_e_ptrs, DQ_DESC, bh, LOCKS, start_m, rows, rows_e, turn,
                BLOCK_M, BLOCK_E, DQ_MODE,
            )
    return dk, dv, dk_e, dv_e


@triton.jit
def _bwd_dkdv_kernel(
    Q, K, V, DO, LSE, DELTA, DK, DV, DQ, LOCKS, qk_scale, sm_scale,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    stride_vb, stride_vh, stride_vn, stride_dob, stride_doh, stride_don,
    H, seq_q, seq_k,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
    DQ_MODE: tl.constexpr, GROUP: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """One key tile of one key/value head: dK, dV over every query head of its group (and dQ shares)."""
    D_A: tl.constexpr = HEAD_DIM - BLOCK_E  # real columns of the first column block
    qk_scale, sm_scale = tl.cast(qk_scale, tl.float32), tl.cast(sm_scale, tl.float32)  # fp64 under torch.compile
    key_tile = tl.program_id(0)
    start_n = key_tile * BLOCK_N
    bh_kv = tl.program_id(1)  # b * kv_heads + key/value head
    kv_heads = H // GROUP
    b, h_kv = (bh_kv // kv_heads).to(tl.int64), (bh_kv % kv_heads).to(tl.int64)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    key_ok = row_mask(offs_n, seq_k, offs_d, D_A, BLOCK_D)
    K += b * stride_kb + h_kv * stride_kh
    V += b * stride_vb + h_kv * stride_vh
    k = tl.load(K + offs_n[:, None] * stride_kn + offs_d[None, :], mask=key_ok, other=0.0)
    v = tl.load(V + offs_n[:, None] * stride_vn + offs_d[None, :], mask=key_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    k_e, v_e, dk_e, dv_e = k, v, dk, dv  # stand-ins, unused unless the head_dim has a second column block
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        k_e = load_second_block(K + offs_n[:, None] * stride_kn + offs_e[None, :], offs_n, seq_k, True)
        v_e = load_second_block(V + offs_n[:, None] * stride_vn + offs_e[None, :], offs_n, seq_k, True)
        dk_e = tl.zeros([BLOCK_N, BLOCK_E], dtype=tl.float32)
        dv_e = tl.zeros([BLOCK_N, BLOCK_E], dtype=tl.float32)
    n_query_tiles = tl.cdiv(seq_q, BLOCK_M)
    if CAUSAL:  # rows < start_n see none of these keys; rows >= full_start see all of them
        lo = start_n // BLOCK_M * BLOCK_M
        full_start = tl.minimum(tl.cdiv(start_n + BLOCK_N - 1, BLOCK_M) * BLOCK_M, seq_q)
    else:
        lo = 0
        full_start = 0

    dq_desc = DQ  # only DQ_MODE 3 reads dQ through a TMA descriptor (B*H, seq_q, head_dim)
    if DQ_MODE == 3:
        dq_desc = tl.make_tensor_descriptor(
            DQ, shape=[tl.num_programs(1) * GROUP, seq_q, HEAD_DIM], strides=[seq_q * HEAD_DIM, HEAD_DIM, 1],
            block_shape=[1, BLOCK_M, BLOCK_D],
        )
    # Unrolled (GROUP is constexpr): no run-time loop around the pipelined tile loops.
    for g in tl.static_range(GROUP):
        bh = b * H + h_kv * GROUP + g  # the query head's row in LSE, DELTA, dQ
        Qh = Q + b * stride_qb + (h_kv * GROUP + g) * stride_qh
        DOh = DO + b * stride_dob + (h_kv * GROUP + g) * stride_doh
        LSEh, DELTAh = LSE + bh * seq_q, DELTA + bh * seq_q
        DQh, LOCKSh = DQ + bh * seq_q * HEAD_DIM, LOCKS + bh * n_query_tiles
        if CAUSAL:
            dk, dv, dk_e, dv_e = _dkdv_tiles(
                dk, dv, dk_e, dv_e, k, v, k_e, v_e, Qh, DOh, LSEh, DELTAh, DQh, dq_desc, bh, LOCKSh,
                stride_qn, stride_don, offs_n, lo, full_start, seq_q, qk_scale, sm_scale, key_tile,
                HEAD_DIM, BLOCK_D, BLOCK_E, BLOCK_M, True, PRECISION, DQ_MODE,
            )
        dk, dv, dk_e, dv_e = _dkdv_tiles(
            dk, dv, dk_e, dv_e, k, v, k_e, v_e, Qh, DOh, LSEh, DELTAh, DQh, dq_desc, bh, LOCKSh,
            stride_qn, stride_don, offs_n, full_start, seq_q, seq_q, qk_scale, sm_scale, key_tile,
            HEAD_DIM, BLOCK_D, BLOCK_E, BLOCK_M, False, PRECISION, DQ_MODE,
        )
    DK += bh_kv.to(tl.int64) * seq_k * HEAD_DIM
    DV += bh_kv.to(tl.int64) * seq_k * HEAD_DIM
    tl.store(DK + offs_n[:, None] * HEAD_DIM + offs_d[None, :], (dk * sm_scale).to(DK.dtype.element_ty), mask=key_ok)
    tl.store(DV + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dv.to(DV.dtype.element_ty), mask=key_ok)
    if BLOCK_E > 0:
        key_ok_e = offs_n[:, None] < seq_k
        tl.store(DK + offs_n[:, None] * HEAD_DIM + offs_e[None, :], (dk_e * sm_scale).to(DK.dtype.element_ty), mask=key_ok_e)
        tl.store(DV + offs_n[:, None] * HEAD_DIM + offs_e[None, :], dv_e.to(DV.dtype.element_ty), mask=key_ok_e)


@triton.jit
def _dq_tiles(
    dq, dq_e, q, q_e, do, do_e, lse, delta, K, V, stride_kn, stride_vn, offs_m, lo, hi, seq_k, qk_scale,
    D_A: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
):
    offs_d = tl.arange(0, BLOCK_D)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = load_rows(K + offs_n[:, None] * stride_kn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        v = load_rows(V + offs_n[:, None] * stride_vn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION)  # (BM, BN)
        if BLOCK_E > 0:  # the head_dim's remaining columns, chained into the same accumulators
            offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
            k_e = load_second_block(K + offs_n[:, None] * stride_kn + offs_e[None, :], offs_n, seq_k, MASKED)
            v_e = load_second_block(V + offs_n[:, None] * stride_vn + offs_e[None, :], offs_n, seq_k, MASKED)
            qk = tl.dot(q_e, tl.trans(k_e), qk, input_precision=PRECISION)
        p = tl.math.exp2(qk * qk_scale - lse[:, None])
        if MASKED:
            p = tl.where(visible_scores(offs_m, offs_n, seq_k, CAUSAL), p, 0.0)
        # dP after the softmax, not beside S as in _dkdv_tiles: with both live, the 8-warp tiles
        # of 128 query rows need more than 128 registers, so one program fits on an SM, not two.
        dp = tl.dot(do, tl.trans(v), input_precision=PRECISION)
        if BLOCK_E > 0:
            dp = tl.dot(do_e, tl.trans(v_e), dp, input_precision=PRECISION)
        ds = (p * (dp - delta[:, None])).to(k.dtype)
        dq = tl.dot(ds, k, dq, input_precision=PRECISION)
        if BLOCK_E > 0:
            dq_e = tl.dot(ds, k_e, dq_e, input_precision=PRECISION)
    return dq, dq_e


@triton.jit
def _bwd_dq_kernel(
    Q, K, V, DO, LSE, DELTA, DQ, qk_scale, sm_scale,
    stride_qb, stride_qh, stride_qn, stride_kb, stride_kh, stride_kn,
    stride_vb, stride_vh, stride_vn, stride_dob, stride_doh, stride_don,
    H, group, seq_q, seq_k,
    HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr,
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    qk_scale, sm_scale = tl.cast(qk_scale, tl.float32), tl.cast(sm_scale, tl.float32)  # fp64 under torch.compile
    D_A: tl.constexpr = HEAD_DIM - BLOCK_E  # real columns of the first column block
    start_m, bh, b, h = query_tile(H, BLOCK_M, CAUSAL)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < seq_q
    rows = row_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D)
    Q += b * stride_qb + h * stride_qh
    DO += b * stride_dob + h * stride_doh
    q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :], mask=rows, other=0.0)
    do = tl.load(DO + offs_m[:, None] * stride_don + offs_d[None, :], mask=rows, other=0.0)
    lse = tl.load(LSE + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=float("inf")) * LOG2E_CONSTEXPR
    delta = tl.load(DELTA + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=0.0)
    K += b * stride_kb + h // group * stride_kh
    V += b * stride_vb + h // group * stride_vh
    DQ += bh.to(tl.int64) * seq_q * HEAD_DIM

    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    q_e, do_e, dq_e = q, do, dq  # stand-ins, unused unless the head_dim has a second column block
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        q_e = load_second_block(Q + offs_m[:, None] * stride_qn + offs_e[None, :], offs_m, seq_q, True)
        do_e = load_second_block(DO + offs_m[:, None] * stride_don + offs_e[None, :], offs_m, seq_q, True)
        dq_e = tl.zeros([BLOCK_M, BLOCK_E], dtype=tl.float32)
    full_end, hi = key_ranges(start_m, seq_k, BLOCK_M, BLOCK_N, CAUSAL)
    dq, dq_e = _dq_tiles(
        dq, dq_e, q, q_e, do, do_e, lse, delta, K, V, stride_kn, stride_vn, offs_m, 0, full_end, seq_k, qk_scale,
        D_A, BLOCK_D, BLOCK_E, BLOCK_N, False, CAUSAL, PRECISION,
    )
    dq, dq_e = _dq_tiles(
        dq, dq_e, q, q_e, do, do_e, lse, delta, K, V, stride_kn, stride_vn, offs_m, full_end, hi, seq_k, qk_scale,
        D_A, BLOCK_D, BLOCK_E, BLOCK_N, True, CAUSAL, PRECISION,
    )
    tl.store(DQ + offs_m[:, None] * HEAD_DIM + offs_d[None, :], (dq * sm_scale).to(DQ.dtype.element_ty), mask=rows)
    if BLOCK_E > 0:
        tl.store(
            DQ + offs_m[:, None] * HEAD_DIM + offs_e[None, :], (dq_e * sm_scale).to(DQ.dtype.element_ty),
            mask=offs_m[:, None] < seq_q,
        )
