"""Trial (prepared 2026-11-25, run the same day: benchmarks/attention/gluon-backward-h100-8a3b095/):
the dK/dV/dQ backward in Gluon, warp-specialised as flash_gluon's forward is, at head_dim 64 and 128.

Outcome: correct (float64 check, every mode), but no exact mode is as fast as flash_triton's
atomic backward: the best (DQ_MODE 3, one dQ_i per query tile) runs at 0.834-0.978 of its speed at
d=64 and 0.737-0.809 at d=128, while the dK/dV part alone (mode 2, no dQ) is 1.096-1.459x as fast
as Triton's whole backward. Rows, modes and profile: the results README above; reasoning:
docs/attention.md item 32. Prediction below (-10 to -20%): missed; the first run took 1.44-1.85x
Triton's time. Prepared since and run (`gpu-next`, gluon-backward-next-h100-43fc11f/): mode 10
(mode 3's addressing from one base pointer) and mode 11 (dQ_i through shared memory and TMA bulk
reductions, `_tma_reduce_add`), with delta from flash_triton's preprocess kernel: mode 11 is
1.099-1.350x as fast as flash_triton's atomic backward at d=64 and level at 128, and went into
src/lmperf/attention/flash_gluon_backward.py (docs/attention.md item 33).

Why: the backward is about 70% of forward + backward and cuDNN's runs 1.38x shorter than ours at
d=64 causal 16k, its tensor pipe busy 48.5% of the time against our 34.6%
(benchmarks/attention/stall-profile-h100-cd88912). Triton's tl.dot waits on each product as it
is issued; here each product is asynchronous and waited on only where its result is read.

One program per (128 keys, batch x key/value head); its two consumer warp groups own 64 keys
each (their dK and dV stay in registers) and share every query tile, which a producer warp
streams by TMA (Q_i and dO_i into a 2-slot ring; K and V once). Per query tile i of 64 rows
(and, under GQA, per query head of the group) a consumer:
  1. issues S^T = K Q_i^T and dP^T = V dO_i^T together;
  2. waits for S^T only: P^T = exp2(S^T scale log2e - LSE_i log2e), masked (causal, ragged);
  3. issues dV += P^T dO_i (P^T from registers), waits for dP^T: dS^T = P^T (dP^T - delta_i);
  4. stores dS^T to shared memory and issues dK += dS^T Q_i (registers) and dQ_i = dS K
     (dS^T read transposed from shared memory), waits for all, adds scale x dQ_i into an fp32
     dQ by per-thread atomics (Gluon 3.6's TMA has no bulk reduction, docs item 27), and
     releases the slot. At head_dim 128, dQ_i comes in two 64-column chunks (K sliced in shared
     memory), the second issued while the first one's atomics go out; even so the consumers
     spill 208-288 bytes there (none at 64; gluon-backward-sm90-report.txt).
Steps 2-3 run under the tensor cores' work of 1 and 3. Issuing the next tile's S^T and dP^T
before this tile's atomics (so they cross the loop's back edge in flight) was tried on the CPU:
ptxas then serialises every wgmma (C7514, "non wgmma instructions reading accumulator registers
... between start and end of the pipeline stage"), as P V across the back edge did in the
forward trial, though these products accumulate into nothing; so nothing crosses it here. D = rowsum(dO * O) comes from the host
(torch) in this trial. At the end dK (x scale) and dV are stored.

Prediction (before the run, a guess): the dK/dV kernel's time -10 to -20% at d=64 against
flash_triton's atomic backward, which would bring forward + backward to about 0.95-1.0x cuDNN's
time; the per-thread atomics (5-12% slower than TMA reductions in Triton, item 24) are the risk.

`python benchmarks/attention/trials/gluon_backward.py` compiles it for sm90 and prints registers
per partition, spills, shared memory and ptxas's serialisation note (no GPU needed). On an H100:
`PYTHONPATH=src python3 benchmarks/attention/trials/gluon_backward.py gpu OUT.jsonl` (mode 0; `gpu-ablate`:
the modes side by side, `gpu-profile`: the Nsight Compute workload) checks dQ,
dK, dV against float64 (odd lengths, seq_q != seq_k, GQA/MQA, causal and not, d 64 and 128) and
times the backward beside flash_triton's atomic and split backwards and SDPA cuDNN's, interleaved.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from lmperf.attention.flash_gluon import LOG2E, descriptor as _descriptor, ring_barriers  # a 4-d TMA box
from lmperf.attention.flash_gluon_backward import _tma_reduce_add  # mode 11 went into src/ from here

KEYS = 64  # keys per consumer warp group; a program holds two
ROWS = 64  # query rows per tile
STAGES = 2  # Q_i / dO_i slots


@gluon.jit
def _producer(q_desc, k_desc, v_desc, do_desc, lse_desc, delta_desc, q_smem, k_smem, v_smem, do_smem, lse_smem, delta_smem,
              kv_bar, ready, empty, b, kv_h, H, group, start_n, first_tile, n_q_tiles, seq_q, STAGES: gl.constexpr,
              STATS_BY_TMA: gl.constexpr):
    mbarrier.expect(kv_bar, 4 * k_desc.block_type.nbytes)
    rows: gl.constexpr = k_desc.block_type.shape[2]
    for w in gl.static_range(2):
        tma.async_copy_global_to_shared(k_desc, [b, kv_h, start_n + w * rows, 0], kv_bar, k_smem.slice(w * rows, rows, dim=2))
        tma.async_copy_global_to_shared(v_desc, [b, kv_h, start_n + w * rows, 0], kv_bar, v_smem.slice(w * rows, rows, dim=2))
    h = kv_h * group  # the query head and tile of step t, counted on (no division per step)
    i = 0
    for t in range(group * n_q_tiles):
        slot = t % STAGES
        if t >= STAGES:  # both consumers are done with step t - STAGES, which held this slot
            mbarrier.wait(empty.index(slot), (t // STAGES - 1) & 1)
        row = (first_tile + i) * q_desc.block_type.shape[2]
        bar = ready.index(slot)
        if STATS_BY_TMA:  # the tile's LSE and delta too (flat (B H S) rows: past seq_q, the next head's)
            mbarrier.expect(bar, 2 * q_desc.block_type.nbytes + 2 * lse_desc.block_type.nbytes)
            flat = (b * H + h) * seq_q + row
            tma.async_copy_global_to_shared(lse_desc, [flat], bar, lse_smem.index(slot))
            tma.async_copy_global_to_shared(delta_desc, [flat], bar, delta_smem.index(slot))
        else:
            mbarrier.expect(bar, 2 * q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [b, h, row, 0], bar, q_smem.index(slot))
        tma.async_copy_global_to_shared(do_desc, [b, h, row, 0], bar, do_smem.index(slot))
        i += 1
        if i == n_q_tiles:
            i = 0
            h += 1


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, do_smem, ds_smem, ds_bar, dq_desc, dq_smem, lse_smem, delta_smem, kv_bar, ready, empty,
              LSE, DELTA, DQ, DK, DV,
              scale, qk_scale, seq_q, seq_k, b, kv_h, H, group, start_n, first_tile, n_q_tiles,
              stride_dqb, stride_dqh, stride_dqn, stride_kb, stride_kh, stride_kn,
              WG: gl.constexpr, HEAD_DIM: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
              DQ_MODE: gl.constexpr, STATS_BY_TMA: gl.constexpr):
    N: gl.constexpr = 64  # keys of this warp group
    M: gl.constexpr = 64  # query rows per tile
    # dQ_i in column chunks of at most 64: at head_dim 128 a whole 64 x 128 fp32 dQ_i beside dK,
    # dV (64 x 128 each) and the tile's S^T, dP^T would not fit the consumer's 240 registers.
    DQ_W: gl.constexpr = 64 if HEAD_DIM > 64 else HEAD_DIM
    CHUNKS: gl.constexpr = HEAD_DIM // DQ_W
    st_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, M, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16])
    dq_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DQ_W, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    keys_l: gl.constexpr = gl.SliceLayout(1, st_layout)
    queries_l: gl.constexpr = gl.SliceLayout(0, st_layout)

    key0 = start_n + WG * N
    offs_k = key0 + gl.arange(0, N, layout=keys_l)
    k_all = k_smem.reshape([2 * N, HEAD_DIM])  # both warp groups' keys, for dQ_i over all 128 (mode 3)
    k_tile = k_all.slice(WG * N, N, dim=0)
    v_tile = v_smem.reshape([2 * N, HEAD_DIM]).slice(WG * N, N, dim=0)
    zero_st = gl.zeros([N, M], gl.float32, layout=st_layout)
    zero_dq = gl.zeros([M, DQ_W], gl.float32, layout=dq_layout)
    dk = gl.zeros([N, HEAD_DIM], gl.float32, layout=acc_layout)
    dv = gl.zeros([N, HEAD_DIM], gl.float32, layout=acc_layout)
    cols_acc = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, acc_layout))
    rows_dq = gl.arange(0, M, layout=gl.SliceLayout(1, dq_layout))
    cols_dq = gl.arange(0, DQ_W, layout=gl.SliceLayout(0, dq_layout))
    offs_dq = rows_dq[:, None] * HEAD_DIM + cols_dq[None, :]  # mode 10: a dQ_i chunk's offsets from its tile's base

    mbarrier.wait(kv_bar, 0)
    h = kv_h * group  # the query head and tile of step t, counted on (no division per step)
    i = 0
    for t in range(group * n_q_tiles):
        slot = t % STAGES
        row0 = (first_tile + i) * M
        bh = b * H + h
        offs_q = row0 + gl.arange(0, M, layout=queries_l)
        # Rows past the sequence: LSE +inf makes their P zero (their Q rows are zero-filled).
        if not STATS_BY_TMA:
            lse = gl.load(LSE + bh.to(gl.int64) * seq_q + offs_q, mask=offs_q < seq_q, other=float("inf")) * 1.4426950408889634
            delta = gl.load(DELTA + bh.to(gl.int64) * seq_q + offs_q, mask=offs_q < seq_q, other=0.0)
        mbarrier.wait(ready.index(slot), (t // STAGES) & 1)
        if STATS_BY_TMA:  # rows past seq_q hold another head's values: harmless, their Q and dO rows are 0
            lse = lse_smem.index(slot).load(queries_l) * 1.4426950408889634
            delta = delta_smem.index(slot).load(queries_l)
        q_tile = q_smem.index(slot).reshape([M, HEAD_DIM])
        do_tile = do_smem.index(slot).reshape([M, HEAD_DIM])
        # 1. S^T and dP^T together
        st_tok = warpgroup_mma(k_tile, q_tile.permute((1, 0)), zero_st, use_acc=False, is_async=True)
        dpt_tok = warpgroup_mma(v_tile, do_tile.permute((1, 0)), zero_st, use_acc=False, is_async=True)
        # 2. P^T under dP^T
        st = warpgroup_mma_wait(1, deps=(st_tok,))
        pt = gl.exp2(st * qk_scale - lse[None, :])
        visible = offs_k[:, None] < seq_k
        if CAUSAL:
            visible = visible & (offs_k[:, None] <= offs_q[None, :])
        pt = gl.where(visible, pt, 0.0)
        # 3. dV under dS^T
        pt_op = gl.convert_layout(pt.to(q_tile.dtype), op_layout)
        dv_tok = warpgroup_mma(pt_op, do_tile, dv, is_async=True)
        dpt = warpgroup_mma_wait(1, deps=(dpt_tok,))
        dst = (pt * (dpt - delta[None, :])).to(q_tile.dtype)
        # 4. dK and dQ_i from dS^T
        if DQ_MODE >= 3:  # slot t % 2 holds both warp groups' dS^T (128 keys x M)
            ds_all = ds_smem.index(t % 2)
            ds_tile = ds_all.slice(WG * N, N, dim=0)
        else:
            ds_tile = ds_smem.index(WG).slice(0, N, dim=0)
        ds_tile.store(dst)
        fence_async_shared()
        gl.thread_barrier()  # every thread's part of dS^T is in shared memory before the wgmma reads it
        dk_tok = warpgroup_mma(gl.convert_layout(dst, op_layout), q_tile, dk, is_async=True)
        if DQ_MODE == 2:  # ablation: no dQ at all
            dv, dk = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok))
            mbarrier.arrive(empty.index(slot), count=1)
        elif DQ_MODE >= 3:
            # Modes 3, 10 and 11: dQ_i = dS K over all 128 keys, once, by the warp group owning
            # tile t (t % 2): half the atomics of one dQ_i per warp group, and the owners
            # alternate, so neither waits on the other's. Slot t % 2's barrier says the other
            # half of dS^T is written.
            if (t % 2) == WG:
                mbarrier.wait(ds_bar.index(WG), (t // 2) & 1)
                dq_tok = warpgroup_mma(ds_all.permute((1, 0)), k_all.slice(0, DQ_W, dim=1), zero_dq, use_acc=False, is_async=True)
                dv, dk, dq = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dq_tok))
                if DQ_MODE == 11:  # dQ_i into shared memory, added into DQ by TMA reductions
                    if HEAD_DIM > DQ_W:
                        dq_tok = warpgroup_mma(ds_all.permute((1, 0)), k_all.slice(DQ_W, DQ_W, dim=1), zero_dq, use_acc=False, is_async=True)
                    # This warp group's reductions of its previous tile (t - 2) have read the buffer;
                    # the issuing threads wait, the barrier holds the others until they have.
                    tma.store_wait(0)
                    gl.thread_barrier()
                    dq_smem.index(WG * CHUNKS).reshape([M, DQ_W]).store(dq * scale)
                    if HEAD_DIM > DQ_W:
                        dq = warpgroup_mma_wait(0, deps=(dq_tok,))
                        dq_smem.index(WG * CHUNKS + 1).reshape([M, DQ_W]).store(dq * scale)
                    fence_async_shared()
                    gl.thread_barrier()  # every thread's part of dQ_i written before the reductions read it
                    for c in gl.static_range(CHUNKS):
                        _tma_reduce_add(dq_desc, [b, h, row0, c * DQ_W], dq_smem.index(WG * CHUNKS + c))
                else:  # by atomics
                    if DQ_MODE == 10:  # a tile-padded DQ: one base pointer + loop-invariant int32 offsets, no masks
                        dq_ptr = DQ + (b.to(gl.int64) * stride_dqb + h.to(gl.int64) * stride_dqh + row0.to(gl.int64) * HEAD_DIM) + offs_dq
                        rows_ok = None
                    else:
                        rows = row0 + rows_dq
                        dq_ptr = DQ + b.to(gl.int64) * stride_dqb + h.to(gl.int64) * stride_dqh + rows[:, None] * stride_dqn + cols_dq[None, :]
                        rows_ok = rows[:, None] < seq_q
                    if HEAD_DIM > DQ_W:
                        dq_tok = warpgroup_mma(ds_all.permute((1, 0)), k_all.slice(DQ_W, DQ_W, dim=1), zero_dq, use_acc=False, is_async=True)
                    gl.atomic_add(dq_ptr, dq * scale, mask=rows_ok, sem="relaxed")
                    if HEAD_DIM > DQ_W:
                        dq = warpgroup_mma_wait(0, deps=(dq_tok,))
                        gl.atomic_add(dq_ptr + DQ_W, dq * scale, mask=rows_ok, sem="relaxed")
            else:
                mbarrier.arrive(ds_bar.index(1 - WG), count=1)
                dv, dk = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok))
            # After the owner's last read of slot t % 2: the other warp group reuses it at tile
            # t + 2 only once the producer has refilled this Q/dO slot, which waits for this.
            mbarrier.arrive(empty.index(slot), count=1)
        else:
            dq_tok = warpgroup_mma(ds_tile.permute((1, 0)), k_tile.slice(0, DQ_W, dim=1), zero_dq, use_acc=False, is_async=True)
            dv, dk, dq = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dq_tok))
            mbarrier.arrive(empty.index(slot), count=1)  # Q_i and dO_i read (dQ_i reads dS^T and K)
            rows = row0 + rows_dq
            dq_ptr = DQ + b.to(gl.int64) * stride_dqb + h.to(gl.int64) * stride_dqh + rows[:, None] * stride_dqn + cols_dq[None, :]
            if HEAD_DIM > DQ_W:  # the second chunk runs while the first one's atomics go out
                dq_tok = warpgroup_mma(ds_tile.permute((1, 0)), k_tile.slice(DQ_W, DQ_W, dim=1), zero_dq, use_acc=False, is_async=True)
            if DQ_MODE == 1:  # ablation: plain stores where the atomics go
                gl.store(dq_ptr, dq * scale, mask=rows[:, None] < seq_q)
            else:
                gl.atomic_add(dq_ptr, dq * scale, mask=rows[:, None] < seq_q, sem="relaxed")
            if HEAD_DIM > DQ_W:
                dq = warpgroup_mma_wait(0, deps=(dq_tok,))
                if DQ_MODE == 1:
                    gl.store(dq_ptr + DQ_W, dq * scale, mask=rows[:, None] < seq_q)
                else:
                    gl.atomic_add(dq_ptr + DQ_W, dq * scale, mask=rows[:, None] < seq_q, sem="relaxed")
        i += 1
        if i == n_q_tiles:
            i = 0
            h += 1

    if DQ_MODE == 11:
        tma.store_wait(0)  # the last reductions read shared memory the program is about to give up
    keys = key0 + gl.arange(0, N, layout=gl.SliceLayout(1, acc_layout))
    offsets = b.to(gl.int64) * stride_kb + kv_h.to(gl.int64) * stride_kh + keys[:, None] * stride_kn + cols_acc[None, :]
    gl.store(DK + offsets, (dk * scale).to(DK.dtype.element_ty), mask=keys[:, None] < seq_k)
    gl.store(DV + offsets, dv.to(DV.dtype.element_ty), mask=keys[:, None] < seq_k)


@gluon.jit
def _bwd_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, lse_desc, delta_desc, LSE, DELTA, DQ, DK, DV, scale, qk_scale, seq_q, seq_k, H, group,
                stride_dqb, stride_dqh, stride_dqn, stride_kb, stride_kh, stride_kn,
                HEAD_DIM: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, num_warps: gl.constexpr,
                DQ_MODE: gl.constexpr = 0, STATS_BY_TMA: gl.constexpr = False):
    BLOCK_N: gl.constexpr = 128
    M: gl.constexpr = 64
    start_n = gl.program_id(0) * BLOCK_N
    bkv = gl.program_id(1)
    kv_heads = H // group
    b = bkv // kv_heads
    kv_h = bkv % kv_heads
    first_tile = 0
    if CAUSAL:  # query rows before the first key see none of this program's keys
        first_tile = start_n // M
    n_q_tiles = gl.cdiv(seq_q, M) - first_tile

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, 1, 1, M, HEAD_DIM], q_desc.layout)
    do_smem = gl.allocate_shared_memory(do_desc.dtype, [STAGES, 1, 1, M, HEAD_DIM], do_desc.layout)
    # K and V of the program's 128 keys, each warp group's 64 a slice (TMA boxes of 64 rows)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_N, M], q_desc.dtype)
    ds_smem = gl.allocate_shared_memory(q_desc.dtype, [2, BLOCK_N, M], ds_layout)
    ds_bar = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(2):
        mbarrier.init(ds_bar.index(s), count=1)
    # Mode 11: each warp group's dQ_i (fp32, in 64-column chunks) for the TMA reductions
    dq_chunks: gl.constexpr = 2 * (HEAD_DIM // dq_desc.block_type.shape[3]) if DQ_MODE == 11 else 1
    dq_smem = gl.allocate_shared_memory(gl.float32, [dq_chunks] + dq_desc.block_type.shape, dq_desc.layout)
    # STATS_BY_TMA: each slot's LSE and delta rows, loaded by the producer with Q_i and dO_i
    lse_smem = gl.allocate_shared_memory(gl.float32, [STAGES] + lse_desc.block_type.shape, lse_desc.layout)
    delta_smem = gl.allocate_shared_memory(gl.float32, [STAGES] + delta_desc.block_type.shape, delta_desc.layout)
    kv_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(kv_bar, count=1)
    ready, empty = ring_barriers(STAGES)
    fence_async_shared()

    # Argument tuples inline (bound to a name first, their constexprs would arrive as tensors).
    gl.warp_specialize([
        (_consumer, (q_smem, k_smem, v_smem, do_smem, ds_smem, ds_bar, dq_desc, dq_smem, lse_smem, delta_smem, kv_bar, ready, empty,
                     LSE, DELTA, DQ, DK, DV, scale, qk_scale,
                     seq_q, seq_k, b, kv_h, H, group, start_n, first_tile, n_q_tiles, stride_dqb, stride_dqh, stride_dqn,
                     stride_kb, stride_kh, stride_kn, 0, HEAD_DIM, STAGES, CAUSAL, DQ_MODE, STATS_BY_TMA)),
        (_consumer, (q_smem, k_smem, v_smem, do_smem, ds_smem, ds_bar, dq_desc, dq_smem, lse_smem, delta_smem, kv_bar, ready, empty,
                     LSE, DELTA, DQ, DK, DV, scale, qk_scale,
                     seq_q, seq_k, b, kv_h, H, group, start_n, first_tile, n_q_tiles, stride_dqb, stride_dqh, stride_dqn,
                     stride_kb, stride_kh, stride_kn, 1, HEAD_DIM, STAGES, CAUSAL, DQ_MODE, STATS_BY_TMA)),
        (_producer, (q_desc, k_desc, v_desc, do_desc, lse_desc, delta_desc, q_smem, k_smem, v_smem, do_smem, lse_smem,
                     delta_smem, kv_bar, ready, empty, b, kv_h, H, group, start_n, first_tile, n_q_tiles, seq_q, STAGES,
                     STATS_BY_TMA)),
    ], [4, 1], [240, 24])


def row_delta(o, do, lse, by: str = "torch"):
    """delta = rowsum(dO * O) in fp32, (B, H, S) like lse: by torch, or by flash_triton's preprocess kernel."""
    if by == "torch":
        return (do.float() * o.float()).sum(-1).contiguous()
    from lmperf.attention import flash_triton

    return flash_triton.row_delta(o, do)


