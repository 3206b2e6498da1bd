"""The attention backward on Hopper in Gluon: dK, dV and dQ in one warp-specialised kernel.

The portable backwards wait on each tl.dot as it is issued; this kernel issues its wgmmas
asynchronously and waits only where a result is read, and adds dQ as FlashAttention-3 does:
each query tile's dQ_i goes through shared memory into an fp32 dQ by TMA bulk reductions
(`cp.reduce.async.bulk.tensor`, which Gluon's op builder has but its `tma` module does not
wrap: `_tma_reduce_add`). The order of those additions varies from run to run, so this is an
"atomic" backward: dispatch runs it only where nondeterminism is allowed.

A work item is 128 keys of one batch x key/value head. The producer warp loads an item's K and
V once and streams each query tile's Q_i and dO_i (64 rows; under GQA every query head of the
group in turn) through a ring of slots by TMA, and the tile's LSE and delta rows by cp.async.
Two consumer warp groups own 64 keys each (their dK and dV stay in registers); per tile a
consumer
  1. issues S^T = K Q_i^T and dP^T = V dO_i^T together, waits for S^T only;
  2. P^T = exp2(S^T scale log2e - LSE_i log2e), masked (causal, ragged) in the tiles where a key
     can be hidden; issues dV += P^T dO_i;
  3. waits for dP^T: dS^T = P^T (dP^T - delta_i), stored to shared memory; issues dK += dS^T Q_i;
  4. with one dQ chunk (head_dim 64, 80) the warp group owning tile t (t % 2, so the owners
     alternate) computes dQ_i = dS K over all 128 keys one tile late, during tile t + 1 (by then
     the other's half of dS^T is written; an mbarrier says so), writes scale x dQ_i to shared
     memory and issues its TMA reduction; the other warp group goes straight on. At 128, where
     one warp group cannot hold a 64 x 128 fp32 dQ_i beside dK and dV, both wait for each other
     and each makes DQ_COLUMNS of dQ_i's columns.
delta = rowsum(dO O) comes from the portable preprocess kernel; dK and dV leave at the end by
TMA stores, staged in the Q/dO slots.

PERSISTENT (sm90.tuning.persistent_backward_from_keys): one program per SM takes the items from
an atomic counter, so that the items in flight stay a window of consecutive ones. The producer
loads the next item's K and V into a second buffer and its first Q/dO tiles into the ring while
the consumers finish the current one, and dK/dV are staged apart; every step-indexed slot and
barrier counts steps across items. After the items the same counter hands out chunks of dQ's
conversion from its fp32 sums into the output dtype (`_convert_dq`): each waits until every item
of its batch x key/value head has signalled that its reductions have landed, so the SMs without
an item left convert the heads already done while the last items run.

Inputs as dispatch.gluon_fits accepts them (dO is copied where TMA cannot address it, e.g. the
expanded gradient of `.sum()`).
"""

from __future__ import annotations

import math

import torch
import triton
from triton._C.libtriton import ir
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language import _core as gl_core
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait,
)

from lmperf.attention.launch import CachedLaunch
from lmperf.attention.sm90 import schedule
from lmperf.attention.sm90.descriptors import block_descriptors
from lmperf.attention.sm90.forward import LOG2E
from lmperf.attention.sm90.pipeline import ring_barriers, specialise
from lmperf.attention.sm90.tma import aligned, column_blocks
from lmperf.attention.sm90.tuning import BACKWARD_KEYS, DQ_COLUMNS, ROWS, Tuning, current

@gl_core.builtin
def _tma_reduce_add(tensor_desc, coord, src, _semantic=None):
    """TMA bulk reduction: add shared-memory tile `src` into the tensor at `coord` (one thread
    issues it; asynchronous, a bulk group that tma.store_wait retires)."""
    coord = _semantic._convert_to_ir_values(coord, require_i64=False)
    _semantic.builder.create_async_tma_reduce(ir.DESCRIPTOR_REDUCE_KIND.ADD, tensor_desc.handle, coord, src.handle)


@gluon.jit
def _item_coordinates(item, n_kblocks, kv_heads, seq_q, M: gl.constexpr, CAUSAL: gl.constexpr):
    """Work item `item`: key block item % n_kblocks (128 keys) of batch x key/value head
    item // n_kblocks (the order of the grid of a program per item); its batch, head, first key, first
    query tile and query tiles (<= 0 past the last query row: dK = dV = 0)."""
    start_n = (item % n_kblocks) * 128
    bkv = item // n_kblocks
    first_tile = 0
    if CAUSAL:  # query rows before the first key see none of the item's keys
        first_tile = start_n // M
    return bkv // kv_heads, bkv % kv_heads, start_n, first_tile, gl.cdiv(seq_q, M) - first_tile


@gluon.jit
def _producer(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem, v_smem, do_smem,
              qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar, kv_empty, item_smem, ready, empty, LSE,
              DELTA, counter, seq_q, H, group, n_kblocks, items, end, STAGES: gl.constexpr, SPLIT: gl.constexpr,
              CAUSAL: gl.constexpr, KV_BUFS: gl.constexpr, PERSISTENT: gl.constexpr):
    t = 0  # steps (query tiles) loaded so far: the ring's running count, across items
    c = 0  # items (and conversion chunks) so far
    if PERSISTENT:  # items from the counter while any are left
        item = gl.atomic_add(counter, 1)
        while item < items:
            t = _produce_item(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem,
                              v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar,
                              kv_empty, item_smem, ready, empty, LSE, DELTA, seq_q, H, group, n_kblocks, item, c, t,
                              STAGES, SPLIT, CAUSAL, KV_BUFS, PERSISTENT)
            c += 1
            item = gl.atomic_add(counter, 1)
        # Numbers from items to end are dQ conversion chunks (`_convert_dq`): the number only, in
        # the buffer's turn, no K or V. Then end: the consumers read it and stop.
        while item < end:
            _hand_over(kv_bar, kv_empty, item_smem, item, c, KV_BUFS)
            c += 1
            item = gl.atomic_add(counter, 1)
        _hand_over(kv_bar, kv_empty, item_smem, end, c, KV_BUFS)
    else:  # the program's own item (the grid has one program per item)
        for item in range(gl.program_id(0), items, gl.num_programs(0)):
            t = _produce_item(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem,
                              v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar,
                              kv_empty, item_smem, ready, empty, LSE, DELTA, seq_q, H, group, n_kblocks, item, c, t,
                              STAGES, SPLIT, CAUSAL, KV_BUFS, PERSISTENT)
            c += 1


