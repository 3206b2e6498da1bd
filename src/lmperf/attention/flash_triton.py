"""FlashAttention-2 in Triton: forward and backward kernels behind a torch.autograd.Function.

Forward: one program per (query tile, batch*head) streams the key tiles with the online softmax
in base 2 (log2(e) folded into the scale) and stores O and the log-sum-exp (natural log). On an
H100 (sm90) at head_dim 128, and 64 and 80 over long key ranges, in bf16/fp16 the forward is
flash_gluon's instead (Gluon, warp-specialised), which leaves O and the LSE laid out alike for
the backward below.
Backward: D = rowsum(dO * O) first, then one program per key tile streams the query tiles for
dK and dV (summed over the query heads of its group under GQA). dQ comes one of three ways:
  - "atomic": the dK/dV program adds its dS K share to an fp32 dQ (5 matmuls, the FLOP
    convention's count; the order of the adds varies, so the bits may vary from run to run), by
    TMA bulk reductions on Hopper where a tile spans the head_dim, else by per-thread atomics;
  - "ordered": the same share added without atomics, in key-tile order, each dQ tile guarded by
    a counter that lets key tile n in only after tile n-1 (5 matmuls, bitwise repeatable);
  - "split": FA2's own split, a separate dQ kernel per query tile that recomputes S and dP
    (7 matmuls, no shared writes, bitwise repeatable).
On an H100 in bf16/fp16 where flash_gluon_backward.faster_here says (head_dim 64, 80 and 128 from
1024 keys), "atomic" is flash_gluon_backward's kernel instead (Gluon, warp-specialised, dQ
by TMA bulk reductions).
`FlashAttention2Triton.apply(q, k, v, is_causal, backward)` names one; "atomic" is refused while
torch.are_deterministic_algorithms_enabled() is True. Unnamed (None): "split" while determinism is
required, else the faster on the H100 for the shape: "atomic" for causal attention over >= 4096
keys and wherever the Gluon backward runs, "split" otherwise (backward_mode). "ordered" ran at
0.39-0.63x of "atomic" (docs/attention.md).
GQA/MQA: k and v may have fewer heads than q (see lmperf.attention.contract).
Causal (query i sees keys j <= i): fully masked tiles are never visited, and each loop runs in two
phases, the tiles that need no mask and then the few diagonal or ragged-edge tiles that do.
Head dims: tiles span powers of two; 80 (= 64 + 16), 96 and 48 run as two column blocks whose
matmuls chain into one accumulator (SPLIT_HEAD_DIM; the "ordered" dK/dV kernel excepted), other
sizes are padded to the next power.
Tile sizes are autotuned per (lengths, head_dim and its column blocks, causal, dtype; the dK/dV
kernel also per dQ mode and GQA group) on the GPU; under TRITON_INTERPRET=1 (CPU tests) small
fixed tiles are used instead.
"""

from __future__ import annotations

import math
import os

import torch
import triton
import triton.language as tl

from lmperf.attention.contract import as_4d, check_inputs
from lmperf.attention.launch import CachedLaunch
from lmperf.errors import UsageError

try:  # Gluon ships with Triton 3.5 and later; an older Triton keeps this module's kernels
    from lmperf.attention import flash_gluon, flash_gluon_backward
except ImportError:
    flash_gluon = flash_gluon_backward = None

LOG2E = 1.4426950408889634
# Kernels may read only constexpr globals.
_LOG2E = tl.constexpr(LOG2E)
_LN2 = tl.constexpr(0.6931471805599453)
# Read once: triton.jit decides at import time whether kernels are interpreted.
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
MAX_GRID_Y = 65535  # CUDA's limit on the grid's second dimension (batch * heads here)


# ----------------------------------------------------------------------------- forward kernels


