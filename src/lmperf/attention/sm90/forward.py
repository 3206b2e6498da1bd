"""The attention forward on Hopper in Gluon: FlashAttention-3's warp-specialised schedule.

Triton's tl.dot waits on each product as soon as it is issued, so a tile's softmax never runs
under the tensor cores' work, and Triton does not warp-specialise these loops on sm90. Gluon
exposes the asynchronous wgmma, TMA, mbarriers and warp specialisation, and this kernel uses
them as FlashAttention-3 does. A program holds CONSUMERS x ROWS = 128 query rows (sm90.pipeline):
  - the producer warp loads a query tile's Q once and streams its K and V tiles through a ring
    of shared-memory slots by TMA; a slot is refilled once both consumers have released it;
  - two consumer warp groups of 64 query rows share each K/V tile. Per key tile j a consumer
    issues S_{j+1} = Q K_{j+1}^T and O += P_j V_j together, waits for S_{j+1} only and runs its
    online softmax while P_j V_j is still on the tensor cores, then waits for P_j V_j, rescales
    O and releases slot j. Nothing stays in flight across the loop's back edge: ptxas
    serialises every wgmma of a kernel that leaves one there;
  - persistent: one program per SM takes query tiles in turn (sm90.schedule), the producer
    loading the next tile's Q and first K/V tiles under the current one's last P V and epilogue.

Head_dim 80 runs as 64 + 16 columns (sm90.tma.column_blocks): every product over the columns is
two chained wgmmas, O two accumulators. The choices that vary by head_dim are sm90.tuning's.
Output and LSE are laid out as the portable forward lays them out (O (B, H, seq_q, d) stored
(B, seq_q, H, d); LSE (B, H, seq_q), natural log), so either backward takes them. Like the
portable kernels, a row offset within one (batch, head) is 32-bit: seq_q x heads x head_dim
below 2^31. Inputs as dispatch.gluon_fits accepts them.
"""

from __future__ import annotations

import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait,
)

from lmperf.attention.launch import CachedLaunch
from lmperf.attention.sm90 import combine, schedule
from lmperf.attention.sm90.descriptors import block_descriptors
from lmperf.attention.sm90.pipeline import ring_barriers, specialise
from lmperf.attention.sm90.tma import column_blocks
from lmperf.attention.sm90.tuning import CONSUMERS, ROWS, Tuning, current

LOG2E = 1.4426950408889634

# ----------------------------------------------------------------------------- producer