@gluon.jit
def _produce_item(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem, v_smem, do_smem,
                  qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar, kv_empty, item_smem, ready, empty,
                  LSE, DELTA, seq_q, H, group, n_kblocks, item, c, t, STAGES: gl.constexpr, SPLIT: gl.constexpr,
                  CAUSAL: gl.constexpr, KV_BUFS: gl.constexpr, PERSISTENT: gl.constexpr):
    """Item `item`, the program's c-th: its K and V into their buffer, then its steps' Q/dO tiles
    through the ring from running step count t; returns the count after them."""
    M: gl.constexpr = q_desc.block_type.shape[2]  # query rows per tile
    _load_kv(k_desc, v_desc, kt_desc, vt_desc, k_smem, v_smem, kt_smem, vt_smem, kv_bar, kv_empty, item_smem,
             item, c, n_kblocks, H // group, seq_q, M, SPLIT, CAUSAL, KV_BUFS, PERSISTENT)
    b, kv_h, start_n, first_tile, n_q_tiles = _item_coordinates(item, n_kblocks, H // group, seq_q, M, CAUSAL)
    return _produce_steps(q_desc, do_desc, qt_desc, dot_desc, q_smem, do_smem, qt_smem, dot_smem, lse_smem, delta_smem,
                          ready, empty, LSE, DELTA, seq_q, H, b, kv_h, group, first_tile, n_q_tiles, t, STAGES, SPLIT)


@gluon.jit
def _hand_over(kv_bar, kv_empty, item_smem, item, c, KV_BUFS: gl.constexpr):
    """Work number `item` without K or V (a conversion chunk, or the end), the program's c-th, to
    the consumers through K/V buffer c % KV_BUFS's slot, once they are done with its last item."""
    buf = _free_buffer(kv_empty, c, KV_BUFS)
    _publish_item(item_smem.index(buf), item)
    mbarrier.arrive(kv_bar.index(buf), count=1)


@gluon.jit
def _free_buffer(kv_empty, c, KV_BUFS: gl.constexpr):
    """The K/V buffer of the program's c-th item (or number), c % KV_BUFS, once both consumers are
    done with item c - KV_BUFS, which held it."""
    buf = c % KV_BUFS
    if c >= KV_BUFS:
        mbarrier.wait(kv_empty.index(buf), (c // KV_BUFS - 1) & 1)
    return buf


@gluon.jit
def _publish_item(slot, item):
    """The producer (one warp) writes work item `item` into a one-element shared slot."""
    slot.store(gl.full([1], item, gl.int32, layout=gl.BlockedLayout([1], [32], [1], [0])))


@gluon.jit
def _read_item(slot):
    """A consumer warp group reads the work item the producer published."""
    return gl.max(slot.load(gl.BlockedLayout([1], [32], [4], [0])), 0)


@gluon.jit
def _load_kv(k_desc, v_desc, kt_desc, vt_desc, k_smem, v_smem, kt_smem, vt_smem, kv_bar, kv_empty, item_smem, item, c,
             n_kblocks, kv_heads, seq_q, M: gl.constexpr, SPLIT: gl.constexpr, CAUSAL: gl.constexpr,
             KV_BUFS: gl.constexpr, PERSISTENT: gl.constexpr):
    """Item `item`'s K and V (the program's c-th item) into buffer c % KV_BUFS, once the consumers
    are done with the item that held it; PERSISTENT, the item's number first, for the consumers
    (kv_bar's arrival releases it to them)."""
    rows: gl.constexpr = k_desc.block_type.shape[2]
    b, kv_h, start_n, first_tile, n_q_tiles = _item_coordinates(item, n_kblocks, kv_heads, seq_q, M, CAUSAL)
    buf = _free_buffer(kv_empty, c, KV_BUFS)
    if PERSISTENT:
        _publish_item(item_smem.index(buf), item)
    bar = kv_bar.index(buf)
    if SPLIT:  # the last TAIL columns of every operand through their own descriptors and slots
        mbarrier.expect(bar, 4 * (k_desc.block_type.nbytes + kt_desc.block_type.nbytes))
    else:
        mbarrier.expect(bar, 4 * k_desc.block_type.nbytes)
    for w in gl.static_range(2):
        tma.async_copy_global_to_shared(k_desc, [b, kv_h, start_n + w * rows, 0], bar,
                                        k_smem.index(buf).slice(w * rows, rows, dim=2))
        tma.async_copy_global_to_shared(v_desc, [b, kv_h, start_n + w * rows, 0], bar,
                                        v_smem.index(buf).slice(w * rows, rows, dim=2))
        if SPLIT:
            tma.async_copy_global_to_shared(kt_desc, [b, kv_h, start_n + w * rows, 0], bar,
                                            kt_smem.index(buf).slice(w * rows, rows, dim=2))
            tma.async_copy_global_to_shared(vt_desc, [b, kv_h, start_n + w * rows, 0], bar,
                                            vt_smem.index(buf).slice(w * rows, rows, dim=2))


@gluon.jit
def _produce_steps(q_desc, do_desc, qt_desc, dot_desc, q_smem, do_smem, qt_smem, dot_smem, lse_smem, delta_smem,
                   ready, empty, LSE, DELTA, seq_q, H, b, kv_h, group, first_tile, n_q_tiles, t0,
                   STAGES: gl.constexpr, SPLIT: gl.constexpr):
    """Stream one item's Q_i, dO_i, LSE and delta rows through the ring, from the ring's running
    count t0; returns the count after them."""
    M: gl.constexpr = q_desc.block_type.shape[2]
    t = t0
    h = kv_h * group  # the query head and tile of step t, counted on rather than divided out each step
    i = 0
    for s in range(group * n_q_tiles):
        slot = t % STAGES
        if t >= STAGES:  # both consumers are done with step t - STAGES, which held this slot
            mbarrier.wait(empty.index(slot), (t // STAGES - 1) & 1)
        row = (first_tile + i) * M
        bar = ready.index(slot)
        # The tile's LSE and delta rows by cp.async into the slot: loaded by the consumers
        # themselves, their latency stands exposed at the first use of LSE. Rows past seq_q read
        # as 0, which leaves their P^T at 1 and dS^T at 0: their Q and dO rows are zero-filled,
        # so they add nothing.
        # The arrival counts itself in (increment), so the slot is ready once the copies and the
        # TMA bytes have both landed.
        tile_rows = gl.arange(0, M, layout=gl.BlockedLayout([M // 32], [32], [1], [0]))
        start = (b * H + h).to(gl.int64) * seq_q + row
        async_copy.async_copy_global_to_shared(lse_smem.index(slot), LSE + start + tile_rows, mask=tile_rows < seq_q - row)
        async_copy.async_copy_global_to_shared(delta_smem.index(slot), DELTA + start + tile_rows, mask=tile_rows < seq_q - row)
        async_copy.mbarrier_arrive(bar)
        if SPLIT:
            mbarrier.expect(bar, 2 * (q_desc.block_type.nbytes + qt_desc.block_type.nbytes))
        else:
            mbarrier.expect(bar, 2 * q_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(q_desc, [b, h, row, 0], bar, q_smem.index(slot))
        tma.async_copy_global_to_shared(do_desc, [b, h, row, 0], bar, do_smem.index(slot))
        if SPLIT:
            tma.async_copy_global_to_shared(qt_desc, [b, h, row, 0], bar, qt_smem.index(slot))
            tma.async_copy_global_to_shared(dot_desc, [b, h, row, 0], bar, dot_smem.index(slot))
        t += 1
        i += 1
        if i == n_q_tiles:
            i = 0
            h += 1
    return t


@gluon.jit
def _hide_keys(pt, offs_k, offs_q, seq_k, CAUSAL: gl.constexpr):
    """P^T with zeros for the keys a query must not see: past seq_k (TMA zero-fills K there, and
    exp2(0 - LSE) is not 0) and, causal, later than the query."""
    visible = offs_k[:, None] < seq_k
    if CAUSAL:
        visible = visible & (offs_k[:, None] <= offs_q[None, :])
    return gl.where(visible, pt, 0.0)


@gluon.jit
def _issue_dq(ds_smem, tile, k_all, kt_all, k_transposed, zero_dq, zero_dqt, SPLIT: gl.constexpr,
              TRANSPOSED: gl.constexpr):
    """Issue tile `tile`'s dQ_i = dS K over both warp groups' keys (head_dim 64, 80: one owner per
    tile), from the dS^T slot it was written to; with SPLIT also the tail columns' product. The
    tokens are (dQ_i, its tail), the first twice without SPLIT. TRANSPOSED: dQ_i^T = K^T dS^T
    instead, K^T in registers (`k_transposed`; `_consume_item`)."""
    if TRANSPOSED:
        dq_tok = warpgroup_mma(k_transposed, ds_smem.index(tile % ds_smem.shape[0]), zero_dq, use_acc=False,
                               is_async=True)
    else:
        dq_tok = warpgroup_mma(ds_smem.index(tile % ds_smem.shape[0]).permute((1, 0)), k_all, zero_dq, use_acc=False,
                               is_async=True)
    dqt_tok = dq_tok
    if SPLIT:
        dqt_tok = warpgroup_mma(ds_smem.index(tile % ds_smem.shape[0]).permute((1, 0)), kt_all, zero_dqt, use_acc=False,
                                is_async=True)
    return dq_tok, dqt_tok


@gluon.jit
def _reduce_dq(dq, dqt, dq_desc, dq_smem, dqt_desc, dqt_smem, b, h, row0, WG: gl.constexpr, SPLIT: gl.constexpr,
               TRANSPOSED: gl.constexpr = False):
    """Add one warp group's dQ_i (scaled; with SPLIT its tail columns dqt) into the fp32 dQ at
    query rows row0.. of (b, h): through the warp group's own buffer, by TMA reductions (rows
    past seq_q fall outside the tensor: TMA drops them)."""
    # This warp group's previous reduction (two tiles ago) has read the buffer: the issuing
    # thread waits, the barrier holds the others until it has.
    tma.store_wait(0)
    gl.thread_barrier()
    if TRANSPOSED:  # dq holds dQ_i^T (head_dim x query rows)
        dq_smem.index(WG).reshape([dq.shape[1], dq.shape[0]]).permute((1, 0)).store(dq)
    else:
        dq_smem.index(WG).reshape([dq.shape[0], dq.shape[1]]).store(dq)
    if SPLIT:
        dqt_smem.index(WG).reshape([dqt.shape[0], dqt.shape[1]]).store(dqt)
    fence_async_shared()
    gl.thread_barrier()  # every thread's part of dQ_i written before the reduction reads it
    _tma_reduce_add(dq_desc, [b, h, row0, 0], dq_smem.index(WG))
    if SPLIT:
        _tma_reduce_add(dqt_desc, [b, h, row0, 0], dqt_smem.index(WG))


@gluon.jit
def _bulk_writes_done(KEEP: gl.constexpr):
    """Wait until this thread's bulk groups but the KEEP newest have completed, their global
    writes performed (tma.store_wait waits only until they have read shared memory), and order
    those writes before the generic proxy's later accesses: the count `_signal_head` adds, other
    programs' loads once they have seen it."""
    if KEEP == 0:
        gl.inline_asm_elementwise("cp.async.bulk.wait_group 0;\nfence.proxy.async.global;\nmov.u32 $0, 0;", "=r", [],
                                  dtype=gl.int32, is_pure=False, pack=1)
    else:
        gl.inline_asm_elementwise("cp.async.bulk.wait_group 1;\nfence.proxy.async.global;\nmov.u32 $0, 0;", "=r", [],
                                  dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _signal_head(counter, head, KEEP: gl.constexpr):
    """This warp group's dQ_i reductions for an item of (batch x key/value head) `head` are in
    memory (all but its KEEP newest bulk groups, the current item's): one more count on the head's
    signal, counter[1 + head], with release semantics (a program that acquires the full count
    sees every reduction before it)."""
    _bulk_writes_done(KEEP)
    gl.thread_barrier()  # the issuing thread has waited before any thread counts
    gl.atomic_add(counter + 1 + head, 1, sem="release", scope="gpu")


@gluon.jit
def _convert_dq(DQ_ACC, DQ, counter, chunk, n_kblocks, rows_per_head, WG: gl.constexpr, HEAD_DIM: gl.constexpr):
    """Conversion chunk `chunk`: 256 rows of a (batch x key/value head)'s fp32 dQ sums (the rows of
    its group's query heads, one after another in the (B, H, seq_q, d) tensor) into DQ's dtype,
    this warp group's 128 of them, once all the head's items have signalled (each warp group of
    each of its n_kblocks items once)."""
    R: gl.constexpr = 128
    per_head = gl.cdiv(rows_per_head, 2 * R)
    head = chunk // per_head
    first = (chunk % per_head) * (2 * R) + WG * R
    done = gl.atomic_add(counter + 1 + head, 0, sem="acquire", scope="gpu")
    while done < 2 * n_kblocks:
        done = gl.atomic_add(counter + 1 + head, 0, sem="acquire", scope="gpu")
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [4, 1], [1, 0])
    rows = first + gl.arange(0, R, layout=gl.SliceLayout(1, layout))
    columns = gl.arange(0, HEAD_DIM, layout=gl.SliceLayout(0, layout))
    offsets = head.to(gl.int64) * rows_per_head * HEAD_DIM + (rows[:, None] * HEAD_DIM + columns[None, :])
    inside = (rows < rows_per_head)[:, None]
    # .cg: from L2, where the TMA reductions added, never a line this SM's L1 may hold from before
    sums = gl.load(DQ_ACC + offsets, mask=inside, other=0.0, cache_modifier=".cg")
    gl.store(DQ + offsets, sums.to(DQ.dtype.element_ty), mask=inside)


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, ds_smem, ds_bar,
              dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty, dk_desc, dv_desc, dkt_desc, dvt_desc,
              dkv_stage, item_smem, counter, DQ_ACC, DQ, scale, qk_scale, seq_q, seq_k, H, group, n_kblocks, items,
              end, HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr, STAGES: gl.constexpr,
              CAUSAL: gl.constexpr, KV_BUFS: gl.constexpr, PERSISTENT: gl.constexpr, KV_IN_REGISTERS: gl.constexpr,
              WG: gl.constexpr):
    # PERSISTENT: items as the producer publishes them, with their K and V, then dQ conversion
    # chunks up to `end`, which ends; t counts the steps (query tiles) across them, as the
    # producer's ring does, and every step-indexed slot and barrier below (Q/dO ring, dS^T
    # slots, ds_bar, dQ_i owners) follows it. Else the program's one item.
    if PERSISTENT:
        t = 0
        c = 0
        # the (batch x key/value head) whose dQ_i reductions of this warp group's last item are
        # not signalled yet (-1: none); signalled once they have surely landed (`_consume_item`),
        # before any conversion chunk waits and before the program ends
        pending = -1
        mbarrier.wait(kv_bar.index(0), 0)
        item = _read_item(item_smem.index(0))
        while item < end:
            if item < items:
                t, pending = _consume_item(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem,
                                           delta_smem, ds_smem, ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar,
                                           kv_empty, ready, empty, dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, counter,
                                           pending, scale, qk_scale, seq_q, seq_k, H, group, n_kblocks, item,
                                           c % KV_BUFS, (c // KV_BUFS) & 1, t, WG, HEAD_DIM, TAIL, SPLIT, STAGES, CAUSAL,
                                           PERSISTENT, KV_IN_REGISTERS)
            else:
                mbarrier.arrive(kv_empty.index(c % KV_BUFS), count=1)  # its number read; no K or V
                if pending >= 0:
                    _signal_head(counter, pending, 0)
                    pending = -1
                _convert_dq(DQ_ACC, DQ, counter, item - items, n_kblocks, group * seq_q, WG, HEAD_DIM)
            c += 1
            mbarrier.wait(kv_bar.index(c % KV_BUFS), (c // KV_BUFS) & 1)
            item = _read_item(item_smem.index(c % KV_BUFS))
        if pending >= 0:  # other programs may be waiting for it
            _signal_head(counter, pending, 0)
    else:  # one item, this program's: no loop around it (the loop cost registers: spills at 80 and 128)
        _consume_item(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem,
                      ds_smem, ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty,
                      dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, counter, -1, scale, qk_scale, seq_q, seq_k, H,
                      group, n_kblocks, gl.program_id(0), 0, 0, 0, WG, HEAD_DIM, TAIL, SPLIT, STAGES, CAUSAL, PERSISTENT,
                      KV_IN_REGISTERS)
    tma.store_wait(0)  # the stores and the last dQ reductions read shared memory the program gives up


@gluon.jit
def _consume_item(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, ds_smem,
                  ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty,
                  dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, counter, pending, scale, qk_scale, seq_q, seq_k, H,
                  group, n_kblocks, item, buf, kv_phase, t0, WG: gl.constexpr, HEAD_DIM: gl.constexpr,
                  TAIL: gl.constexpr, SPLIT: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                  PERSISTENT: gl.constexpr, KV_IN_REGISTERS: gl.constexpr):
    """One item (`_item_coordinates`): dK and dV of its 128 keys (this warp group's 64), dQ_i
    shares of its query tiles; K and V in buffer `buf`, loaded at phase kv_phase; steps counted
    on from t0. PERSISTENT, signals `pending` (`_consumer`) on the way. Returns the count after
    the steps and the item's own (batch x key/value head), pending now (PERSISTENT; else -1)."""
    b, kv_h, start_n, first_tile, n_q_tiles = _item_coordinates(item, n_kblocks, H // group, seq_q, 64, CAUSAL)
    # HEAD_DIM: the first column block's width; SPLIT: a second block of TAIL columns follows
    # (head_dim 80 = 64 + 16; only with one dQ chunk, CHUNKS == 1): every product over the columns
    # is two chained wgmmas, every product into them a second one into a TAIL-wide accumulator.
    gl.static_assert(not (KV_IN_REGISTERS and SPLIT), "K and V as register operands span one column block")
    N: gl.constexpr = 64  # keys of this warp group
    M: gl.constexpr = 64  # query rows per tile
    DQ_W: gl.constexpr = dq_desc.block_type.shape[3]
    CHUNKS: gl.constexpr = HEAD_DIM // DQ_W
    st_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, M, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HEAD_DIM, 16])
    dq_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, DQ_W, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)
    tail_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, TAIL, 16])
    tail_op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=tail_layout, k_width=2)
    keys_l: gl.constexpr = gl.SliceLayout(1, st_layout)
    queries_l: gl.constexpr = gl.SliceLayout(0, st_layout)

    key0 = start_n + WG * N
    offs_k = key0 + gl.arange(0, N, layout=keys_l)
    k_all = k_smem.index(buf).reshape([2 * N, HEAD_DIM])  # both warp groups' keys: dQ_i sums over all 128
    k_tile = k_all.slice(WG * N, N, dim=0)
    v_tile = v_smem.index(buf).reshape([2 * N, HEAD_DIM]).slice(WG * N, N, dim=0)
    zero_st = gl.zeros([N, M], gl.float32, layout=st_layout)
    zero_dq = gl.zeros([M, DQ_W], gl.float32, layout=dq_layout)
    dk = gl.zeros([N, HEAD_DIM], gl.float32, layout=acc_layout)
    dv = gl.zeros([N, HEAD_DIM], gl.float32, layout=acc_layout)
    dkt = gl.zeros([N, TAIL], gl.float32, layout=tail_layout)
    dvt = gl.zeros([N, TAIL], gl.float32, layout=tail_layout)
    if SPLIT:
        kt_all = kt_smem.index(buf).reshape([2 * N, TAIL])
        kt_tile = kt_all.slice(WG * N, N, dim=0)
        vt_tile = vt_smem.index(buf).reshape([2 * N, TAIL]).slice(WG * N, N, dim=0)
        zero_dqt = gl.zeros([M, TAIL], gl.float32, layout=tail_layout)
    else:  # placeholders _issue_dq never reads without SPLIT
        kt_all = k_all
        zero_dqt = zero_dq

    mbarrier.wait(kv_bar.index(buf), kv_phase)
    # KV_IN_REGISTERS: K and V as the register operands of S^T and dP^T, read from shared memory
    # once per item instead of by every wgmma (32 registers more a thread). With both operands
    # in shared memory a wgmma of 64 query columns reads 128 bytes a clock, all the SM has,
    # beside the TMA loads, dS^T and dQ_i traffic.
    # the A operands of S^T, dP^T and (KV_IN_REGISTERS) dQ_i^T: registers, or the shared memory as it is
    k_op = k_tile
    v_op = v_tile
    kt_op = k_all  # a placeholder _issue_dq does not read without KV_IN_REGISTERS
    if KV_IN_REGISTERS:
        kv_op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=st_layout, k_width=2)
        k_op = k_tile.load(kv_op_layout)
        v_op = v_tile.load(kv_op_layout)
        # dQ_i^T = K^T dS^T with K^T (both warp groups' 128 keys, 32 registers more) from
        # registers too: per tile the wgmma reads dS^T's 16 KB, not K's as well, and dQ_i^T is
        # stored transposed for its reduction (4-byte stores, twice the 8-byte ones).
        kt_op = k_all.permute((1, 0)).load(gl.DotOperandLayout(operand_index=0, parent=dq_layout, k_width=2))
    h = kv_h * group
    i = 0
    # The previous tile's head and first row: its dQ_i is made one tile late (head_dim 64, 80).
    # prev_h is computed apart from h: bound to h's own value, the loop would carry one of the
    # two only (and every tile's dQ_i would go to the first head under GQA).
    prev_h = kv_h * group
    prev_row0 = first_tile * M
    steps = group * n_q_tiles
    t = t0
    for s in range(steps):
        t = t0 + s
        if PERSISTENT and (s == 2) and (pending >= 0):
            # The previous item's reductions were issued before this one's first (by tile t0's
            # owner, at s = 1), a tile and more ago: waiting for all but that one costs nothing
            # where a wait at the item's end would stand exposed.
            if (t0 % 2) == WG:
                _signal_head(counter, pending, 1)
            else:
                _signal_head(counter, pending, 0)
            pending = -1
        slot = t % STAGES
        row0 = (first_tile + i) * M
        offs_q = row0 + gl.arange(0, M, layout=queries_l)
        mbarrier.wait(ready.index(slot), (t // STAGES) & 1)
        lse = lse_smem.index(slot).load(queries_l) * 1.4426950408889634
        q_tile = q_smem.index(slot).reshape([M, HEAD_DIM])
        do_tile = do_smem.index(slot).reshape([M, HEAD_DIM])
        # 1. S^T and dP^T together
        st_tok = warpgroup_mma(k_op, q_tile.permute((1, 0)), zero_st, use_acc=False, is_async=True)
        if SPLIT:
            qt_tile = qt_smem.index(slot).reshape([M, TAIL])
            dot_tile = dot_smem.index(slot).reshape([M, TAIL])
            st_tok = warpgroup_mma(kt_tile, qt_tile.permute((1, 0)), st_tok, is_async=True)
        dpt_tok = warpgroup_mma(v_op, do_tile.permute((1, 0)), zero_st, use_acc=False, is_async=True)
        if SPLIT:
            dpt_tok = warpgroup_mma(vt_tile, dot_tile.permute((1, 0)), dpt_tok, is_async=True)
            st = warpgroup_mma_wait(2, deps=(st_tok,))  # dP^T's two products may still run
        else:
            st = warpgroup_mma_wait(1, deps=(st_tok,))
        # 2. P^T under dP^T
        pt = gl.exp2(st * qk_scale - lse[None, :])
        # The mask only where a key can be hidden: most tiles need none, and the mask's
        # instructions sit on the consumers' critical path.
        if (key0 + N > seq_k) or (CAUSAL and key0 + N - 1 > row0):
            pt = _hide_keys(pt, offs_k, offs_q, seq_k, CAUSAL)
        # 3. dV under dS^T
        pt_op = gl.convert_layout(pt.to(q_tile.dtype), op_layout)
        dv_tok = warpgroup_mma(pt_op, do_tile, dv, is_async=True)
        if SPLIT:
            dvt_tok = warpgroup_mma(gl.convert_layout(pt.to(q_tile.dtype), tail_op_layout), dot_tile, dvt, is_async=True)
            dpt = warpgroup_mma_wait(2, deps=(dpt_tok,))  # dV's two products may still run
        else:
            dpt = warpgroup_mma_wait(1, deps=(dpt_tok,))
        delta = delta_smem.index(slot).load(queries_l)
        dst = (pt * (dpt - delta[None, :])).to(q_tile.dtype)
        # 4. dK; dQ (below); dS^T slot t % 2 (head_dim 128) or t % 3 (64, 80) holds tile t's
        ds_all = ds_smem.index(t % ds_smem.shape[0])
        ds_all.slice(WG * N, N, dim=0).store(dst)
        fence_async_shared()
        gl.thread_barrier()  # every thread's part of dS^T is in shared memory before the wgmma reads it
        dk_tok = warpgroup_mma(gl.convert_layout(dst, op_layout), q_tile, dk, is_async=True)
        if SPLIT:
            dkt_tok = warpgroup_mma(gl.convert_layout(dst, tail_op_layout), qt_tile, dkt, is_async=True)
        if CHUNKS > 1:
            # Head_dim 128: both warp groups make dQ_i every tile, each its 64 columns from all
            # 128 keys, so neither holds a second chunk's accumulator (the owner scheme below
            # spilled there). Barriers per tile parity: a warp group's arrival for tile t + 2
            # needs its wait at t + 1, which needs the other's arrival there, after its wait at t.
            mbarrier.arrive(ds_bar.index(2 * (1 - WG) + t % 2), count=1)
            mbarrier.wait(ds_bar.index(2 * WG + t % 2), (t // 2) & 1)  # the other half of dS^T is written
            dq_tok = warpgroup_mma(ds_all.permute((1, 0)), k_all.slice(WG * DQ_W, DQ_W, dim=1), zero_dq, use_acc=False,
                                   is_async=True)
            dv, dk, dq = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dq_tok))
            buffer = dq_smem.index(2 * WG + t % 2)
            tma.store_wait(1)  # this buffer's reduction, issued two tiles ago, has read it
            gl.thread_barrier()
            buffer.reshape([M, DQ_W]).store(dq * scale)
            fence_async_shared()
            gl.thread_barrier()  # every thread's part of dQ_i written before the reduction reads it
            _tma_reduce_add(dq_desc, [b, h, row0, WG * DQ_W], buffer)
        else:
            # Head_dim 64 and 80: tile t's dQ_i = dS_t K (all 128 keys) is made by one warp group,
            # its owner t % 2, one tile late, while it works on tile t + 1: by then the other's
            # half of dS_t is written, where made at once the owner would wait for that half.
            # Barrier t % 4 carries the other's "written" for tile
            # t: its arrival for t + 4 needs tile t + 2's Q/dO slot released by the owner, after
            # the owner's wait at t + 1. Slot t % 3 of dS^T is rewritten at t + 3, whose Q/dO
            # slot the producer fills only once the owner has released t + 1, after dQ_t's wgmma.
            if (t % 2) != WG:
                mbarrier.arrive(ds_bar.index(t % 4), count=1)
            if (s > 0) and ((t - 1) % 2 == WG):
                mbarrier.wait(ds_bar.index((t - 1) % 4), ((t - 1) // 4) & 1)  # the other half of dS_{t-1}
                dq_tok, dqt_tok = _issue_dq(ds_smem, t - 1, k_all, kt_all, kt_op, zero_dq, zero_dqt, SPLIT, KV_IN_REGISTERS)
                if SPLIT:
                    dv, dk, dq, dvt, dkt, dqt = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dq_tok, dvt_tok, dkt_tok,
                                                                            dqt_tok))
                    _reduce_dq(dq * scale, dqt * scale, dq_desc, dq_smem, dqt_desc, dqt_smem, b, prev_h, prev_row0, WG, SPLIT)
                else:
                    dv, dk, dq = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dq_tok))
                    _reduce_dq(dq * scale, dq, dq_desc, dq_smem, dqt_desc, dqt_smem, b, prev_h, prev_row0, WG, SPLIT,
                               KV_IN_REGISTERS)
            elif SPLIT:
                dv, dk, dvt, dkt = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok, dvt_tok, dkt_tok))
            else:
                dv, dk = warpgroup_mma_wait(0, deps=(dv_tok, dk_tok))
        # After this warp group's last read of the slot (the producer refills it once both have
        # released it).
        mbarrier.arrive(empty.index(slot), count=1)
        prev_row0 = row0
        prev_h = h
        i += 1
        if i == n_q_tiles:
            i = 0
            h += 1
    t_last = t0 + steps - 1
    if (CHUNKS == 1) and (steps > 0) and (t_last % 2 == WG):  # the last tile's dQ_i, by its owner
        mbarrier.wait(ds_bar.index(t_last % 4), (t_last // 4) & 1)
        dq_tok, dqt_tok = _issue_dq(ds_smem, t_last, k_all, kt_all, kt_op, zero_dq, zero_dqt, SPLIT, KV_IN_REGISTERS)
        if SPLIT:
            dq, dqt = warpgroup_mma_wait(0, deps=(dq_tok, dqt_tok))
            _reduce_dq(dq * scale, dqt * scale, dq_desc, dq_smem, dqt_desc, dqt_smem, b, prev_h, prev_row0, WG, SPLIT)
        else:
            dq = warpgroup_mma_wait(0, deps=(dq_tok,))
            _reduce_dq(dq * scale, dq, dq_desc, dq_smem, dqt_desc, dqt_smem, b, prev_h, prev_row0, WG, SPLIT,
                       KV_IN_REGISTERS)

    if PERSISTENT:
        if pending >= 0:  # an item too short to have signalled it in its loop
            _signal_head(counter, pending, 0)
        pending = b * (H // group) + kv_h
    # dK (scaled) and dV out by TMA stores (rows past seq_k clipped): register stores of the
    # wgmma layout write 4 bytes a thread over eight rows a warp and sit on the load/store queue.
    # A program per item stages them in this warp group's Q and dO slots (their boxes are the
    # same, 64 rows by the column block), free once both warp groups have released the last
    # tile's slot, and every earlier one with it. (Written inline: as a function of its own, the
    # inlined scope's debug labels change ptxas's schedule of the persistent kernel.)
    if PERSISTENT:
        mbarrier.arrive(kv_empty.index(buf), count=1)  # this item's K and V are read no more
        # Staged apart (the ring's slots hold the next item's tiles meanwhile), once this warp
        # group's previous stores have read the staging.
        tma.store_wait(0)
        gl.thread_barrier()
        dk_stage = dkv_stage.index(2 * WG)
        dv_stage = dkv_stage.index(2 * WG + 1)
    else:
        if steps > 0:
            mbarrier.wait(empty.index(t_last % STAGES), (t_last // STAGES) & 1)
        dk_stage = q_smem.index(WG)
        dv_stage = do_smem.index(WG)
    dk_stage.reshape([N, HEAD_DIM]).store((dk * scale).to(dk_stage.dtype))
    dv_stage.reshape([N, HEAD_DIM]).store(dv.to(dv_stage.dtype))
    if SPLIT:
        dkt_stage = qt_smem.index(WG)
        dvt_stage = dot_smem.index(WG)
        dkt_stage.reshape([N, TAIL]).store((dkt * scale).to(dkt_stage.dtype))
        dvt_stage.reshape([N, TAIL]).store(dvt.to(dvt_stage.dtype))
    fence_async_shared()
    gl.thread_barrier()  # every thread's part staged before the stores read it
    tma.async_copy_shared_to_global(dk_desc, [b, kv_h, key0, 0], dk_stage)  # rows past seq_k: clipped
    tma.async_copy_shared_to_global(dv_desc, [b, kv_h, key0, 0], dv_stage)
    if SPLIT:
        tma.async_copy_shared_to_global(dkt_desc, [b, kv_h, key0, 0], dkt_stage)
        tma.async_copy_shared_to_global(dvt_desc, [b, kv_h, key0, 0], dvt_stage)
    return t0 + gl.maximum(steps, 0), pending


@gluon.jit
def _bwd_kernel(q_desc, k_desc, v_desc, do_desc, dq_desc, qt_desc, kt_desc, vt_desc, dot_desc, dqt_desc,
                dk_desc, dv_desc, dkt_desc, dvt_desc, LSE, DELTA, counter, DQ_ACC, DQ, scale, qk_scale, seq_q, seq_k,
                H, group, n_kblocks, items, end, HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr,
                STAGES: gl.constexpr, CAUSAL: gl.constexpr, PERSISTENT: gl.constexpr, KV_IN_REGISTERS: gl.constexpr,
                CONSUMER_REGISTERS: gl.constexpr, PRODUCER_REGISTERS: gl.constexpr, num_warps: gl.constexpr):
    # Work items (`_item_coordinates`): one per program, or with PERSISTENT one program per SM
    # taking them from the int32 at `counter` (zeroed by the caller), the producer loading the
    # next item's K and V into the second buffer and its first Q/dO tiles into the ring while
    # the consumers finish the current one. PERSISTENT, the numbers from `items` to `end` are
    # chunks of dQ's conversion from the fp32 sums DQ_ACC into DQ (`_convert_dq`), each waiting
    # for its head's signal at counter[1 + head] (zeroed too): taken from the same counter, a
    # chunk's number comes after every item's, whose programs are running, so the wait ends.
    M: gl.constexpr = 64
    KV_BUFS: gl.constexpr = 2 if PERSISTENT else 1
    # The heads' signals count on one dQ_i reduction per tile by its owner (`_consume_item`'s
    # wait_group 1): neither a tail nor a second chunk may add groups.
    gl.static_assert(not PERSISTENT or (not SPLIT and dq_desc.block_type.shape[3] == HEAD_DIM))

    q_smem = gl.allocate_shared_memory(q_desc.dtype, [STAGES, 1, 1, M, HEAD_DIM], q_desc.layout)
    do_smem = gl.allocate_shared_memory(do_desc.dtype, [STAGES, 1, 1, M, HEAD_DIM], do_desc.layout)
    # K and V of the program's 128 keys, each warp group's 64 a slice (TMA boxes of 64 rows)
    k_smem = gl.allocate_shared_memory(k_desc.dtype, [KV_BUFS, 1, 1, 128, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(v_desc.dtype, [KV_BUFS, 1, 1, 128, HEAD_DIM], v_desc.layout)
    ds_layout: gl.constexpr = gl.NVMMASharedLayout.get_default_for([128, M], q_desc.dtype)
    # dS^T of both warp groups, per tile: two slots at head_dim 128; three at 64 and 80, where
    # tile t's dQ_i is made while tile t + 1's dS^T is written (`_consumer`)
    ds_slots: gl.constexpr = 2 if dq_desc.block_type.shape[3] != HEAD_DIM else 3
    ds_smem = gl.allocate_shared_memory(q_desc.dtype, [ds_slots, 128, M], ds_layout)
    # "the other half of dS^T is written": at head_dim 128 per warp group and tile parity, at 64
    # and 80 per tile t % 4
    ds_bar = gl.allocate_shared_memory(gl.int64, [4, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(4):
        mbarrier.init(ds_bar.index(s), count=1)
    # dQ_i (fp32) for the TMA reductions: per warp group, at head_dim 128 its 64 columns in two
    # buffers (tiles t and t + 1; the reduction of t may still read one while t + 1 is written)
    dq_buffers: gl.constexpr = 2 if dq_desc.block_type.shape[3] == HEAD_DIM else 4
    dq_smem = gl.allocate_shared_memory(gl.float32, [dq_buffers] + dq_desc.block_type.shape, dq_desc.layout)
    if SPLIT:  # the last TAIL columns of Q, dO, K, V and dQ_i
        qt_smem = gl.allocate_shared_memory(qt_desc.dtype, [STAGES, 1, 1, M, TAIL], qt_desc.layout)
        dot_smem = gl.allocate_shared_memory(dot_desc.dtype, [STAGES, 1, 1, M, TAIL], dot_desc.layout)
        kt_smem = gl.allocate_shared_memory(kt_desc.dtype, [KV_BUFS, 1, 1, 128, TAIL], kt_desc.layout)
        vt_smem = gl.allocate_shared_memory(vt_desc.dtype, [KV_BUFS, 1, 1, 128, TAIL], vt_desc.layout)
        dqt_smem = gl.allocate_shared_memory(gl.float32, [2] + dqt_desc.block_type.shape, dqt_desc.layout)
    else:  # placeholders the partitions never touch
        qt_smem = q_smem
        dot_smem = do_smem
        kt_smem = k_smem
        vt_smem = v_smem
        dqt_smem = dq_smem
    # each Q/dO slot's LSE and delta rows (fp32; the producer's cp.async, see _producer)
    rows_layout: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[0])
    lse_smem = gl.allocate_shared_memory(gl.float32, [STAGES, M], rows_layout)
    delta_smem = gl.allocate_shared_memory(gl.float32, [STAGES, M], rows_layout)
    # kv_bar: a buffer's K and V landed; kv_empty: both consumers are done with them
    kv_bar = gl.allocate_shared_memory(gl.int64, [KV_BUFS, 1], mbarrier.MBarrierLayout())
    kv_empty = gl.allocate_shared_memory(gl.int64, [KV_BUFS, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(KV_BUFS):
        mbarrier.init(kv_bar.index(s), count=1)
        mbarrier.init(kv_empty.index(s), count=2)
    if PERSISTENT:  # dK and dV of each warp group, staged for their TMA stores
        dkv_stage = gl.allocate_shared_memory(dk_desc.dtype, [4, 1, 1, M, HEAD_DIM], dk_desc.layout)
    else:  # staged in the Q/dO slots, free at the program's end
        dkv_stage = q_smem
    # PERSISTENT, each K/V buffer's item number, published by the producer
    item_smem = gl.allocate_shared_memory(gl.int32, [KV_BUFS, 1], gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    ready, empty = ring_barriers(STAGES, 2)
    fence_async_shared()

    specialise(
        _consumer, (q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, ds_smem,
                    ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty, dk_desc, dv_desc,
                    dkt_desc, dvt_desc, dkv_stage, item_smem, counter, DQ_ACC, DQ, scale, qk_scale, seq_q, seq_k, H,
                    group, n_kblocks, items, end, HEAD_DIM, TAIL, SPLIT, STAGES, CAUSAL, KV_BUFS, PERSISTENT,
                    KV_IN_REGISTERS),
        _producer, (q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem, v_smem, do_smem,
                    qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar, kv_empty, item_smem, ready, empty,
                    LSE, DELTA, counter, seq_q, H, group, n_kblocks, items, end, STAGES, SPLIT, CAUSAL, KV_BUFS,
                    PERSISTENT),
        CONSUMER_REGISTERS, PRODUCER_REGISTERS)




# Launches past the first of each specialisation skip JITFunction.run's binding (launch.py).
_BWD_LAUNCH = CachedLaunch(_bwd_kernel)

# ----------------------------------------------------------------------------- host


def kernel_constexprs(tuning: Tuning, head_dim: int, causal: bool, persistent: bool) -> dict:
    """The kernel's compile-time arguments for one launch (the sm90 report compiles with them too)."""
    main, tail = column_blocks(head_dim)
    return dict(HEAD_DIM=main, TAIL=tail or 16, SPLIT=bool(tail),
                STAGES=tuning.persistent_backward_slots if persistent else tuning.backward_slots, CAUSAL=causal,
                PERSISTENT=persistent, KV_IN_REGISTERS=head_dim in tuning.kv_in_registers,
                CONSUMER_REGISTERS=tuning.consumer_registers, PRODUCER_REGISTERS=tuning.producer_registers,
                num_warps=4)


def _workspace(q: torch.Tensor, kv_heads: int, persistent: bool):
    """dQ's fp32 sums, and (persistent) the work counter with each batch x key/value head's
    signal after it: one zeroed allocation, so one fill. Returns (sums, counter or None)."""
    batch, heads, seq_q, head_dim = q.shape
    sums = batch * heads * seq_q * head_dim
    workspace = torch.zeros(sums + (1 + batch * kv_heads if persistent else 0), dtype=torch.float32, device=q.device)
    counter = workspace[sums:].view(torch.int32) if persistent else None
    return workspace[:sums].view(batch, heads, seq_q, head_dim), counter


def backward(q, k, v, do, lse, delta, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV (contiguous, the inputs' dtype) from (B, H, S, d) q, dO, (B, H_kv, S, d) k, v,
    and the forward's LSE and the preprocess kernel's delta, both (B, H, seq_q) fp32."""
    tuning = current()
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    do = aligned(do)
    dk = torch.empty((batch, kv_heads, seq_k, head_dim), dtype=q.dtype, device=q.device)
    dv = torch.empty_like(dk)
    scale = 1 / math.sqrt(head_dim)
    main, _ = column_blocks(head_dim)
    (q_desc, qt_desc), (k_desc, kt_desc), (v_desc, vt_desc), (do_desc, dot_desc) = (
        block_descriptors(x, rows) for x, rows in ((q, ROWS), (k, BACKWARD_KEYS), (v, BACKWARD_KEYS), (do, ROWS)))
    n_kblocks = triton.cdiv(seq_k, 2 * BACKWARD_KEYS)
    items = n_kblocks * batch * kv_heads
    persistent = tuning.backward_persistent(head_dim, seq_k)
    dq_acc, counter = _workspace(q, kv_heads, persistent)
    # persistent, the kernel converts dQ itself, in chunks of 256 rows of a key/value head's query heads
    dq = torch.empty((batch, heads, seq_q, head_dim), dtype=q.dtype, device=q.device) if persistent else dq_acc
    chunks = batch * kv_heads * triton.cdiv(heads // kv_heads * seq_q, 256) if persistent else 0
    dq_desc, dqt_desc = block_descriptors(dq_acc, ROWS, min(DQ_COLUMNS, main))
    (dk_desc, dkt_desc), (dv_desc, dvt_desc) = block_descriptors(dk, ROWS), block_descriptors(dv, ROWS)
    _BWD_LAUNCH(
        (min(items, schedule.multiprocessors(q.device)) if persistent else items,),
        q_desc, k_desc, v_desc, do_desc, dq_desc, qt_desc, kt_desc, vt_desc, dot_desc, dqt_desc,
        dk_desc, dv_desc, dkt_desc, dvt_desc, lse, delta, lse if counter is None else counter,  # lse: never read
        dq_acc, dq, scale, scale * LOG2E, seq_q, seq_k, heads, heads // kv_heads, n_kblocks, items, items + chunks,
        **kernel_constexprs(tuning, head_dim, is_causal, persistent),
    )
    return (dq if persistent else dq_acc.to(q.dtype)), dk, dv