def _dq_descriptor(dq: torch.Tensor):
    """fp32 dQ (B, H, S, d) as TMA boxes of 64 rows x 64 columns (mode 11's reductions)."""
    return _descriptor(dq, ROWS, min(64, dq.shape[-1]))


def _row_descriptor(x: torch.Tensor):
    """fp32 (B, H, S) row statistics (LSE, delta) as one flat row of B*H*S, TMA boxes of 64 (a
    (B, H, S) descriptor would need S*4 bytes 16-aligned, which ragged lengths are not)."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    return TensorDescriptor.from_tensor(x.reshape(-1), [ROWS], gl.NVMMASharedLayout.get_default_for([ROWS], gl.float32))


def gluon_backward(q, k, v, o, lse, do, is_causal, dq_mode=0, delta_by="torch", stats_by_tma=False):
    """dQ, dK, dV for (B, H, S, d) inputs, d 64 or 128 (K/V (B, H_kv, S, d)), LSE (B, H, S) natural log as
    flash_triton's forward leaves it. delta = rowsum(dO O) by torch ("torch": every row up to
    6f032bc; 0.47 ms at d64 causal 16k under ncu) or by flash_triton's preprocess kernel
    ("triton", 0.05 ms there, as flash_triton's own backwards)."""
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    assert head_dim in (64, 128) and q.dtype in (torch.bfloat16, torch.float16), "trial: head_dim 64/128, bf16/fp16"
    do = do.contiguous()
    delta = row_delta(o, do, lse, delta_by)
    # fp32 dQ; in mode 10 padded to whole 64-row tiles, so a tile's rows are one unmasked block
    padded = triton.cdiv(seq_q, ROWS) * ROWS if dq_mode == 10 else seq_q
    dq = torch.zeros(batch, heads, padded, head_dim, dtype=torch.float32, device=q.device)
    dk, dv = torch.empty(k.shape, dtype=q.dtype, device=q.device), torch.empty(v.shape, dtype=q.dtype, device=q.device)
    scale = 1 / math.sqrt(head_dim)
    lse = lse.contiguous()
    _bwd_kernel[(triton.cdiv(seq_k, 128), batch * kv_heads)](
        _descriptor(q, ROWS), _descriptor(k, KEYS), _descriptor(v, KEYS), _descriptor(do, ROWS), _dq_descriptor(dq),
        _row_descriptor(lse), _row_descriptor(delta), lse, delta,
        dq, dk, dv, scale, scale * LOG2E, seq_q, seq_k, heads, heads // kv_heads,
        dq.stride(0), dq.stride(1), dq.stride(2), dk.stride(0), dk.stride(1), dk.stride(2),
        HEAD_DIM=head_dim, STAGES=STAGES, CAUSAL=is_causal, num_warps=4, DQ_MODE=dq_mode, STATS_BY_TMA=stats_by_tma,
    )
    return dq[:, :, :seq_q].to(q.dtype), dk, dv


class GluonBackwardAttention(torch.autograd.Function):
    """flash_triton's forward (Gluon on an H100 where it runs) with this trial's backward."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal=False, dq_mode=0, delta_by="torch", stats_by_tma=False):
        from lmperf.attention.flash_triton import triton_forward

        o, lse = triton_forward(q, k, v, is_causal)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.options = dict(dq_mode=dq_mode, delta_by=delta_by, stats_by_tma=stats_by_tma)
        ctx.is_causal = is_causal
        return o

    @staticmethod
    def backward(ctx, grad_out):
        q, k, v, o, lse = ctx.saved_tensors
        grads = gluon_backward(q, k, v, o, lse, grad_out, ctx.is_causal, **ctx.options)
        return (*grads, None, None, None, None)


def compile_sm90(causal: bool, head_dim: int = 64, dq_mode: int = 0, stats_by_tma: bool = False):
    """Compile for an H100 without a GPU."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    layout = gl.NVMMASharedLayout.get_default_for([1, 1, 64, head_dim], gl.bfloat16)
    descriptor = f"tensordesc<bf16[1, 1, 64, {head_dim}],{layout!r}>"
    dq_block = [1, 1, 64, min(64, head_dim)]
    dq_layout = gl.NVMMASharedLayout.get_default_for(dq_block, gl.float32)
    signature = {
        **{name: descriptor for name in ("q_desc", "k_desc", "v_desc", "do_desc")},
        "dq_desc": f"tensordesc<fp32{dq_block},{dq_layout!r}>",
        **{name: f"tensordesc<fp32[64],{gl.NVMMASharedLayout.get_default_for([64], gl.float32)!r}>"
           for name in ("lse_desc", "delta_desc")},
        "LSE": "*fp32", "DELTA": "*fp32", "DQ": "*fp32", "DK": "*bf16", "DV": "*bf16", "scale": "fp32", "qk_scale": "fp32",
        **{name: "i32" for name in ("seq_q", "seq_k", "H", "group", "stride_dqb", "stride_dqh", "stride_dqn",
                                    "stride_kb", "stride_kh", "stride_kn")},
        **{name: "constexpr" for name in ("HEAD_DIM", "STAGES", "CAUSAL", "num_warps", "DQ_MODE", "STATS_BY_TMA")},
    }
    constexprs = dict(HEAD_DIM=head_dim, STAGES=STAGES, CAUSAL=causal, num_warps=4, DQ_MODE=dq_mode,
                      STATS_BY_TMA=stats_by_tma)
    return triton.compile(GluonASTSource(_bwd_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                          options=dict(num_warps=4))


def _sm90_report() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/attention
    from gluon_sm90_report import warp_specialised_report

    print(f"triton {triton.__version__}: warp-specialised Gluon attention backward for sm90 (DQ_MODE: {DQ_MODES})")
    for mode, stats_by_tma in [(mode, False) for mode in sorted(DQ_MODES)] + [(11, True)]:
        for head_dim, causal in [(d, c) for d in (64, 128) for c in (False, True)]:
            report = warp_specialised_report(compile_sm90(causal, head_dim, mode, stats_by_tma))
            print(f"mode {mode}{' stats_by_tma' if stats_by_tma else ''} d{head_dim} {'causal' if causal else 'full'}: {report}")


DEVICE = "cuda"  # the harness's tensors; a dry run on the CPU swaps it and the kernels for stand-ins
RAGGED = [  # (head_dim, causal, seq_q, seq_k, heads, kv_heads): odd lengths, seq_q != seq_k both ways, GQA, MQA
    (64, True, 777, 1025, 8, 2), (64, False, 1025, 777, 4, 1), (64, True, 300, 300, 2, 2),
    (128, True, 1000, 1000, 4, 4), (128, False, 777, 1025, 8, 2), (128, True, 1025, 777, 4, 1),
]
FIRST_RUN_SHAPES = [  # check_and_time's ten (8a3b095)
    (64, False, 1000, 1000, 4, 4), (64, True, 1000, 1000, 4, 4), (64, True, 777, 1025, 8, 2), (64, False, 1025, 777, 4, 1),
    (64, True, 4096, 4096, 8, 2), (64, True, 300, 300, 2, 2), (64, True, 1025, 777, 4, 4),
    (128, True, 1000, 1000, 4, 4), (128, False, 777, 1025, 8, 2), (128, True, 1025, 777, 4, 1),
]
GRID = [(d, c, n) for d in (64, 128) for c in (False, True) for n in (4096, 16384)]


def _rows(out_path: str):
    """emit(row): one JSON line in out_path (flushed, with the environment) and on the console."""
    import json

    from lmperf.report.environment import environment

    env, out = environment(DEVICE), open(out_path, "w")

    def emit(row):
        out.write(json.dumps(row | {"env": env}) + "\n")
        out.flush()
        print(row, flush=True)

    return emit


def _float64_check(emit, shapes, variants: dict) -> None:
    """Largest relative error of dQ, dK, dV against float64 for each variant (name: kwargs of
    GluonBackwardAttention after is_causal) on each shape, bf16 inputs."""
    for d, causal, seq_q, seq_k, heads, kv_heads in shapes:
        gen = torch.Generator(device=DEVICE).manual_seed(d + seq_q + seq_k)
        q = torch.randn(2, heads, seq_q, d, device=DEVICE, generator=gen).bfloat16().requires_grad_()
        k, v = (torch.randn(2, kv_heads, seq_k, d, device=DEVICE, generator=gen).bfloat16().requires_grad_() for _ in range(2))
        do = torch.randn(2, heads, seq_q, d, device=DEVICE, generator=gen).bfloat16()
        group = heads // kv_heads
        qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
        scores = qd @ kd.repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(d)
        if causal:
            scores = scores.masked_fill(torch.ones(seq_q, seq_k, device=DEVICE, dtype=torch.bool).triu(1), float("-inf"))
        (torch.softmax(scores, -1) @ vd.repeat_interleave(group, 1)).backward(do.double())
        for name, kwargs in variants.items():
            q.grad = k.grad = v.grad = None
            GluonBackwardAttention.apply(q, k, v, causal, *kwargs.values()).backward(do)
            errors = {f"max_rel_error_{grad}": ((t.grad.double() - r.grad).abs().max() / r.grad.abs().max()).item()
                      for grad, t, r in (("dq", q, qd), ("dk", k, kd), ("dv", v, vd))}
            emit(dict(kind="check", variant=name, **kwargs, head_dim=d, causal=causal, seq_q=seq_q, seq_k=seq_k,
                      heads=heads, kv_heads=kv_heads, **errors))


def _interleaved(emit, peers: dict, work: dict, point: dict, grad_to_none=None) -> None:
    """do_bench median of each peer, AB_ROUNDS rounds (two unless set), every other one in reverse
    order; TFLOP/s from work[name]. Two rounds did not resolve a 1.5% change of the backward
    (backward-convert-d3cd296): more rounds and the summary's per-round median do."""
    from triton.testing import do_bench

    for round_ in range(int(os.environ.get("AB_ROUNDS", "2"))):
        for name in list(peers) if round_ % 2 == 0 else list(peers)[::-1]:
            ms = do_bench(peers[name], warmup=25, rep=100, grad_to_none=grad_to_none)
            emit(dict(kind="time", peer=name, **point, round=round_, ms=ms, tflops=work[name] / ms / 1e9))


def _cudnn(q, k, v, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def _time_grid(emit, tokens: int, backwards, fwd_bwd) -> None:
    """On every GRID point (bf16, `tokens` per batch, heads x d = 2048): the peers that
    backwards(q, k, v, o, lse, do, causal) and fwd_bwd(q, k, v, do, causal) return, interleaved;
    a backward counts 2.5x the forward's FLOPs, forward + backward 3.5x."""
    from lmperf.attention.flash_triton import triton_forward

    for d, causal, seq in GRID:
        heads = 2048 // d
        q, k, v = (torch.randn(tokens // seq, heads, seq, d, device=DEVICE).bfloat16().requires_grad_() for _ in range(3))
        do = torch.randn_like(q)
        o, lse = triton_forward(q.detach(), k.detach(), v.detach(), causal)
        bwd, both = backwards(q, k, v, o, lse, do, causal), fwd_bwd(q, k, v, do, causal)
        flops = 4 * q.shape[0] * heads * seq * seq * d / (2 if causal else 1)
        work = {name: flops * (2.5 if name in bwd else 3.5) for name in {**bwd, **both}}
        _interleaved(emit, {**bwd, **both}, work, dict(head_dim=d, causal=causal, seq=seq), grad_to_none=(q, k, v))


def check_and_time(out_path: str, tokens: int = 16384) -> None:
    """The first run (8a3b095, mode 0): float64 check on ten shapes; then backward-only ms of this
    trial, flash_triton's atomic and split backwards on the same saved tensors, and forward +
    backward beside FlashAttention2Triton's default and SDPA cuDNN's, interleaved (bf16, `tokens`
    per batch, heads x d = 2048)."""
    from lmperf.attention.flash_triton import FlashAttention2Triton, triton_backward

    emit = _rows(out_path)
    _float64_check(emit, FIRST_RUN_SHAPES, {"gluon-bwd": dict(dq_mode=0)})
    _time_grid(emit, tokens, lambda q, k, v, o, lse, do, causal: {
        "gluon-bwd": lambda: gluon_backward(q, k, v, o, lse, do, causal),
        "triton-atomic-bwd": lambda: triton_backward(q, k, v, o, lse, do, causal, "atomic"),
        "triton-split-bwd": lambda: triton_backward(q, k, v, o, lse, do, causal, "split"),
    }, lambda q, k, v, do, causal: {
        "gluon+bwd": lambda: GluonBackwardAttention.apply(q, k, v, causal).backward(do),
        "flash_triton+bwd": lambda: FlashAttention2Triton.apply(q, k, v, causal).backward(do),
        "sdpa-cudnn+bwd": lambda: _cudnn(q, k, v, causal).backward(do),
    })


DQ_MODES = {0: "gluon-bwd", 1: "no-atomics", 2: "no-dq", 3: "shared-dq", 10: "shared-dq-offsets", 11: "shared-dq-tma"}
TIMED_MODES = (2, 3, 10)


def ablate(out_path: str, tokens: int = 16384) -> None:
    """The modes side by side: float64 check of modes 3 and 10 on RAGGED (0, 4, 5, 6, 8 at earlier
    commits), then backward-only ms of TIMED_MODES beside flash_triton's atomic
    backward, interleaved. Modes 1 (plain stores for the atomics) and 2 (no dQ) give wrong dQ
    on purpose: they say what the atomics and the dQ product cost."""
    from lmperf.attention.flash_triton import triton_backward, triton_forward

    emit = _rows(out_path)
    _float64_check(emit, RAGGED, {DQ_MODES[mode]: dict(dq_mode=mode) for mode in (3, 10)})
    for d, causal, seq in [(64, False, 4096), (64, True, 16384), (128, False, 4096), (128, True, 16384)]:
        heads = 2048 // d
        q, k, v = (torch.randn(tokens // seq, heads, seq, d, device=DEVICE).bfloat16() for _ in range(3))
        do = torch.randn_like(q)
        o, lse = triton_forward(q, k, v, causal)
        peers = {DQ_MODES[mode]: (lambda m=mode: gluon_backward(q, k, v, o, lse, do, causal, m)) for mode in TIMED_MODES}
        peers["triton-atomic-bwd"] = lambda: triton_backward(q, k, v, o, lse, do, causal, "atomic")
        work = dict.fromkeys(peers, 2.5 * 4 * q.shape[0] * heads * seq * seq * d / (2 if causal else 1))
        _interleaved(emit, peers, work, dict(head_dim=d, causal=causal, seq=seq))


def next_step(out_path: str, tokens: int = 16384) -> None:
    """Prepared after 6f032bc, for the next device call: modes 3, 10 and 11 with delta from
    flash_triton's preprocess kernel, 11 also with LSE and delta loaded by the producer's TMA
    (stats_by_tma; dropped after its first run at 43fc11f: an illegal instruction on RAGGED's first
    shape, rows in gluon-backward-next-h100-43fc11f/). Float64 check on RAGGED; then on the whole grid, backward-only (mode 3 with
    either delta, modes 10 and 11, flash_triton's atomic and split backwards) and forward +
    backward (flash_triton's forward with modes 3 and 11 + Triton delta; FlashAttention2Triton's
    default; SDPA cuDNN), interleaved."""
    from lmperf.attention.flash_triton import FlashAttention2Triton, triton_backward

    emit = _rows(out_path)
    _float64_check(emit, RAGGED, {"shared-dq+triton-delta": dict(dq_mode=3, delta_by="triton"),
                                  "shared-dq-offsets+triton-delta": dict(dq_mode=10, delta_by="triton"),
                                  "shared-dq-tma+triton-delta": dict(dq_mode=11, delta_by="triton")})
    _time_grid(emit, tokens, lambda q, k, v, o, lse, do, causal: {
        "shared-dq": lambda: gluon_backward(q, k, v, o, lse, do, causal, 3),
        "shared-dq+triton-delta": lambda: gluon_backward(q, k, v, o, lse, do, causal, 3, delta_by="triton"),
        "shared-dq-offsets+triton-delta": lambda: gluon_backward(q, k, v, o, lse, do, causal, 10, delta_by="triton"),
        "shared-dq-tma+triton-delta": lambda: gluon_backward(q, k, v, o, lse, do, causal, 11, delta_by="triton"),
        "triton-atomic-bwd": lambda: triton_backward(q, k, v, o, lse, do, causal, "atomic"),
        "triton-split-bwd": lambda: triton_backward(q, k, v, o, lse, do, causal, "split"),
    }, lambda q, k, v, do, causal: {
        "shared-dq+triton-delta+fwd": lambda: GluonBackwardAttention.apply(q, k, v, causal, 3, "triton").backward(do),
        "shared-dq-tma+triton-delta+fwd": lambda: GluonBackwardAttention.apply(q, k, v, causal, 11, "triton").backward(do),
        "flash_triton+bwd": lambda: FlashAttention2Triton.apply(q, k, v, causal).backward(do),
        "sdpa-cudnn+bwd": lambda: _cudnn(q, k, v, causal).backward(do),
    })


def profile_workload() -> None:
    """Under Nsight Compute (stall_profile.sh with STALL_WORKLOAD="benchmarks/attention/trials/
    gluon_backward.py gpu-profile"): one launch each, inside NVTX ranges named `prof`, of
    flash_triton's atomic backward and this trial's modes 2 (no dQ) and 3 (shared dQ_i), at d64
    and d128 causal 16k (bf16, heads x d = 2048), after two unprofiled launches (compilation,
    autotuning)."""
    from lmperf.attention.flash_triton import triton_backward, triton_forward

    for d in (64, 128):
        q, k, v = (torch.randn(1, 2048 // d, 16384, d, device=DEVICE).bfloat16() for _ in range(3))
        do = torch.randn_like(q)
        o, lse = triton_forward(q, k, v, True)
        cases = {"triton-atomic-bwd": lambda: triton_backward(q, k, v, o, lse, do, True, "atomic"),
                 "no-dq": lambda: gluon_backward(q, k, v, o, lse, do, True, 2),
                 "shared-dq": lambda: gluon_backward(q, k, v, o, lse, do, True, 3)}
        for name, case in cases.items():
            case(), case()
            torch.cuda.synchronize()
            print(f"case d={d} causal=True seq=16384 {name}", flush=True)
            torch.cuda.nvtx.range_push("prof")
            case()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["gpu-profile"]:
        profile_workload()
    elif sys.argv[1:2] == ["gpu-next"]:  # python gluon_backward.py gpu-next OUT.jsonl (on the H100)
        next_step(sys.argv[2])
    elif sys.argv[1:2] == ["gpu-ablate"]:  # python gluon_backward.py gpu-ablate OUT.jsonl (on the H100)
        ablate(sys.argv[2])
    elif sys.argv[1:2] == ["gpu"]:  # python gluon_backward.py gpu OUT.jsonl (on the H100)
        check_and_time(sys.argv[2])
    else:
        _sm90_report()