@gluon.jit
def _load_query(q_desc, qt_desc, q_smem, qt_smem, q_bar, q_empty, b, h, start_m, c, CONSUMERS: gl.constexpr,
                SPLIT: gl.constexpr):
    """The c-th query tile's Q (each consumer's ROWS rows) into Q buffer c % Q_SLOTS, once every
    consumer's last Q K^T of the tile that held the buffer is done."""
    rows: gl.constexpr = q_desc.block_type.shape[2]
    Q_SLOTS: gl.constexpr = q_bar.shape[0]
    q_slot = c % Q_SLOTS
    if c >= Q_SLOTS:
        mbarrier.wait(q_empty.index(q_slot), (c // Q_SLOTS - 1) & 1)
    bar_q = q_bar.index(q_slot)
    if SPLIT:  # each tile's last TAIL columns come through their own descriptors and slots
        mbarrier.expect(bar_q, CONSUMERS * (q_desc.block_type.nbytes + qt_desc.block_type.nbytes))
    else:
        mbarrier.expect(bar_q, CONSUMERS * q_desc.block_type.nbytes)
    for w in gl.static_range(CONSUMERS):
        tma.async_copy_global_to_shared(q_desc, [b, h, start_m + w * rows, 0], bar_q,
                                        q_smem.index(q_slot * CONSUMERS + w))
        if SPLIT:
            tma.async_copy_global_to_shared(qt_desc, [b, h, start_m + w * rows, 0], bar_q,
                                            qt_smem.index(q_slot * CONSUMERS + w))


@gluon.jit
def _load_keys(k_desc, v_desc, kt_desc, vt_desc, k_smem, v_smem, kt_smem, vt_smem, ready, empty, b, kv_h, first_tile,
               n_tiles, g, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, SPLIT: gl.constexpr):
    """Key tiles [first_tile, n_tiles) of K and V through the ring from its running count g;
    returns the count after them."""
    for t in range(first_tile, n_tiles):
        slot = g % STAGES
        if g >= STAGES:  # every consumer is done with key tile g - STAGES, which held this slot
            mbarrier.wait(empty.index(slot), (g // STAGES - 1) & 1)
        bar = ready.index(slot)
        if SPLIT:
            mbarrier.expect(bar, 2 * (k_desc.block_type.nbytes + kt_desc.block_type.nbytes))
        else:
            mbarrier.expect(bar, 2 * k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [b, kv_h, t * BLOCK_N, 0], bar, k_smem.index(slot))
        tma.async_copy_global_to_shared(v_desc, [b, kv_h, t * BLOCK_N, 0], bar, v_smem.index(slot))
        if SPLIT:
            tma.async_copy_global_to_shared(kt_desc, [b, kv_h, t * BLOCK_N, 0], bar, kt_smem.index(slot))
            tma.async_copy_global_to_shared(vt_desc, [b, kv_h, t * BLOCK_N, 0], bar, vt_smem.index(slot))
        g += 1
    return g


@gluon.jit
def _producer(q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem,
              q_bar, q_empty, ready, empty, TABLE, seq_k, H, group, n_m, per_head, items, whole, parts,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr, SPLIT: gl.constexpr,
              CAUSAL: gl.constexpr, PAIRS: gl.constexpr, ORDERED: gl.constexpr, PIECES: gl.constexpr):
    rows: gl.constexpr = q_desc.block_type.shape[2]
    g = 0  # key tiles loaded so far: the ring's running count, across query tiles
    c = 0  # query tiles loaded so far
    first, stop, step = schedule.turn(TABLE, items, ORDERED)
    code = schedule.table_code(TABLE, first, ORDERED)
    for item in range(first, stop, step):
        following = schedule.table_code(TABLE, item + 1, ORDERED)
        for half in range(2 if PAIRS else 1):
            tile_m, bh, exists, run, runs = schedule.work_item(item, code, half, whole, parts, n_m, per_head, PAIRS,
                                                               ORDERED, PIECES)
            if exists:
                b, h, start_m, first_tile, n_tiles = schedule.tile_keys(tile_m, bh, run, runs, H, seq_k,
                                                                        CONSUMERS * rows, BLOCK_N, CAUSAL, PIECES)
                kv_h = h // group
                _load_query(q_desc, qt_desc, q_smem, qt_smem, q_bar, q_empty, b, h, start_m, c, CONSUMERS, SPLIT)
                g = _load_keys(k_desc, v_desc, kt_desc, vt_desc, k_smem, v_smem, kt_smem, vt_smem, ready, empty, b,
                               kv_h, first_tile, n_tiles, g, BLOCK_N, STAGES, SPLIT)
                c += 1
        code = following


# ----------------------------------------------------------------------------- consumers


@gluon.jit
def _softmax_step(s, m_i, l_i, tile, offs_m, qk_scale, seq_k, mask_from,
                  BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr, cols_s: gl.constexpr):
    """Online softmax of key tile `tile` in base 2 (scale folded): P, new max, rescale, new sum."""
    if (tile + 1) * BLOCK_N > mask_from:  # the diagonal or the ragged last tile
        offs_n = tile * BLOCK_N + gl.arange(0, BLOCK_N, layout=cols_s)
        visible = offs_n[None, :] < seq_k
        if CAUSAL:
            visible = visible & (offs_n[None, :] <= offs_m[:, None])
        s = gl.where(visible, s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)
    p = gl.exp2(s * qk_scale - m_new[:, None])
    alpha = gl.exp2(m_i - m_new)
    return p, m_new, alpha, l_i * alpha + gl.sum(p, 1)


@gluon.jit
def _half_diagonal(q, k_smem, v_smem, sums_smem, ready, empty, q_empty, q_slot, o, p, m_i, l_i, step, tile,
                   offs_m, qk_scale, seq_k, mask_from, zero_h, WG: gl.constexpr, HEAD_DIM: gl.constexpr,
                   BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, h_layout: gl.constexpr,
                   rows_s: gl.constexpr, rows_o: gl.constexpr, p_layout: gl.constexpr):
    """A consumer's last key tile (ring step `step`, key tile `tile`) over its first half only:
    S = Q K[:half]^T issued beside P V of the tile before (its P `p`), the softmax under that
    P V, then O += P V[:half]. Returns O, the running max and the sums."""
    HALF: gl.constexpr = BLOCK_N // 2
    last = (step - 1) % STAGES
    p_op = gl.convert_layout(p.to(v_smem.dtype), p_layout)
    slot = step % STAGES
    mbarrier.wait(ready.index(slot), (step // STAGES) & 1)
    k_half = k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM]).slice(0, HALF)
    s_tok = warpgroup_mma(q, k_half.permute((1, 0)), zero_h, use_acc=False, is_async=True)
    pv_tok = warpgroup_mma(p_op, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), o, is_async=True)
    s = warpgroup_mma_wait(1, deps=(s_tok,))
    mbarrier.arrive(q_empty.index(q_slot), count=1)  # every Q K^T of this query tile is done: its Q may be refilled
    rows_h: gl.constexpr = gl.SliceLayout(1, h_layout)
    # key tile `tile` of BLOCK_N keys is half-tile 2 * tile of HALF keys
    p, m_h, alpha, l_h = _softmax_step(s, gl.convert_layout(m_i, rows_h), gl.convert_layout(l_i, rows_h), 2 * tile,
                                       gl.convert_layout(offs_m, rows_h), qk_scale, seq_k, mask_from, HALF, CAUSAL,
                                       gl.SliceLayout(0, h_layout))
    # as SUMS_TO_SHARED in the loop: the store keeps ptxas from moving the P V wait above the softmax
    sums_smem.index(WG).store(gl.convert_layout(l_h, rows_s))
    o = warpgroup_mma_wait(0, deps=(pv_tok,))
    o = o * gl.convert_layout(alpha, rows_o)[:, None]
    mbarrier.arrive(empty.index(last), count=1)
    pv_tok = warpgroup_mma(gl.convert_layout(p.to(v_smem.dtype), p_layout),
                           v_smem.index(slot).reshape([BLOCK_N, HEAD_DIM]).slice(0, HALF), o, is_async=True)
    o = warpgroup_mma_wait(0, deps=(pv_tok,))
    mbarrier.arrive(empty.index(slot), count=1)
    return o, gl.convert_layout(m_h, rows_s), gl.convert_layout(l_h, rows_s)


@gluon.jit
def _store_run(PART_O, PART_LSE, run, o, ot, m_i, l_i, WG: gl.constexpr, HEAD_DIM: gl.constexpr, TAIL: gl.constexpr,
               SPLIT: gl.constexpr, CONSUMERS: gl.constexpr, o_layout: gl.constexpr, ot_layout: gl.constexpr):
    """A consumer's rows of run `run` of a split tile: O (already divided by this run's sums) in
    fp32, head_dim columns a row, and the log-sum-exp in base 2, for sm90.combine."""
    M: gl.constexpr = 64
    WIDTH: gl.constexpr = HEAD_DIM + TAIL if SPLIT else HEAD_DIM
    first = run.to(gl.int64) * (CONSUMERS * M) + WG * M
    rows = first + gl.arange(0, M, layout=gl.SliceLayout(1, o_layout))
    cols = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, o_layout))
    gl.store(PART_O + rows[:, None] * WIDTH + cols[None, :], o)
    if SPLIT:
        rows_t = first + gl.arange(0, M, layout=gl.SliceLayout(1, ot_layout))
        cols_t = HEAD_DIM + gl.arange(0, TAIL, layout=gl.SliceLayout(0, ot_layout))
        gl.store(PART_O + rows_t[:, None] * WIDTH + cols_t[None, :], ot)
    lse = gl.convert_layout(m_i + gl.log2(l_i), gl.SliceLayout(1, o_layout))
    gl.store(PART_LSE + first + gl.arange(0, M, layout=gl.SliceLayout(1, o_layout)), lse)


@gluon.jit
def _store_tile(o, ot, m_i, l_i, o_smem, ot_smem, o_desc, ot_desc, O, LSE, b, h, bh, row0, offs_m, seq_q, stride_ob,
                stride_oh, stride_on, WG: gl.constexpr, HEAD_DIM: gl.constexpr, TAIL: gl.constexpr,
                SPLIT: gl.constexpr, O_BY_TMA: gl.constexpr, o_layout: gl.constexpr, ot_layout: gl.constexpr):
    """A consumer's rows of a query tile: O (divided by its sums) in the inputs' dtype, and LSE."""
    M: gl.constexpr = 64
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    cols_o: gl.constexpr = gl.SliceLayout(0, o_layout)
    if O_BY_TMA:
        # O out by a TMA store staged in shared memory (rows past seq_q clipped), as the
        # backward's dK and dV: register stores of the wgmma layout write 4 bytes a
        # thread over eight rows a warp and sit on the load/store queue.
        tma.store_wait(0)  # the previous query tile's store has read the stage
        o_stage = o_smem.index(WG)
        o_stage.reshape([M, HEAD_DIM]).store(o.to(o_stage.dtype))
        if SPLIT:
            ot_stage = ot_smem.index(WG)
            ot_stage.reshape([M, TAIL]).store(ot.to(ot_stage.dtype))
        fence_async_shared()
        gl.thread_barrier()  # every thread's part staged before the store reads it
        tma.async_copy_shared_to_global(o_desc, [b, h, row0, 0], o_stage)
        if SPLIT:
            tma.async_copy_shared_to_global(ot_desc, [b, h, row0, 0], ot_stage)
    else:
        rows = row0 + gl.arange(0, M, layout=rows_o)
        cols = gl.arange(0, HEAD_DIM, layout=cols_o)
        out = (O + b.to(gl.int64) * stride_ob + h.to(gl.int64) * stride_oh + rows[:, None] * stride_on
               + cols[None, :])
        gl.store(out, o.to(O.dtype.element_ty), mask=rows[:, None] < seq_q)
        if SPLIT:
            rows_t = row0 + gl.arange(0, M, layout=gl.SliceLayout(1, ot_layout))
            cols_t = HEAD_DIM + gl.arange(0, TAIL, layout=gl.SliceLayout(0, ot_layout))
            out_t = (O + b.to(gl.int64) * stride_ob + h.to(gl.int64) * stride_oh
                     + rows_t[:, None] * stride_on + cols_t[None, :])
            gl.store(out_t, ot.to(O.dtype.element_ty), mask=rows_t[:, None] < seq_q)
    lse = (m_i + gl.log2(l_i)) / 1.4426950408889634  # natural log, as the portable backward reads it
    gl.store(LSE + bh.to(gl.int64) * seq_q + offs_m, lse, mask=offs_m < seq_q)


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar, q_empty,
              ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale,
              seq_q, seq_k, H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on,
              HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr, BLOCK_N: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr, PAIRS: gl.constexpr,
              ORDERED: gl.constexpr, O_BY_TMA: gl.constexpr, PIECES: gl.constexpr, HALF_DIAGONAL: gl.constexpr,
              SUMS_TO_SHARED: gl.constexpr, WG: gl.constexpr):
    # HEAD_DIM: the first column block's width; SPLIT: a second block of TAIL columns follows.
    # Without SPLIT the tail arguments are unused.
    M: gl.constexpr = 64
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    ot_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, TAIL, 16])
    pt_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=ot_layout, k_width=2)
    rows_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    cols_s: gl.constexpr = gl.SliceLayout(0, s_layout)
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    Q_SLOTS: gl.constexpr = q_bar.shape[0]
    zero_s = gl.zeros([M, BLOCK_N], gl.float32, layout=s_layout)
    # A causal consumer whose rows end in the first half of its last key tile (the first of two,
    # on the diagonal) needs only that tile's first 64 keys: its last Q K^T and P V run at half
    # width (`half_last`), a quarter of the diagonal tiles' tensor work saved.
    HALF_LAST: gl.constexpr = HALF_DIAGONAL and CAUSAL and not SPLIT and not PIECES and BLOCK_N == 2 * M
    h_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, M, 16])
    zero_h = gl.zeros([M, M], gl.float32, layout=h_layout)

    # The tile's work below is written out inline: moved into functions of their own, the wgmma
    # issues' inlined scopes add debug labels that change ptxas's schedule of some specialisations.
    g = 0  # the ring's running count of key tiles, as the producer's
    c = 0  # query tiles so far
    first, stop, step = schedule.turn(TABLE, items, ORDERED)
    code = schedule.table_code(TABLE, first, ORDERED)
    for item in range(first, stop, step):
        following = schedule.table_code(TABLE, item + 1, ORDERED)
        for half in range(2 if PAIRS else 1):
            tile_m, bh, exists, run, runs = schedule.work_item(item, code, half, whole, parts, n_m, per_head, PAIRS,
                                                               ORDERED, PIECES)
            if exists:
                b, h, start_m, first_tile, n_tiles = schedule.tile_keys(tile_m, bh, run, runs, H, seq_k, CONSUMERS * M,
                                                                        BLOCK_N, CAUSAL, PIECES)
                row0 = start_m + WG * M
                offs_m = row0 + gl.arange(0, M, layout=rows_s)
                mask_from = seq_k  # key tiles ending past this need a mask
                n_mine = n_tiles - first_tile
                if CAUSAL:
                    mask_from = gl.minimum(seq_k, row0)
                    # This warp group's own last key tile: with key tiles shorter than the
                    # program's rows the first consumer stops before the program's last tile
                    # (all its keys hidden there). It still waits for and releases the tiles it
                    # skips, which the ring's count and the producer's refills need.
                    n_mine = gl.minimum(n_tiles, gl.cdiv(row0 + M, BLOCK_N))  # first_tile: 0
                if HALF_LAST:  # not for a tile whose only key tile is the diagonal (kept simple)
                    half_last = (n_mine >= 2) & (row0 + M <= (n_mine - 1) * BLOCK_N + M)
                    n_full = n_mine - half_last.to(gl.int32)
                else:  # a constexpr, so that `_half_diagonal` is not traced at all: a plain False would
                    # become a runtime bool, and the half-width layouts misfit other key tiles
                    half_last: gl.constexpr = False
                    n_full = n_mine
                o = gl.zeros([M, HEAD_DIM], gl.float32, layout=o_layout)
                ot = gl.zeros([M, TAIL], gl.float32, layout=ot_layout)
                m_i = gl.full([M], float("-inf"), gl.float32, layout=rows_s)
                l_i = gl.zeros([M], gl.float32, layout=rows_s)

                q_slot = c % Q_SLOTS
                q = q_smem.index(q_slot * CONSUMERS + WG).reshape([M, HEAD_DIM])
                if SPLIT:
                    qt = qt_smem.index(q_slot * CONSUMERS + WG).reshape([M, TAIL])
                mbarrier.wait(q_bar.index(q_slot), (c // Q_SLOTS) & 1)
                mbarrier.wait(ready.index(g % STAGES), (g // STAGES) & 1)
                k_tile = k_smem.index(g % STAGES).reshape([BLOCK_N, HEAD_DIM])
                s_tok = warpgroup_mma(q, k_tile.permute((1, 0)), zero_s, use_acc=False, is_async=True)
                if SPLIT:
                    s_tok = warpgroup_mma(qt, kt_smem.index(g % STAGES).reshape([BLOCK_N, TAIL]).permute((1, 0)), s_tok,
                                          is_async=True)
                s = warpgroup_mma_wait(0, deps=(s_tok,))
                p, m_i, alpha, l_i = _softmax_step(s, m_i, l_i, first_tile, offs_m, qk_scale, seq_k, mask_from, BLOCK_N,
                                                   CAUSAL, cols_s)
                for j in range(n_full - 1):
                    cur = (g + j) % STAGES
                    nxt = g + j + 1
                    mbarrier.wait(ready.index(nxt % STAGES), (nxt // STAGES) & 1)
                    k_tile = k_smem.index(nxt % STAGES).reshape([BLOCK_N, HEAD_DIM])
                    s_tok = warpgroup_mma(q, k_tile.permute((1, 0)), zero_s, use_acc=False, is_async=True)
                    if SPLIT:
                        s_tok = warpgroup_mma(qt, kt_smem.index(nxt % STAGES).reshape([BLOCK_N, TAIL]).permute((1, 0)),
                                              s_tok, is_async=True)
                    p_op = gl.convert_layout(p.to(v_smem.dtype), p_layout)
                    pv_tok = warpgroup_mma(p_op, v_smem.index(cur).reshape([BLOCK_N, HEAD_DIM]), o, is_async=True)
                    if SPLIT:
                        pvt_tok = warpgroup_mma(gl.convert_layout(p.to(v_smem.dtype), pt_layout),
                                                vt_smem.index(cur).reshape([BLOCK_N, TAIL]), ot, is_async=True)
                        s = warpgroup_mma_wait(2, deps=(s_tok,))  # S_{j+1} done; P_j V_j's two products may still run
                    else:
                        s = warpgroup_mma_wait(1, deps=(s_tok,))  # S_{j+1} done; P_j V_j may still run
                    p, m_i, alpha, l_i = _softmax_step(s, m_i, l_i, first_tile + j + 1, offs_m, qk_scale, seq_k,
                                                       mask_from, BLOCK_N, CAUSAL, cols_s)
                    if SUMS_TO_SHARED:
                        # Nothing reads these sums back. Without a shared-memory store that needs
                        # the whole softmax, ptxas schedules the wait for P_j V_j below before the
                        # softmax, so the two never overlap; it does not move the wait above a
                        # store.
                        sums_smem.index(WG).store(l_i)
                    if SPLIT:
                        o, ot = warpgroup_mma_wait(0, deps=(pv_tok, pvt_tok))
                        ot = ot * gl.convert_layout(alpha, gl.SliceLayout(1, ot_layout))[:, None]
                    else:
                        o = warpgroup_mma_wait(0, deps=(pv_tok,))
                    o = o * gl.convert_layout(alpha, rows_o)[:, None]
                    mbarrier.arrive(empty.index(cur), count=1)
                if half_last:  # the diagonal tile at half width, its Q K^T issued beside the last full tile's P V
                    o, m_i, l_i = _half_diagonal(q, k_smem, v_smem, sums_smem, ready, empty, q_empty, q_slot, o, p, m_i,
                                                 l_i, g + n_full, first_tile + n_full, offs_m, qk_scale, seq_k,
                                                 mask_from, zero_h, WG, HEAD_DIM, BLOCK_N, STAGES, CAUSAL, h_layout,
                                                 rows_s, rows_o, p_layout)
                else:
                    mbarrier.arrive(q_empty.index(q_slot), count=1)  # every Q K^T of this query tile is done: its Q may be refilled
                    last = (g + n_mine - 1) % STAGES
                    p_op = gl.convert_layout(p.to(v_smem.dtype), p_layout)
                    pv_tok = warpgroup_mma(p_op, v_smem.index(last).reshape([BLOCK_N, HEAD_DIM]), o, is_async=True)
                    if SPLIT:
                        pvt_tok = warpgroup_mma(gl.convert_layout(p.to(v_smem.dtype), pt_layout),
                                                vt_smem.index(last).reshape([BLOCK_N, TAIL]), ot, is_async=True)
                        o, ot = warpgroup_mma_wait(0, deps=(pv_tok, pvt_tok))
                    else:
                        o = warpgroup_mma_wait(0, deps=(pv_tok,))
                    mbarrier.arrive(empty.index(last), count=1)
                for j in range(n_mine, n_tiles - first_tile):  # skipped: wait for each (an early release would count
                    # towards the slot's previous use) and release it
                    skipped = g + j
                    mbarrier.wait(ready.index(skipped % STAGES), (skipped // STAGES) & 1)
                    mbarrier.arrive(empty.index(skipped % STAGES), count=1)

                o = o / gl.convert_layout(l_i, rows_o)[:, None]
                if SPLIT:
                    ot = ot / gl.convert_layout(l_i, gl.SliceLayout(1, ot_layout))[:, None]
                if PIECES:  # a run of a split tile leaves its O and LSE in the runs' buffers
                    _store_run(PART_O, PART_LSE, item, o, ot, m_i, l_i, WG, HEAD_DIM, TAIL, SPLIT, CONSUMERS, o_layout,
                               ot_layout)
                else:
                    _store_tile(o, ot, m_i, l_i, o_smem, ot_smem, o_desc, ot_desc, O, LSE, b, h, bh, row0, offs_m, seq_q,
                                stride_ob, stride_oh, stride_on, WG, HEAD_DIM, TAIL, SPLIT, O_BY_TMA, o_layout, ot_layout)
                g += n_tiles - first_tile
                c += 1
        code = following
    if O_BY_TMA:
        tma.store_wait(0)  # the last store reads shared memory the program gives up


# ----------------------------------------------------------------------------- the kernel


@gluon.jit
def _fwd_kernel(
    q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, o_desc, ot_desc, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q,
    seq_k, H, group, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on,
    HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
    CAUSAL: gl.constexpr, PAIRS: gl.constexpr, ORDERED: gl.constexpr, CONSUMERS: gl.constexpr,
    O_BY_TMA: gl.constexpr, PIECES: gl.constexpr, Q_SLOTS: gl.constexpr, HALF_DIAGONAL: gl.constexpr,
    SUMS_TO_SHARED: gl.constexpr, CONSUMER_REGISTERS: gl.constexpr, PRODUCER_REGISTERS: gl.constexpr,
    num_warps: gl.constexpr,
):
    # Each program takes work items pid, pid + programs, ... in turn, or with ORDERED its run of
    # TABLE; with PIECES its items are runs over the keys of the query tiles from `whole` on
    # (sm90.schedule). The producer loads a query tile's Q into one of Q_SLOTS buffers once the
    # consumers' last Q K^T of the tile that held it is done (`q_empty`) and streams its K/V
    # tiles into the ring while they finish P V, O and LSE.
    # One slot per 4-d TMA box (1, 1, rows, HEAD_DIM); the consumers view each as 2-d.
    q_smem = gl.allocate_shared_memory(q_desc.dtype, [Q_SLOTS * CONSUMERS, 1, 1, 64, HEAD_DIM], q_desc.layout)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [STAGES, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [STAGES, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    if SPLIT:  # the last TAIL columns of each
        qt_smem = gl.allocate_shared_memory(qt_desc.dtype, [Q_SLOTS * CONSUMERS, 1, 1, 64, TAIL], qt_desc.layout)
        kt_smem = gl.allocate_shared_memory(kt_desc.dtype, [STAGES, 1, 1, BLOCK_N, TAIL], kt_desc.layout)
        vt_smem = gl.allocate_shared_memory(vt_desc.dtype, [STAGES, 1, 1, BLOCK_N, TAIL], vt_desc.layout)
    else:  # placeholders the partitions never touch
        qt_smem = q_smem
        kt_smem = k_smem
        vt_smem = v_smem
    if O_BY_TMA:  # each consumer's O (and tail) staged for its TMA store
        o_smem = gl.allocate_shared_memory(o_desc.dtype, [CONSUMERS, 1, 1, 64, HEAD_DIM], o_desc.layout)
        if SPLIT:
            ot_smem = gl.allocate_shared_memory(ot_desc.dtype, [CONSUMERS, 1, 1, 64, TAIL], ot_desc.layout)
        else:
            ot_smem = o_smem
    else:
        o_smem = q_smem
        ot_smem = qt_smem
    q_bar, q_empty = ring_barriers(Q_SLOTS, CONSUMERS)  # each Q buffer's loads landed / every consumer done with it
    ready, empty = ring_barriers(STAGES, CONSUMERS)
    # each consumer's row sums, stored per key tile only to order its softmax before a wait (SUMS_TO_SHARED)
    sums_smem = gl.allocate_shared_memory(gl.float32, [CONSUMERS, 64], gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    fence_async_shared()

    specialise(
        _consumer, (q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar, q_empty,
                    ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q, seq_k, H, n_m, per_head,
                    items, whole, parts, stride_ob, stride_oh, stride_on, HEAD_DIM, TAIL, SPLIT, BLOCK_N, STAGES,
                    CAUSAL, CONSUMERS, PAIRS, ORDERED, O_BY_TMA, PIECES, HALF_DIAGONAL, SUMS_TO_SHARED),
        _producer, (q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, q_smem, k_smem, v_smem, qt_smem, kt_smem,
                    vt_smem, q_bar, q_empty, ready, empty, TABLE, seq_k, H, group, n_m, per_head, items, whole, parts,
                    BLOCK_N, STAGES, CONSUMERS, SPLIT, CAUSAL, PAIRS, ORDERED, PIECES),
        CONSUMER_REGISTERS, PRODUCER_REGISTERS)


# Launches past the first of each specialisation skip JITFunction.run's binding (launch.py).
_FWD_LAUNCH = CachedLaunch(_fwd_kernel)

# ----------------------------------------------------------------------------- host


def kernel_constexprs(tuning: Tuning, head_dim: int, causal: bool, pairs: bool, ordered: bool,
                      pieces: bool) -> dict:
    """The kernel's compile-time arguments for one launch (the sm90 report compiles with them too)."""
    main, tail = column_blocks(head_dim)
    return dict(HEAD_DIM=main, TAIL=tail or 16, SPLIT=bool(tail), BLOCK_N=tuning.key_tile, STAGES=tuning.kv_slots,
                CAUSAL=causal, PAIRS=pairs, ORDERED=ordered, CONSUMERS=CONSUMERS,
                O_BY_TMA=tuning.stores_o_by_tma(head_dim, causal), PIECES=pieces,
                Q_SLOTS=tuning.query_buffers(head_dim), HALF_DIAGONAL=head_dim in tuning.half_diagonal,
                SUMS_TO_SHARED=head_dim in tuning.sums_to_shared, CONSUMER_REGISTERS=tuning.consumer_registers,
                PRODUCER_REGISTERS=tuning.producer_registers, num_warps=4)


def _order_table(tuning: Tuning, q: torch.Tensor, k: torch.Tensor, n_m: int) -> torch.Tensor | None:
    """The host's order of a causal forward's single query tiles (schedule.order_table), with
    heads in sections whose K and V fit `tuning.l2_share`; None where pairs run instead."""
    batch, heads, _, head_dim = q.shape
    seq_k = k.shape[2]
    if head_dim not in tuning.ordered_causal:
        return None
    group = heads // k.shape[1]  # query heads a K/V head serves: adjacent heads share its bytes
    section = max(1, tuning.l2_share * group // (2 * seq_k * head_dim * k.element_size()))
    return schedule.order_table(n_m, batch * heads, seq_k, CONSUMERS * ROWS, tuning.key_tile, section,
                                tuning.tile_cost, q.device)


def _split(tuning: Tuning, units: int, head_dim: int, seq_k: int, is_causal: bool, device) -> tuple[int, int]:
    """(whole, parts) of schedule.split_plan where a non-causal forward splits its last round,
    else (units, 1)."""
    if is_causal or seq_k < tuning.split_from_keys.get(head_dim, math.inf):
        return units, 1
    return schedule.split_plan(units, schedule.multiprocessors(device), triton.cdiv(seq_k, tuning.key_tile))


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """O (B, H, seq_q, d), stored (B, seq_q, H, d), and LSE (B, H, seq_q) in fp32, as the
    portable forward returns them, from (B, H, S, d) q and (B, H_kv, S, d) k, v."""
    tuning = current()
    batch, heads, seq_q, head_dim = q.shape
    seq_k = k.shape[2]
    block_n = tuning.key_tile
    (q_desc, qt_desc), (k_desc, kt_desc), (v_desc, vt_desc) = (
        block_descriptors(x, rows) for x, rows in ((q, ROWS), (k, block_n), (v, block_n)))
    o = torch.empty((batch, seq_q, heads, head_dim), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((batch, heads, seq_q), dtype=torch.float32, device=q.device)
    o_desc, ot_desc = block_descriptors(o, ROWS) if tuning.stores_o_by_tma(head_dim, is_causal) else (None, None)
    n_m = triton.cdiv(seq_q, CONSUMERS * ROWS)
    table = _order_table(tuning, q, k, n_m) if is_causal else None
    pairs = is_causal and table is None
    per_head = (n_m + 1) // 2 if pairs else n_m  # work items: pairs of query tiles, or tiles
    units = batch * heads * per_head
    whole, parts = _split(tuning, units, head_dim, seq_k, is_causal, q.device)
    # (items, the runs' O and LSE buffers, PIECES) of each launch: one, or the whole tiles' and the
    # runs' (a launch of their own, so that the whole tiles' kernel is the unsplit one); without
    # PIECES the buffers are LSE itself, unread, and whole and parts are items and 1, so that
    # they add no specialisations
    launches = [(units, lse, lse, False)]
    if parts > 1:
        runs = (units - whole) * parts
        runs_o, runs_lse = combine.buffers(runs, CONSUMERS * ROWS, head_dim, q.device)
        launches = [(whole, lse, lse, False)] * (whole > 0) + [(runs, runs_o, runs_lse, True)]
    for items, part_o, part_lse, pieces in launches:
        _FWD_LAUNCH(
            (min(items, schedule.multiprocessors(q.device)),), q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc,
            o_desc, ot_desc, o, lse, lse if table is None else table, part_o, part_lse,  # TABLE: unread without ORDERED
            LOG2E / math.sqrt(head_dim), seq_q, seq_k, heads, heads // k.shape[1], n_m, per_head, items,
            whole if pieces else items, parts if pieces else 1, o.stride(0), o.stride(1), o.stride(2),
            **kernel_constexprs(tuning, head_dim, is_causal, pairs, table is not None, pieces),
        )
    if parts > 1:
        combine.combine(runs_o, runs_lse, o, lse, whole, parts, n_m)
    return o, lse