@triton.jit
def _key_ranges(start_m, seq_k, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """Key range [0, hi) a query tile sees, and where its tiles start to need a mask."""
    if CAUSAL:
        hi = tl.minimum(seq_k, start_m + BLOCK_M)
        full_end = tl.minimum((start_m + 1) // BLOCK_N, seq_k // BLOCK_N) * BLOCK_N
    else:
        hi = seq_k
        full_end = seq_k // BLOCK_N * BLOCK_N
    return full_end, hi


@triton.jit
def _mask(offs, limit, offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr):
    """Mask of a (rows, BLOCK_D) tile: rows below `limit` and, if head_dim is padded, real columns."""
    mask = offs[:, None] < limit
    if HEAD_DIM < BLOCK_D:  # a constexpr test: unpadded tiles keep their 16-byte loads
        mask = mask & (offs_d[None, :] < HEAD_DIM)
    return mask


@triton.jit
def _load_rows(ptrs, offs, limit, offs_d, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, MASKED: tl.constexpr):
    """Rows offs of a tile; past `limit` (checked only when MASKED) or head_dim they read as 0."""
    if MASKED:
        return tl.load(ptrs, mask=_mask(offs, limit, offs_d, HEAD_DIM, BLOCK_D), other=0.0)
    if HEAD_DIM < BLOCK_D:
        return tl.load(ptrs, mask=offs_d[None, :] < HEAD_DIM, other=0.0)
    return tl.load(ptrs)


@triton.jit
def _load_second_block(ptrs, offs, limit, MASKED: tl.constexpr):
    """Rows offs of the head_dim's second column block, which is never padded: only rows past
    `limit` (checked when MASKED) read as 0."""
    if MASKED:
        return tl.load(ptrs, mask=offs[:, None] < limit, other=0.0)
    return tl.load(ptrs)


@triton.jit
def _visible(offs_m, offs_n, seq_k, CAUSAL: tl.constexpr):
    """(BM, BN) mask of the scores that count: real keys, and key <= query when causal."""
    keep = offs_n[None, :] < seq_k
    if CAUSAL:
        keep = keep & (offs_n[None, :] <= offs_m[:, None])
    return keep


@triton.jit
def _query_tile(H, BLOCK_M: tl.constexpr, CAUSAL: tl.constexpr):
    """This program's query tile (first row) and (batch * head, batch, head) from its grid place."""
    tile = tl.program_id(0)
    if CAUSAL:  # the last query tiles see the most keys: start them first
        tile = tl.num_programs(0) - 1 - tile
    bh = tl.program_id(1)
    return tile * BLOCK_M, bh, (bh // H).to(tl.int64), (bh % H).to(tl.int64)


@triton.jit
def _fwd_tiles(
    acc, acc_e, m_i, l_i, q, q_e, K, V, stride_kn, stride_vn, offs_m, lo, hi, seq_k, qk_scale,
    D_A: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_E: tl.constexpr, BLOCK_N: tl.constexpr,
    MASKED: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
):
    offs_d = tl.arange(0, BLOCK_D)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = _load_rows(K + offs_n[:, None] * stride_kn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION)  # (BM, BN), unscaled
        if BLOCK_E > 0:  # the head_dim's remaining columns, chained into the same accumulator
            offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
            k_e = _load_second_block(K + offs_n[:, None] * stride_kn + offs_e[None, :], offs_n, seq_k, MASKED)
            qk = tl.dot(q_e, tl.trans(k_e), qk, input_precision=PRECISION)
        if MASKED:
            qk = tl.where(_visible(offs_m, offs_n, seq_k, CAUSAL), qk, float("-inf"))
        # Scale folded into one FMA per score (log2 units), not a separate multiply pass.
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = _load_rows(V + offs_n[:, None] * stride_vn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None], input_precision=PRECISION)
        if BLOCK_E > 0:
            v_e = _load_second_block(V + offs_n[:, None] * stride_vn + offs_e[None, :], offs_n, seq_k, MASKED)
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
    CAUSAL: tl.constexpr, PRECISION: tl.constexpr, WARP_SPECIALIZE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    qk_scale = tl.cast(qk_scale, tl.float32)  # torch.compile passes Python floats as fp64
    D_A: tl.constexpr = HEAD_DIM - BLOCK_E  # real columns of the first column block
    start_m, bh, b, h = _query_tile(H, BLOCK_M, CAUSAL)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    Q += b * stride_qb + h * stride_qh
    q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :], mask=_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D), other=0.0)
    K += b * stride_kb + h // group * stride_kh
    V += b * stride_vb + h // group * stride_vh
    O += b * stride_ob + h * stride_oh

    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    q_e, acc_e = q, acc  # stand-ins, unused unless the head_dim has a second column block
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        q_e = _load_second_block(Q + offs_m[:, None] * stride_qn + offs_e[None, :], offs_m, seq_q, True)
        acc_e = tl.zeros([BLOCK_M, BLOCK_E], dtype=tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    full_end, hi = _key_ranges(start_m, seq_k, BLOCK_M, BLOCK_N, CAUSAL)
    acc, acc_e, m_i, l_i = _fwd_tiles(
        acc, acc_e, m_i, l_i, q, q_e, K, V, stride_kn, stride_vn, offs_m, 0, full_end, seq_k, qk_scale,
        D_A, BLOCK_D, BLOCK_E, BLOCK_N, False, CAUSAL, PRECISION, WARP_SPECIALIZE,
    )
    acc, acc_e, m_i, l_i = _fwd_tiles(
        acc, acc_e, m_i, l_i, q, q_e, K, V, stride_kn, stride_vn, offs_m, full_end, hi, seq_k, qk_scale,
        D_A, BLOCK_D, BLOCK_E, BLOCK_N, True, CAUSAL, PRECISION, False,
    )
    tl.store(
        O + offs_m[:, None] * stride_on + offs_d[None, :], (acc / l_i[:, None]).to(O.dtype.element_ty),
        mask=_mask(offs_m, seq_q, offs_d, D_A, BLOCK_D),
    )
    if BLOCK_E > 0:
        tl.store(
            O + offs_m[:, None] * stride_on + offs_e[None, :], (acc_e / l_i[:, None]).to(O.dtype.element_ty),
            mask=offs_m[:, None] < seq_q,
        )
    tl.store(LSE + bh.to(tl.int64) * seq_q + offs_m, (m_i + tl.math.log2(l_i)) * _LN2, mask=offs_m < seq_q)


# ---------------------------------------------------------------------------- backward kernels


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
    rows = _mask(offs_m, seq_q, offs_d, D_A, BLOCK_D)
    o = tl.load(O + offs_m[:, None] * stride_on + offs_d[None, :], mask=rows, other=0.0)
    do = tl.load(DO + offs_m[:, None] * stride_don + offs_d[None, :], mask=rows, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        o_e = _load_second_block(O + offs_m[:, None] * stride_on + offs_e[None, :], offs_m, seq_q, True)
        do_e = _load_second_block(DO + offs_m[:, None] * stride_don + offs_e[None, :], offs_m, seq_q, True)
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
        rows = _mask(offs_m, seq_q, offs_d, D_A, BLOCK_D)
        q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :], mask=rows, other=0.0)
        lse = tl.load(LSE + offs_m, mask=row_ok, other=float("inf")) * _LOG2E
        qk_t = tl.dot(k, tl.trans(q), input_precision=PRECISION)  # (BN, BM)
        rows_e = rows  # stand-in, unused unless the head_dim has a second column block
        if BLOCK_E > 0:
            offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
            # The column test is always true, yet the sm90 code is not the same without it
            # (sass_fingerprint.py: +-2% instructions at head_dim 48, 80, 96); timed without it
            # at d=80 on the H100, the backward within 3% either way (docs/attention.md, 16).
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
    key_ok = _mask(offs_n, seq_k, offs_d, D_A, BLOCK_D)
    K += b * stride_kb + h_kv * stride_kh
    V += b * stride_vb + h_kv * stride_vh
    k = tl.load(K + offs_n[:, None] * stride_kn + offs_d[None, :], mask=key_ok, other=0.0)
    v = tl.load(V + offs_n[:, None] * stride_vn + offs_d[None, :], mask=key_ok, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    k_e, v_e, dk_e, dv_e = k, v, dk, dv  # stand-ins, unused unless the head_dim has a second column block
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        k_e = _load_second_block(K + offs_n[:, None] * stride_kn + offs_e[None, :], offs_n, seq_k, True)
        v_e = _load_second_block(V + offs_n[:, None] * stride_vn + offs_e[None, :], offs_n, seq_k, True)
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
        k = _load_rows(K + offs_n[:, None] * stride_kn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        v = _load_rows(V + offs_n[:, None] * stride_vn + offs_d[None, :], offs_n, seq_k, offs_d, D_A, BLOCK_D, MASKED)
        qk = tl.dot(q, tl.trans(k), input_precision=PRECISION)  # (BM, BN)
        if BLOCK_E > 0:  # the head_dim's remaining columns, chained into the same accumulators
            offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
            k_e = _load_second_block(K + offs_n[:, None] * stride_kn + offs_e[None, :], offs_n, seq_k, MASKED)
            v_e = _load_second_block(V + offs_n[:, None] * stride_vn + offs_e[None, :], offs_n, seq_k, MASKED)
            qk = tl.dot(q_e, tl.trans(k_e), qk, input_precision=PRECISION)
        p = tl.math.exp2(qk * qk_scale - lse[:, None])
        if MASKED:
            p = tl.where(_visible(offs_m, offs_n, seq_k, CAUSAL), p, 0.0)
        # dP after the softmax, not beside S as in _dkdv_tiles: with both live, the 8-warp tiles
        # of 128 query rows need 153 registers instead of 127, so one program fits on an SM, not
        # two (sm90_report.py), and the autotuner's best dQ kernel at d=64 causal took 0.840 ms
        # instead of 0.778 (4k) and 3.211 instead of 2.995 (16k) on the H100
        # (benchmarks/attention/bwd-order-h100-ffbfa12).
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
    start_m, bh, b, h = _query_tile(H, BLOCK_M, CAUSAL)
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    row_ok = offs_m < seq_q
    rows = _mask(offs_m, seq_q, offs_d, D_A, BLOCK_D)
    Q += b * stride_qb + h * stride_qh
    DO += b * stride_dob + h * stride_doh
    q = tl.load(Q + offs_m[:, None] * stride_qn + offs_d[None, :], mask=rows, other=0.0)
    do = tl.load(DO + offs_m[:, None] * stride_don + offs_d[None, :], mask=rows, other=0.0)
    lse = tl.load(LSE + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=float("inf")) * _LOG2E
    delta = tl.load(DELTA + bh.to(tl.int64) * seq_q + offs_m, mask=row_ok, other=0.0)
    K += b * stride_kb + h // group * stride_kh
    V += b * stride_vb + h // group * stride_vh
    DQ += bh.to(tl.int64) * seq_q * HEAD_DIM

    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    q_e, do_e, dq_e = q, do, dq  # stand-ins, unused unless the head_dim has a second column block
    if BLOCK_E > 0:
        offs_e = BLOCK_D + tl.arange(0, BLOCK_E)
        q_e = _load_second_block(Q + offs_m[:, None] * stride_qn + offs_e[None, :], offs_m, seq_q, True)
        do_e = _load_second_block(DO + offs_m[:, None] * stride_don + offs_e[None, :], offs_m, seq_q, True)
        dq_e = tl.zeros([BLOCK_M, BLOCK_E], dtype=tl.float32)
    full_end, hi = _key_ranges(start_m, seq_k, BLOCK_M, BLOCK_N, CAUSAL)
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


# ------------------------------------------------------------------------------ tile selection


def _configs(tiles: list[tuple]) -> list[triton.Config]:
    """(BLOCK_M, BLOCK_N, num_warps, num_stages[, maxnreg]) -> autotuning configs."""
    return [
        triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s, maxnreg=rest[0] if rest else None)
        for m, n, w, s, *rest in tiles
    ]


# BLOCK_E too: the same head_dim split in two column blocks or padded (SPLIT_HEAD_DIM, "ordered")
# is another kernel, whose tiles the other's tuning must not pick.
TUNE_KEY = ["seq_q", "seq_k", "HEAD_DIM", "BLOCK_E", "CAUSAL", "PRECISION"]
# Per kernel and head_dim class (<= 64, > 64): (BLOCK_M, BLOCK_N, num_warps, num_stages[, maxnreg]).
# The configs each kernel's autotuner picked on an H100 (benchmarks/attention-h100.md, 2026-11-23
# variants run) plus the runners-up; maxnreg=128 caps registers so two 8-warp programs share an
# SM (one's softmax overlaps the other's matmuls). Few on purpose: each costs a compilation per
# (head_dim, causal, dtype) on first use; configs that overflow shared memory are skipped.
TILES = {
    "fwd": {
        False: [(128, 64, 8, 3), (128, 64, 8, 4), (128, 128, 8, 2, 128), (128, 64, 4, 3)],
        True: [(128, 64, 8, 3), (128, 64, 8, 2, 128), (128, 128, 8, 3), (128, 128, 8, 2)],
    },
    "dkdv": {
        False: [(32, 128, 4, 3), (32, 64, 4, 3), (32, 128, 4, 5)],
        True: [(64, 128, 8, 3), (64, 128, 8, 2), (64, 64, 4, 2)],
    },
    "dq": {
        False: [(128, 64, 8, 3), (128, 64, 8, 2, 128), (128, 32, 4, 3)],
        True: [(128, 64, 8, 3), (128, 32, 4, 3), (64, 64, 4, 2)],
    },
    # The dK/dV kernel when it also makes dQ's shares ("atomic", "ordered"): at least 64 query
    # rows, because its fifth product, dS^T K, has BLOCK_M rows and the sm90 compiler makes a
    # wgmma of it only from 64 (a 32-row tile gets the register-operand mma path; the TTGIR of
    # benchmarks/attention/sm90_report.py shows which). Same candidates as dkdv's above 64.
    "dkdv_dq": {
        False: [(64, 128, 8, 3), (64, 64, 4, 3), (64, 128, 8, 2)],
        True: [(64, 128, 8, 3), (64, 128, 8, 2), (64, 64, 4, 2)],
    },
}
# Under the interpreter: small tiles with BLOCK_M != BLOCK_N so misaligned diagonals are tested.
INTERPRETED_TILES = {
    "fwd": {"BLOCK_M": 32, "BLOCK_N": 16},
    "dkdv": {"BLOCK_M": 16, "BLOCK_N": 32},
    "dq": {"BLOCK_M": 16, "BLOCK_N": 32},
    "dkdv_dq": {"BLOCK_M": 16, "BLOCK_N": 32},
}
# Meant to overlap one tile's softmax with the next tile's matmuls by Triton's warp
# specialisation. With Triton 3.6 on sm90 it changes nothing: the 8-warp tiles compile to the
# same SASS, the 4-warp ones fail (benchmarks/attention/warp_specialize_check.py). Off.
FWD_WARP_SPECIALIZE = False
# LMPERF_ATTENTION_AUTOTUNE=0 uses _fixed_tiles everywhere (quick first calls, e.g. in tests).
AUTOTUNE = os.environ.get("LMPERF_ATTENTION_AUTOTUNE", "1") != "0"
_KERNELS = {"fwd": _fwd_kernel, "dkdv": _bwd_dkdv_kernel, "dq": _bwd_dq_kernel, "dkdv_dq": _bwd_dkdv_kernel}


def tuned_kernels(tiles: dict) -> dict:
    """Autotuned kernels keyed (name, head_dim > 64) from a TILES-shaped table."""
    tuned = {}
    for name, by_size in tiles.items():
        for large, size_tiles in by_size.items():
            if _KERNELS[name] is _bwd_dkdv_kernel:
                # Keyed by GQA group too (the kernel is unrolled over it); trial runs add into dQ
                # and advance the counters: zero both after each.
                tuner = triton.autotune(_configs(size_tiles), key=[*TUNE_KEY, "DQ_MODE", "GROUP"], reset_to_zero=["DQ", "LOCKS"])
            else:
                tuner = triton.autotune(_configs(size_tiles), key=TUNE_KEY)
            tuned[name, large] = tuner(_KERNELS[name])
    return tuned


_TUNED = tuned_kernels(TILES)


def _fixed_tiles(name: str, head_dim: int, itemsize: int) -> dict:
    """Tiles that fit shared memory for every head_dim and dtype (fp32 or d=256: small ones)."""
    if itemsize == 4 or head_dim > 128:
        m, n, warps, stages = (64, 32, 4, 2) if name == "fwd" else (32, 32, 4, 2)
    else:
        m, n, warps, stages = (128, 64, 4, 3) if name == "fwd" else (64, 64, 4, 3)
    return {"BLOCK_M": m, "BLOCK_N": n, "num_warps": warps, "num_stages": stages}


def _launch(name: str, grid, q: torch.Tensor, *args, **constexprs) -> None:
    """Launch kernel `name`: autotuned for fp16/bf16 with head_dim <= 128, else fixed tiles."""
    head_dim, itemsize = _block_d(q.shape[-1]), q.element_size()
    if INTERPRETED:
        _KERNELS[name][grid](q, *args, **constexprs, **INTERPRETED_TILES[name])
    elif AUTOTUNE and itemsize == 2 and head_dim <= 128:
        _TUNED[name, head_dim > 64][grid](q, *args, **constexprs)
    else:
        _KERNELS[name][grid](q, *args, **constexprs, **_fixed_tiles(name, head_dim, itemsize))


def _block_d(head_dim: int) -> int:
    """The columns a tile spans: head_dim rounded up to a power of two >= 16 (tile-size class)."""
    return max(16, triton.next_power_of_2(head_dim))


# A head_dim that is the sum of two powers of two (80 = 64 + 16, 96 = 64 + 32, 48 = 32 + 16) is
# tiled as two column blocks, every matmul over it done as two chained ones, instead of padding
# it to the next power of two (80 -> 128 computes 60% more). False: always pad (measured beside).
SPLIT_HEAD_DIM = True


def _column_blocks(head_dim: int, split: bool = True) -> dict:
    """BLOCK_D (the first block's width) and BLOCK_E (the second block's, or 0); the kernels read
    the first block's real columns as HEAD_DIM - BLOCK_E.

    Tiles span powers of two >= 16 columns (tl.dot's smallest inner size is 16); a head_dim that
    cannot be split into two such blocks (or split=False) is padded to one and masked."""
    padded = _block_d(head_dim)
    rest = head_dim - padded // 2
    if split and SPLIT_HEAD_DIM and head_dim != padded and rest >= 16 and rest & (rest - 1) == 0:
        return {"BLOCK_D": padded // 2, "BLOCK_E": rest}
    return {"BLOCK_D": padded, "BLOCK_E": 0}


def _precision(dtype: torch.dtype) -> str:
    # fp32 inputs get true fp32 products; Triton's default would use TF32 (about 3e-4 error).
    return "ieee" if dtype == torch.float32 else "tf32"


def _check_device(q: torch.Tensor) -> None:
    if q.device.type != "cuda" and not INTERPRETED:
        raise UsageError(
            "FlashAttention2Triton needs CUDA tensors (or TRITON_INTERPRET=1 set before import)"
        )


# ------------------------------------------------------------------------------- host wrappers


def _strides(x: torch.Tensor) -> tuple[int, int, int]:
    return x.stride(0), x.stride(1), x.stride(2)


def triton_forward(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, gluon_runs: bool | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """O (B, H, seq_q, d), stored (B, seq_q, H, d), and LSE (B, H, seq_q) in fp32 from 4-d inputs
    with unit-stride d. gluon_runs: `gluon_kernels_run`'s answer, where the caller has it."""
    B, H, seq_q, head_dim = q.shape
    seq_k = k.shape[2]
    if B * H > MAX_GRID_Y:
        raise UsageError(f"batch * heads = {B * H} exceeds {MAX_GRID_Y}")
    if flash_gluon is not None and not INTERPRETED and flash_gluon.supported(q, k, v, is_causal, gluon_runs):
        # On Hopper at head_dim 128, and 64 and 80 over long key ranges, the Gluon forward (warp-
        # specialised, its softmax under the tensor cores' work) beat this file's (flash_gluon).
        return flash_gluon.launch(q, k, v, is_causal)
    # Laid out (B, seq_q, H, d), as SDPA's flash and cuDNN outputs are: the model's next step,
    # y.transpose(1, 2).reshape(B, T, H * d) for the output projection, is then a view, not a copy.
    o = torch.empty((B, seq_q, H, head_dim), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((B, H, seq_q), dtype=torch.float32, device=q.device)
    grid = lambda meta: (triton.cdiv(seq_q, meta["BLOCK_M"]), B * H)  # noqa: E731
    _launch(
        "fwd", grid, q, k, v, o, lse, LOG2E / math.sqrt(head_dim),
        *_strides(q), *_strides(k), *_strides(v), *_strides(o), H, H // k.shape[1], seq_q, seq_k,
        HEAD_DIM=head_dim, **_column_blocks(head_dim), CAUSAL=is_causal, PRECISION=_precision(q.dtype),
        WARP_SPECIALIZE=FWD_WARP_SPECIALIZE,
    )
    return o, lse


BACKWARDS = {"split": 0, "atomic": 1, "ordered": 2}  # the dK/dV kernel's DQ_MODE
# "atomic" adds each dQ share by one TMA bulk reduction (DQ_MODE 3) instead of per-thread
# atomics where it can (_dq_by_tma). Measured interleaved on the H100 (2026-11-25,
# benchmarks/attention/dq-transposed-h100-cd88912): backward TFLOP/s 1.055-1.119x the per-thread
# atomics' at d=64 and 1.005-1.091x at d=128. The per-thread atomics need each share moved into a
# coalesced layout through shared memory, with barriers, every query tile (stall_profile.sh).
ATOMIC_DQ_BY_TMA = True


def _dq_by_tma(q: torch.Tensor, head_dim: int, column_blocks: dict) -> bool:
    """Whether the atomic backward can add dQ's shares by TMA bulk reductions: a Hopper or newer
    GPU (not the interpreter, which has none), one column block (a tile spans the head_dim; a
    reduction per block of 80 = 64 + 16 ran slower than per-thread atomics, docs/attention.md
    item 25), and rows of dQ 16-byte aligned for the tensor descriptor (fp32: head_dim a
    multiple of 4)."""
    return (
        ATOMIC_DQ_BY_TMA and not INTERPRETED and column_blocks["BLOCK_E"] == 0 and head_dim % 4 == 0
        and torch.cuda.get_device_capability(q.device)[0] >= 9
    )


# With no backward named and nondeterminism allowed: "atomic" for causal attention over at least
# this many keys, "split" otherwise. Measured side by side (interleaved) on the H100, fifth session
# of 2026-11-23 (benchmarks/attention-h100.md): split's fwd+bwd time / atomic's 1.03-1.08 at causal
# 4k and 16k for head_dim 80 and 128 and causal 16k for 64 (0.97-0.98 at 64, causal 4k); 0.93-1.03
# on the non-causal points and 0.97 at causal 1k.
ATOMIC_FROM_KEYS = 4096


def backward_mode(requested: str | None = None, is_causal: bool = False, seq_k: int = 0, gluon: bool = False) -> str:
    """The dQ strategy: the one requested (checked against PyTorch's determinism); by default
    "split" while torch.use_deterministic_algorithms(True) is set, else the faster of "split" and
    "atomic" on the H100 for this shape: "atomic" where `gluon` (its "atomic" is the Gluon backward,
    faster than both Triton backwards at every point measured) or ATOMIC_FROM_KEYS says so."""
    if requested is None:
        fast_atomic = gluon or (is_causal and seq_k >= ATOMIC_FROM_KEYS)
        return "atomic" if fast_atomic and not torch.are_deterministic_algorithms_enabled() else "split"
    if requested not in BACKWARDS:
        raise UsageError(f"unknown backward {requested!r}; choose from {', '.join(BACKWARDS)}")
    if requested == "atomic" and torch.are_deterministic_algorithms_enabled():
        raise UsageError(
            'backward="atomic" adds dQ in a varying order; torch.use_deterministic_algorithms(True) '
            'is set, so use "split" or "ordered"'
        )
    return requested


def _tma_scratch(size: int, alignment: int, stream) -> torch.Tensor:
    """Global memory where device-side TMA descriptors are written (triton.set_allocator)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def row_delta(o: torch.Tensor, do: torch.Tensor) -> torch.Tensor:
    """D = rowsum(dO * O) in fp32, (B, H, seq_q), from 4-d O and dO: the backwards' first step."""
    B, H, seq_q, head_dim = o.shape
    delta = torch.empty((B, H, seq_q), dtype=torch.float32, device=o.device)
    _PREPROCESS_LAUNCH(
        (triton.cdiv(seq_q, 64), B * H),
        o, do, delta, *_strides(o), *_strides(do), H, seq_q, HEAD_DIM=head_dim, **_column_blocks(head_dim), BLOCK_M=64,
    )
    return delta


# Repeat launches skip JITFunction.run's binding (launch.CachedLaunch: 27 us of host time a call
# before, model-h100-42c284b/host-profile.txt's row-delta).
_PREPROCESS_LAUNCH = CachedLaunch(_bwd_preprocess_kernel)


def gluon_kernels_run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the Gluon kernels may take these 4-d inputs at all (flash_gluon.can_run; not under
    the interpreter): asked once per FlashAttention2Triton call, for the forward and the backward."""
    return flash_gluon is not None and not INTERPRETED and flash_gluon.can_run(q, k, v)


def gluon_backward_runs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, gluon_runs: bool | None = None) -> bool:
    """Whether "atomic" runs flash_gluon_backward's kernel for these 4-d inputs. gluon_runs:
    `gluon_kernels_run`'s answer, where the caller has it."""
    return (flash_gluon_backward is not None and not INTERPRETED
            and flash_gluon_backward.supported(q, k, v, gluon_runs))


def triton_backward(q, k, v, o, lse, do, is_causal: bool, mode: str, gluon: bool | None = None):
    """dQ, dK, dV (4-d, contiguous) from the forward's inputs, O, LSE and the output gradient.
    gluon: whether "atomic" runs flash_gluon_backward's kernel (None: `gluon_backward_runs`)."""
    B, H, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    delta = row_delta(o, do)
    if mode == "atomic" and (gluon_backward_runs(q, k, v) if gluon is None else gluon):
        return flash_gluon_backward.launch(q, k, v, do, lse, delta, is_causal)
    dk = torch.empty((B, kv_heads, seq_k, head_dim), dtype=k.dtype, device=k.device)
    dv = torch.empty_like(dk)
    if mode == "split":
        dq_acc = torch.empty((B, H, seq_q, head_dim), dtype=q.dtype, device=q.device)
    else:  # fp32 sums of every key tile's share
        dq_acc = torch.zeros((B, H, seq_q, head_dim), dtype=torch.float32, device=q.device)
    # One counter per (query head, 16-row tile): enough for any BLOCK_M the tuner picks.
    locks = torch.zeros((B * H, triton.cdiv(seq_q, 16)) if mode == "ordered" else (1,), dtype=torch.int32, device=q.device)
    scale = 1.0 / math.sqrt(head_dim)
    strides = (*_strides(q), *_strides(k), *_strides(v), *_strides(do))
    # The ordered dK/dV kernel with two column blocks hit an illegal memory access on the H100
    # (2026-11-23, fourth session; correct under the interpreter, cause not found): it pads, and
    # its dQ path (_add_dq_share, DQ_MODE 2) has since added the first column block only.
    constexprs = dict(
        HEAD_DIM=head_dim, **_column_blocks(head_dim, split=mode != "ordered"), CAUSAL=is_causal,
        PRECISION=_precision(q.dtype),
    )
    dq_mode = BACKWARDS[mode]
    # Not while torch.compile traces: Dynamo (torch 2.11) breaks the graph at set_allocator (a
    # ContextVar), in every layer of a compiled model, and the traced kernel without it returned
    # a wrong dQ (relative error 1.0, H100, benchmarks/attention/gluon-backward-ab-h100-b1ecd71).
    # Compiled, the per-thread atomics add dQ instead (the TMA path was 1.005-1.119x as fast eager,
    # dq-transposed-h100-cd88912); the Gluon backward, where it runs, is a custom op and unaffected.
    if mode == "atomic" and _dq_by_tma(q, head_dim, constexprs) and not torch.compiler.is_compiling():
        dq_mode = 3
        triton.set_allocator(_tma_scratch)
    _launch(
        "dkdv" if mode == "split" else "dkdv_dq", lambda meta: (triton.cdiv(seq_k, meta["BLOCK_N"]), B * kv_heads),
        q, k, v, do, lse, delta, dk, dv, dq_acc, locks, scale * LOG2E, scale, *strides, H, seq_q, seq_k,
        **constexprs, DQ_MODE=dq_mode, GROUP=H // kv_heads,
    )
    if mode != "split":
        return dq_acc.to(q.dtype), dk, dv
    _launch(
        "dq", lambda meta: (triton.cdiv(seq_q, meta["BLOCK_M"]), B * H),
        q, k, v, do, lse, delta, dq_acc, scale * LOG2E, scale, *strides, H, H // kv_heads, seq_q, seq_k,
        **constexprs,
    )
    return dq_acc, dk, dv


def flash_attention_triton_with_lse(q, k, v, is_causal: bool = False):
    """Forward only: output (..., seq_q, d) and log-sum-exp (..., seq_q), fp32."""
    check_inputs(q, k, v)
    _check_device(q)
    o, lse = triton_forward(as_4d(q), as_4d(k), as_4d(v), is_causal)
    return o.view(q.shape), lse.view(q.shape[:-1])


class FlashAttention2Triton(torch.autograd.Function):
    """`FlashAttention2Triton.apply(q, k, v, is_causal[, backward])` -> softmax(q k^T / sqrt(d)) v.

    backward: "split", "atomic", "ordered" or None (chosen by backward_mode; module docstring).
    Saved for backward: q, k, v, the output and the log-sum-exp (..., seq_q), each in the caller's
    shape.
    """

    @staticmethod
    def forward(ctx, q, k, v, is_causal=False, backward=None):
        check_inputs(q, k, v)
        _check_device(q)
        q4, k4, v4 = as_4d(q), as_4d(k), as_4d(v)
        # Decided here, with the forward's kernel: flash_gluon.disabled() around the forward alone
        # (lmperf attention's triton-no-gluon) keeps Triton's kernels in the backward too.
        gluon_runs = gluon_kernels_run(q4, k4, v4)  # asked once: it checks every input (`fits`)
        ctx.gluon_backward = gluon_backward_runs(q4, k4, v4, gluon_runs)
        ctx.backward_mode = backward_mode(backward, is_causal, k.shape[-2], ctx.gluon_backward)
        o, lse = triton_forward(q4, k4, v4, is_causal, gluon_runs)
        if q.dim() != 4:  # 4-d inputs (the model's, the benchmarks'): o and lse have their shapes already
            o, lse = o.view(q.shape), lse.view(q.shape[:-1])
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.is_causal = is_causal
        return o

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, o, lse = ctx.saved_tensors
        q4, k4, o4, do = as_4d(q), as_4d(k), as_4d(o), as_4d(grad_out)
        # 4-d inputs need no views (each aten view cost the host 2-5 us, host_segments.py)
        four_d = q.dim() == 4
        dq, dk, dv = triton_backward(
            q4, k4, as_4d(v), o4, lse if four_d else lse.view(o4.shape[:-1]), do, ctx.is_causal, ctx.backward_mode,
            ctx.gluon_backward,
        )
        if four_d:
            return dq, dk, dv, None, None
        return dq.view(q.shape), dk.view(k.shape), dv.view(k.shape), None, None
