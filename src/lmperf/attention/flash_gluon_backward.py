"""The attention backward on Hopper in Gluon: dK, dV and dQ in one warp-specialised kernel.

flash_triton's backwards wait on each tl.dot as it is issued; this kernel issues its wgmmas
asynchronously and waits only where a result is read, and adds dQ as FlashAttention-3 does:
each query tile's dQ_i goes through shared memory into an fp32 dQ by TMA bulk reductions
(`cp.reduce.async.bulk.tensor`, which Gluon 3.6's op builder has but its `tma` module does not
wrap: `_tma_reduce_add`). The order of those additions varies from run to run, so this is an
"atomic" backward: flash_triton runs it only where nondeterminism is allowed.

One program per (128 keys, batch x key/value head). A producer warp loads the program's K and V
once and streams each query tile's Q_i and dO_i (64 rows; under GQA every query head of the
group in turn) through a ring of 2 slots (3 in the persistent kernel) by TMA, and the tile's
LSE and delta rows by cp.async. Two consumer warp groups own 64 keys each (their dK and dV stay
in registers); per tile a consumer
  1. issues S^T = K Q_i^T and dP^T = V dO_i^T together (at head_dim 64 K and V from registers,
     loaded once per item), waits for S^T only;
  2. P^T = exp2(S^T scale log2e - LSE_i log2e), masked (causal, ragged) in the tiles where a key
     can be hidden; issues dV += P^T dO_i;
  3. waits for dP^T: dS^T = P^T (dP^T - delta_i), stored to shared memory; issues dK += dS^T Q_i;
  4. at head_dim 64 the warp group owning tile t (t % 2, so the owners alternate) computes
     dQ_i = dS K over all 128 keys (as dQ_i^T = K^T dS^T, K^T in registers) one tile late,
     during tile t + 1 (by then the other's half of dS^T is written; an mbarrier says so), writes
     scale x dQ_i to shared memory and issues its TMA reduction; the other warp group goes straight on. At 128 (where one warp group holding
     a 64 x 128 fp32 dQ_i beside dK and dV spilled) both wait for each other and each makes 64
     of dQ_i's columns.
delta = rowsum(dO O) comes from flash_triton's preprocess kernel; dK and dV leave at the end by TMA
stores, staged in the Q/dO slots. At head_dim 64 from PERSISTENT_FROM_KEYS (non-causal) and
PERSISTENT_CAUSAL_FROM_KEYS (causal), one program per SM takes the (key block, head) items instead,
from an atomic counter: the producer loads the next item's K and V into a second buffer and its
first Q/dO tiles into the ring while the consumers finish the current one, and dK/dV are staged
apart; every step-indexed slot and barrier counts steps across items. After the items the same
counter hands out chunks of dQ's conversion from its fp32 sums into the output dtype
(`CONVERT_IN_KERNEL`): each waits until every item of its (batch x key/value head) has signalled
that its TMA reductions have landed, so the SMs without an item left convert the heads done
while the last items run, instead of a conversion kernel after the backward.

Measured on an H100 (benchmarks/attention/gluon-backward-next-h100-43fc11f, bf16, 16k tokens,
heads x d = 2048, interleaved rounds): backward time flash_triton's atomic backward / this one's
1.124-1.350 (d64 full 4k), 1.171-1.208 (full 16k), 1.099-1.191 (causal 4k), 1.136-1.180 (causal
16k). At head_dim 128 the one-owner scheme was level (0.929-1.060), its consumers spilling
168-208 bytes; with the dQ_i columns split between the warp groups (56 bytes)
1.048-1.185 full and 0.975-1.125 causal (gluon-backward-ab-h100-b1ecd71). Head_dim 80 runs as
64 + 16 columns (every product over the columns two chained wgmmas, every product into them a
second one into a 16-column accumulator): 1.117-1.359 (gluon-backward-d80-h100-4c27cc7).
LSE and delta through shared memory (the consumers' own global loads of them stood exposed:
6.9% of the stall samples at d=128, stall-profile-h100-f919e46) made it 0.995-1.115x as fast at
64 and 0.962-1.132 at 80; with P^T masked only where needed at 128 too (spills 56 -> 0 bytes,
8 causal) 1.058-1.174 at 128, where it is now 0.940-1.055x as fast as cuDNN's backward
(gluon-backward-lse-h100-aa3ceb4, 1k-16k keys). dQ_i one tile late at 64 and 80 (the owner had
waited for the other's dS^T half: 10% of the warp samples at d=64 full 4k) made it 1.015-1.156x
as fast at d=64 non-causal, 0.966-1.037 causal, 0.982-1.135 at 80 (gluon-backward-deferred-dq-
h100-1e1643f). dK and dV by TMA stores instead of register stores made it 1.034-1.123x as fast
at 1k keys, 0.988-1.060 at 2k and 0.932-1.139 from 4k (gluon-backward-tma-store-h100-6b3228d).
flash_triton runs it at 64, 80 and 128 from 1024 keys (`faster_here`). Reasoning
and the variants that lost: docs/attention.md items 32-38.

Scope (`fits`): CUDA sm90, bf16/fp16, head_dim 64, 80 or 128, q, k, v and dO TMA-addressable (dO is
copied when not, e.g. the expanded gradient of `.sum()`). Under torch.compile the launch is an
opaque custom op (`lmperf::flash_gluon_backward`), as the Gluon forward's is.
"""

from __future__ import annotations

import math
import os

import torch
import triton
from triton._C.libtriton import ir
from triton.experimental import gluon
from triton.experimental.gluon.language import _core as gl_core
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait

from lmperf.attention import flash_gluon
from lmperf.attention.flash_gluon import LOG2E, ring_barriers
from lmperf.attention.launch import CachedLaunch

KEYS = 64  # keys per consumer warp group; a program holds two
BLOCK_N = 2 * KEYS
ROWS = 64  # query rows per tile
STAGES = 2  # Q_i / dO_i slots
# The persistent kernel's Q_i / dO_i slots: its 226 KB of shared memory (209 with two) hold a
# third. Backward time two / three on an H100 at d64 (benchmarks/attention/backward-three-slots-
# 8445d8e, per-round medians of six interleaved rounds): non-causal 1.036 / 1.015 / 1.022 / 1.023
# at 1k / 2k / 4k / 16k keys, causal 1.020 / 1.000 / 0.994 / 1.026. (Item 33's per-item kernel
# had gained nothing from a third: docs/attention.md.)
PERSISTENT_STAGES = 3
DQ_COLUMNS = 64  # a warp group's share of dQ_i: a 64 x 128 fp32 dQ_i would not fit beside dK and dV in registers
# head_dim -> key count from which the non-causal backward is persistent: one program per SM
# taking (key block, head) items in turn, K/V in two buffers and dK/dV staged apart (64 KB more
# shared memory; at 80 and 128 there is not that much left). Backward time per-item programs /
# persistent on an H100 at d64 non-causal (benchmarks/attention/gluon-backward-persistent-v2-h100-
# 013a900, two interleaved rounds, 16k tokens): 0.984-1.035 at 2k keys, 0.947-0.990 at 4k,
# 1.073-1.147 at 16k (a first version: 1.012-1.076, 0.939-1.023, 1.061-1.092). With K, V and K^T
# as register operands since, the per-item programs spend 8% of their consumers' warp samples
# outside the tile loop at 2k keys (the first K/V load, the last stores; stall-profile-h100-
# 4220174), which the persistent kernel overlaps with the previous item: per-item / persistent
# 1.060-1.092 at 1k, 1.024-1.067 at 2k, 0.996-1.083 at 4k (four interleaved rounds,
# backward-persistent-h100-3843e56, summary.txt): from 1024, the shortest length it runs at.
PERSISTENT_FROM_KEYS = {64: 1024}
# head_dim -> key count from which the causal backward is persistent, its items handed out by an
# atomic counter (DYNAMIC): the next item to whichever program finishes first, so the items in
# flight stay a window of consecutive ones, as the hardware's own order of programs keeps them.
# Taken in a fixed turn instead, causal items of 2 to 256 steps lost (0.835-0.936x; the guess:
# a program's items drift apart across heads). With the counter, per-item / persistent
# (gluon-backward-persistent-dynamic-h100-57db6e4, two interleaved rounds per call): 1.049-1.100
# at 1k keys, 1.014-1.064 at 2k (two calls), 0.965-1.026 at 4k, 0.940-1.018 at 8k, 0.924-1.091
# at 16k. Non-causal with the counter it was level at 2k and 4k (0.951-1.061, 0.977-1.053).
PERSISTENT_CAUSAL_FROM_KEYS = {64: 1024}
# The persistent kernels convert dQ's fp32 sums into the output dtype themselves, as work taken
# after the last item (`_convert_dq`), instead of a conversion kernel after them: the SMs that
# find no item left convert the heads already done while the last items run. Their items then
# come from the counter at d64 non-causal too (in a fixed turn a chunk's wait could hang on a
# program not yet resident). Nsight Compute, d64 full 4k, one launch each (H200,
# backward-convert-d3cd296/call2-h200): backward kernel 2.553 ms + conversion 0.044 before, 2.559 ms
# with it. False: the conversion kernel, and non-causal items in a fixed turn.
CONVERT_IN_KERNEL = True


@gl_core.builtin
def _tma_reduce_add(tensor_desc, coord, src, _semantic=None):
    """TMA bulk reduction: add shared-memory tile `src` into the tensor at `coord` (one thread
    issues it; asynchronous, a bulk group that tma.store_wait retires)."""
    coord = _semantic._convert_to_ir_values(coord, require_i64=False)
    _semantic.builder.create_async_tma_reduce(ir.DESCRIPTOR_REDUCE_KIND.ADD, tensor_desc.handle, coord, src.handle)


@gluon.jit
def _item_coordinates(item, n_kblocks, kv_heads, seq_q, M: gl.constexpr, CAUSAL: gl.constexpr):
    """Work item `item`: key block item % n_kblocks (128 keys) of batch x key/value head
    item // n_kblocks (the order of the non-persistent grid); its batch, head, first key, first
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
              CAUSAL: gl.constexpr, KV_BUFS: gl.constexpr, DYNAMIC: gl.constexpr):
    t = 0  # steps (query tiles) loaded so far: the ring's running count, across items
    c = 0  # items (and conversion chunks) so far
    if DYNAMIC:
        item = gl.atomic_add(counter, 1)
        while item < items:
            t = _produce_item(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem,
                              v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar,
                              kv_empty, item_smem, ready, empty, LSE, DELTA, seq_q, H, group, n_kblocks, item, c, t,
                              STAGES, SPLIT, CAUSAL, KV_BUFS, DYNAMIC)
            c += 1
            item = gl.atomic_add(counter, 1)
        # Numbers from items to end are dQ conversion chunks (`_convert_dq`): the number only, in
        # the buffer's turn, no K or V. Then end: the consumers read it and stop.
        while item < end:
            _hand_over(kv_bar, kv_empty, item_smem, item, c, KV_BUFS)
            c += 1
            item = gl.atomic_add(counter, 1)
        _hand_over(kv_bar, kv_empty, item_smem, end, c, KV_BUFS)
    else:
        for item in range(gl.program_id(0), items, gl.num_programs(0)):
            t = _produce_item(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem,
                              v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar,
                              kv_empty, item_smem, ready, empty, LSE, DELTA, seq_q, H, group, n_kblocks, item, c, t,
                              STAGES, SPLIT, CAUSAL, KV_BUFS, DYNAMIC)
            c += 1


@gluon.jit
def _produce_item(q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem, v_smem, do_smem,
                  qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar, kv_empty, item_smem, ready, empty,
                  LSE, DELTA, seq_q, H, group, n_kblocks, item, c, t, STAGES: gl.constexpr, SPLIT: gl.constexpr,
                  CAUSAL: gl.constexpr, KV_BUFS: gl.constexpr, DYNAMIC: gl.constexpr):
    """Item `item`, the program's c-th: its K and V into their buffer, then its steps' Q/dO tiles
    through the ring from running step count t; returns the count after them."""
    M: gl.constexpr = q_desc.block_type.shape[2]  # query rows per tile
    _load_kv(k_desc, v_desc, kt_desc, vt_desc, k_smem, v_smem, kt_smem, vt_smem, kv_bar, kv_empty, item_smem,
             item, c, n_kblocks, H // group, seq_q, M, SPLIT, CAUSAL, KV_BUFS, DYNAMIC)
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
             KV_BUFS: gl.constexpr, DYNAMIC: gl.constexpr):
    """Item `item`'s K and V (the program's c-th item) into buffer c % KV_BUFS, once the consumers
    are done with the item that held it; with DYNAMIC the item's number first, for the consumers
    (kv_bar's arrival releases it to them)."""
    rows: gl.constexpr = k_desc.block_type.shape[2]
    b, kv_h, start_n, first_tile, n_q_tiles = _item_coordinates(item, n_kblocks, kv_heads, seq_q, M, CAUSAL)
    buf = _free_buffer(kv_empty, c, KV_BUFS)
    if DYNAMIC:
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
    h = kv_h * group  # the query head and tile of step t, counted on (a division per step showed in the profile)
    i = 0
    for s in range(group * n_q_tiles):
        slot = t % STAGES
        if t >= STAGES:  # both consumers are done with step t - STAGES, which held this slot
            mbarrier.wait(empty.index(slot), (t // STAGES - 1) & 1)
        row = (first_tile + i) * M
        bar = ready.index(slot)
        # The tile's LSE and delta rows by cp.async into the slot (their global loads, issued by
        # the consumers, stood exposed: 6.9% of the d=128 backward's stall samples sat on the
        # first use of LSE, stall-profile-h100-f919e46). Rows past seq_q read as 0, which leaves
        # their P^T at 1 and dS^T at 0: their Q and dO rows are zero-filled, so they add nothing.
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
              end, WG: gl.constexpr, HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr, KV_BUFS: gl.constexpr, PERSISTENT: gl.constexpr,
              DYNAMIC: gl.constexpr, CONVERT: gl.constexpr):
    # Items as the producer takes them from the counter (DYNAMIC), pid, pid + programs, ... in a
    # fixed turn (PERSISTENT), or this program's one; t counts the steps (query tiles) across
    # them, as the producer's ring does, and every step-indexed slot and barrier below (Q/dO ring,
    # dS^T slots, ds_bar, dQ_i owners) follows it.
    if DYNAMIC:  # items as the producer publishes them, with their K and V, then (CONVERT) dQ
        # conversion chunks up to `end`, which ends
        t = 0
        c = 0
        # with CONVERT, the (batch x key/value head) whose dQ_i reductions of this warp group's
        # last item are not signalled yet (-1: none); signalled once they have surely landed
        # (`_consume_item`), before any conversion chunk waits and before the program ends
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
                                           PERSISTENT, CONVERT)
            elif CONVERT:
                mbarrier.arrive(kv_empty.index(c % KV_BUFS), count=1)  # its number read; no K or V
                if pending >= 0:
                    _signal_head(counter, pending, 0)
                    pending = -1
                _convert_dq(DQ_ACC, DQ, counter, item - items, n_kblocks, group * seq_q, WG, HEAD_DIM)
            c += 1
            mbarrier.wait(kv_bar.index(c % KV_BUFS), (c // KV_BUFS) & 1)
            item = _read_item(item_smem.index(c % KV_BUFS))
        if CONVERT and pending >= 0:  # other programs may be waiting for it
            _signal_head(counter, pending, 0)
    elif PERSISTENT:
        t = 0
        c = 0
        for item in range(gl.program_id(0), items, gl.num_programs(0)):
            t, _ = _consume_item(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem,
                                 delta_smem, ds_smem, ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready,
                                 empty, dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, counter, -1, scale, qk_scale,
                                 seq_q, seq_k, H, group, n_kblocks, item, c % KV_BUFS, (c // KV_BUFS) & 1, t, WG, HEAD_DIM,
                                 TAIL, SPLIT, STAGES, CAUSAL, PERSISTENT, False)
            c += 1
    else:  # one item, this program's: no loop around it (the loop cost registers: spills at 80 and 128)
        _consume_item(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem,
                      ds_smem, ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty,
                      dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, counter, -1, scale, qk_scale, seq_q, seq_k, H,
                      group, n_kblocks, gl.program_id(0), 0, 0, 0, WG, HEAD_DIM, TAIL, SPLIT, STAGES, CAUSAL, PERSISTENT,
                      False)
    tma.store_wait(0)  # the stores and the last dQ reductions read shared memory the program gives up


@gluon.jit
def _consume_item(q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, ds_smem,
                  ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty,
                  dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, counter, pending, scale, qk_scale, seq_q, seq_k, H,
                  group, n_kblocks, item, buf, kv_phase, t0, WG: gl.constexpr, HEAD_DIM: gl.constexpr,
                  TAIL: gl.constexpr, SPLIT: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                  PERSISTENT: gl.constexpr, CONVERT: gl.constexpr):
    """One item (`_item_coordinates`): dK and dV of its 128 keys (this warp group's 64), dQ_i
    shares of its query tiles; K and V in buffer `buf`, loaded at phase kv_phase; steps counted
    on from t0. With CONVERT, signals `pending` (`_consumer`) on the way. Returns the count after
    the steps and the item's own (batch x key/value head), pending now (CONVERT; else -1)."""
    b, kv_h, start_n, first_tile, n_q_tiles = _item_coordinates(item, n_kblocks, H // group, seq_q, 64, CAUSAL)
    # HEAD_DIM: the first column block's width; SPLIT: a second block of TAIL columns follows
    # (head_dim 80 = 64 + 16; only with one dQ chunk, CHUNKS == 1): every product over the columns
    # is two chained wgmmas, every product into them a second one into a TAIL-wide accumulator.
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
    # K and V as the register operands of S^T and dP^T at head_dim 64: read from shared memory
    # once per item instead of by every wgmma. With both operands in shared memory a wgmma of 64
    # query columns reads 128 bytes a clock, all the SM has, beside the TMA loads, dS^T and dQ_i
    # traffic. Backward time before / after on an H100, per round: 1.009-1.146 (medians
    # 1.018-1.097); at 80 (64 + 16 columns) the consumers spilled 24-48 bytes and it was
    # 0.932-1.181 (medians 0.942-1.063; benchmarks/attention/softmax-under-pv-h100-d5875b1/
    # summary.txt). 32 registers more a thread.
    KV_IN_REGISTERS: gl.constexpr = (HEAD_DIM == 64) and (not SPLIT)
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
        # stored transposed for its reduction (4-byte stores, twice the 8-byte ones). Backward
        # time before / after on an H100, per round: 0.981-1.153 (medians 0.993-1.093;
        # benchmarks/attention/softmax-under-pv-h100-d5875b1, call 7).
        kt_op = k_all.permute((1, 0)).load(gl.DotOperandLayout(operand_index=0, parent=dq_layout, k_width=2))
    h = kv_h * group
    i = 0
    # The previous tile's head and first row: its dQ_i is made one tile late (head_dim 64, 80).
    # prev_h computed apart from h: bound to h's own value, the loop carried one of the two only
    # (every tile's dQ_i went to the first head under GQA).
    prev_h = kv_h * group
    prev_row0 = first_tile * M
    steps = group * n_q_tiles
    t = t0
    for s in range(steps):
        t = t0 + s
        if CONVERT and (s == 2) and (pending >= 0):
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
        # The mask only where a key can be hidden: most tiles need none. Skipping it elsewhere made
        # the backward 1.035-1.102x as fast at head_dim 64 causal 1k-16k (gluon-backward-ab-h100-b1ecd71);
        # at 128 it cost 7-10% while the consumers spilled 56 bytes, and helps since they do not
        # (with LSE and delta in shared memory: gluon-backward-lse-h100-aa3ceb4).
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
            # half of dS_t is written. (Made at once, the owner waited for that half: 10% of the
            # kernel's warp samples at d=64 full 4k, the other having made dQ_{t-1} meanwhile;
            # stall-profile-h100-b69f802.) Barrier t % 4 carries the other's "written" for tile
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

    if CONVERT:
        if pending >= 0:  # an item too short to have signalled it in its loop
            _signal_head(counter, pending, 0)
        pending = b * (H // group) + kv_h
    # dK and dV out by TMA stores, staged in this warp group's Q and dO slots (their boxes are
    # the same, 64 rows by the column block): free once both warp groups have released the last
    # tile's slot, and every earlier one with it. Register stores of the wgmma layout wrote 4
    # bytes a thread over eight rows a warp and sat on the load/store queue (8.7% of the d=128
    # full 1k backward's warp samples: stall-profile in gluon-forward-pingpong-h100-49e6921).
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
                STAGES: gl.constexpr, CAUSAL: gl.constexpr, PERSISTENT: gl.constexpr, DYNAMIC: gl.constexpr,
                CONVERT: gl.constexpr, num_warps: gl.constexpr):
    # Work items (`_item_coordinates`): one per program, or with PERSISTENT one program per SM
    # taking them in a fixed turn or, with DYNAMIC, from the int32 at `counter` (zeroed by the
    # caller), the producer loading the next item's K and V into the second buffer and its first
    # Q/dO tiles into the ring while the consumers finish the current one. With CONVERT (DYNAMIC,
    # no SPLIT) the numbers from `items` to `end` are chunks of dQ's conversion from the fp32
    # sums DQ_ACC into DQ (`_convert_dq`), each waiting for its head's signal at counter[1 + head]
    # (zeroed too): taken from the same counter, a chunk's number comes after every item's, whose
    # programs are running, so the wait ends.
    M: gl.constexpr = 64
    KV_BUFS: gl.constexpr = 2 if PERSISTENT else 1
    # The heads' signals count on one dQ_i reduction per tile by its owner (`_consume_item`'s
    # wait_group 1): head_dim 64 only, where neither a tail nor a second chunk adds groups.
    gl.static_assert(not CONVERT or (DYNAMIC and not SPLIT and dq_desc.block_type.shape[3] == HEAD_DIM))

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
    # with DYNAMIC, each K/V buffer's item number, published by the producer
    item_smem = gl.allocate_shared_memory(gl.int32, [KV_BUFS, 1], gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    ready, empty = ring_barriers(STAGES, 2)
    fence_async_shared()

    # Argument tuples inline (bound to a name first, their constexprs would arrive as tensors).
    gl.warp_specialize([
        (_consumer, (q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, ds_smem,
                     ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty,
                     dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, item_smem, counter, DQ_ACC, DQ, scale, qk_scale,
                     seq_q, seq_k, H, group, n_kblocks, items, end, 0, HEAD_DIM, TAIL, SPLIT, STAGES, CAUSAL, KV_BUFS,
                     PERSISTENT, DYNAMIC, CONVERT)),
        (_consumer, (q_smem, k_smem, v_smem, do_smem, qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, ds_smem,
                     ds_bar, dq_desc, dq_smem, dqt_desc, dqt_smem, kv_bar, kv_empty, ready, empty,
                     dk_desc, dv_desc, dkt_desc, dvt_desc, dkv_stage, item_smem, counter, DQ_ACC, DQ, scale, qk_scale,
                     seq_q, seq_k, H, group, n_kblocks, items, end, 1, HEAD_DIM, TAIL, SPLIT, STAGES, CAUSAL, KV_BUFS,
                     PERSISTENT, DYNAMIC, CONVERT)),
        (_producer, (q_desc, k_desc, v_desc, do_desc, qt_desc, kt_desc, vt_desc, dot_desc, q_smem, k_smem, v_smem, do_smem,
                     qt_smem, kt_smem, vt_smem, dot_smem, lse_smem, delta_smem, kv_bar, kv_empty, item_smem, ready, empty,
                     LSE, DELTA, counter, seq_q, H, group, n_kblocks, items, end, STAGES, SPLIT, CAUSAL, KV_BUFS,
                     DYNAMIC)),
    ], [4, 1], [240, 24])


# Launches past the first of each specialisation skip JITFunction.run's binding (launch.py).
_BWD_LAUNCH = CachedLaunch(_bwd_kernel)


def fits(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the kernel takes these 4-d (B, H, S, d) inputs, on any device: what the Gluon
    forward takes (flash_gluon.fits: bf16/fp16, head_dim 64, 80 as 64 + 16 columns, or 128,
    TMA-addressable)."""
    return flash_gluon.fits(q, k, v)


# Backward time at head_dim 64 on the H100, bf16, 16k tokens, two interleaved rounds
# (benchmarks/attention/gluon-backward-h100-e53598a/lengths.jsonl): flash_triton's atomic / this
# one's 1.076-1.307 non-causal and 1.018-1.112 causal at every length from 1024 to 16384 keys;
# its split backward / this one's 1.044-1.123 and 1.060-1.279 from 2048 on, but 0.959-0.973 and
# 0.947-0.965 at 1024, so it ran from 2048. Since (the dK/dV TMA stores, the counter-fed causal
# programs), at 1024 keys four interleaved rounds put cuDNN's backward time / this one's at
# 1.036-1.044 (full) and 1.161-1.207 (causal), against 0.907-0.946 and 0.975-0.997 for the split
# backward (final-h100-338e4be, variant gluon-d64-backward-1k): from 1024, the shortest timed.
D64_FROM_KEYS = 1024
# Head_dim 128, with both warp groups making dQ_i's halves (2026-11-25, sixth session,
# gluon-backward-ab-h100-b1ecd71 and gluon-backward-d128-h100-46bf753): flash_triton's atomic
# backward time / this one's 1.006-1.185 (full 4k and 16k), 1.054-1.125 (causal 4k), but
# 0.948-1.011 at causal 16k, kept there because the compiled 8B block at 32k ran faster with it
# (474.80 against 490.52 ms: compiled, Triton's dQ goes by per-thread atomics). At 1024 and 2048
# keys (2026-11-26, d128-short-h100-f919e46) the default backward's time (Triton's split there) /
# this one's 1.044-1.068 (full 1k), 1.099-1.102 (full 2k), 1.019-1.025 (causal 1k), 1.108-1.117
# (causal 2k): from 1024, the shortest timed.
D128_FROM_KEYS = 1024
# Head_dim 80 (64 + 16 columns; gluon-backward-d80-h100-4c27cc7): the default backward's time
# with Triton's kernels / with this one 1.160-1.316 non-causal and 1.117-1.359 causal at 1k, 4k
# and 16k keys (and 1.003-1.136x as fast as cuDNN's backward). From 1024, the shortest timed.
D80_FROM_KEYS = 1024
# False (or LMPERF_ATTENTION_GLUON_BACKWARD=0) keeps flash_triton's own backwards, with the Gluon
# forward still on: to time the two.
ENABLED = os.environ.get("LMPERF_ATTENTION_GLUON_BACKWARD", "1") != "0"


def faster_here(head_dim: int, seq_k: int) -> bool:
    """Whether this backward beat both of flash_triton's on the H100 at this shape (head_dim 128:
    from D128_FROM_KEYS, the shortest length timed there; see there for causal 16k)."""
    from_keys = {64: D64_FROM_KEYS, 80: D80_FROM_KEYS, 128: D128_FROM_KEYS}.get(head_dim)
    return from_keys is not None and seq_k >= from_keys


def supported(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, runs: bool | None = None) -> bool:
    """Whether flash_triton's "atomic" backward runs this kernel for these inputs: enabled here,
    `flash_gluon.can_run` (the Gluon kernels enabled as a whole, an sm90 GPU, `fits`; runs: its
    answer, where the caller has it) and `faster_here`."""
    return ENABLED and faster_here(q.shape[-1], k.shape[-2]) and (flash_gluon.can_run(q, k, v) if runs is None else runs)


def backward(q, k, v, do, lse, delta, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV (contiguous, the inputs' dtype) from (B, H, S, d) q, dO, (B, H_kv, S, d) k, v,
    and the forward's LSE and the preprocess kernel's delta, both (B, H, seq_q) fp32."""
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    do = flash_gluon.aligned(do)
    dk = torch.empty((batch, kv_heads, seq_k, head_dim), dtype=q.dtype, device=q.device)
    dv = torch.empty_like(dk)
    scale = 1 / math.sqrt(head_dim)
    main, tail = flash_gluon.column_blocks(head_dim)
    block_descriptors = flash_gluon.block_descriptors
    (q_desc, qt_desc), (k_desc, kt_desc), (v_desc, vt_desc), (do_desc, dot_desc) = (
        block_descriptors(x, rows) for x, rows in ((q, ROWS), (k, KEYS), (v, KEYS), (do, ROWS)))
    n_kblocks = triton.cdiv(seq_k, BLOCK_N)
    items = n_kblocks * batch * kv_heads
    from_keys = PERSISTENT_CAUSAL_FROM_KEYS if is_causal else PERSISTENT_FROM_KEYS
    persistent = seq_k >= from_keys.get(head_dim, math.inf)
    convert = persistent and CONVERT_IN_KERNEL and head_dim == 64  # see _bwd_kernel's assertion
    dynamic = persistent and (is_causal or convert)
    # dQ's fp32 sums and, with DYNAMIC, the work counter and each (batch x key/value head)'s
    # signal: one zeroed allocation, so one fill
    sums = batch * heads * seq_q * head_dim
    workspace = torch.zeros(sums + (1 + batch * kv_heads if dynamic else 0), dtype=torch.float32, device=q.device)
    dq_acc = workspace[:sums].view(batch, heads, seq_q, head_dim)
    counter = workspace[sums:].view(torch.int32) if dynamic else lse  # lse: a pointer never read
    dq = torch.empty((batch, heads, seq_q, head_dim), dtype=q.dtype, device=q.device) if convert else dq_acc
    chunks = batch * kv_heads * triton.cdiv(heads // kv_heads * seq_q, 256) if convert else 0
    dq_desc, dqt_desc = block_descriptors(dq_acc, ROWS, min(DQ_COLUMNS, main))
    (dk_desc, dkt_desc), (dv_desc, dvt_desc) = block_descriptors(dk, ROWS), block_descriptors(dv, ROWS)
    _BWD_LAUNCH(
        (min(items, flash_gluon.multiprocessors(q.device)) if persistent else items,),
        q_desc, k_desc, v_desc, do_desc, dq_desc, qt_desc, kt_desc, vt_desc, dot_desc, dqt_desc,
        dk_desc, dv_desc, dkt_desc, dvt_desc, lse, delta, counter, dq_acc, dq, scale, scale * LOG2E,
        seq_q, seq_k, heads, heads // kv_heads, n_kblocks, items, items + chunks,
        HEAD_DIM=main, TAIL=tail or 16, SPLIT=bool(tail), STAGES=PERSISTENT_STAGES if persistent else STAGES,
        CAUSAL=is_causal, PERSISTENT=persistent, DYNAMIC=dynamic, CONVERT=convert,
        num_warps=4,
    )
    return (dq if convert else dq_acc.to(q.dtype)), dk, dv


@torch.library.custom_op("lmperf::flash_gluon_backward", mutates_args=())
def _backward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, do: torch.Tensor, lse: torch.Tensor,
                 delta: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return backward(flash_gluon.aligned(q), flash_gluon.aligned(k), flash_gluon.aligned(v), do, lse, delta, is_causal)


@_backward_op.register_fake
def _(q, k, v, do, lse, delta, is_causal):
    return torch.empty_like(q, memory_format=torch.contiguous_format), k.new_empty(k.shape), v.new_empty(k.shape)


def launch(q, k, v, do, lse, delta, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """`backward`, through the custom op where torch.compile traces (Dynamo does not trace Gluon
    launches), directly otherwise."""
    if torch.compiler.is_compiling():
        return _backward_op(q, k, v, do, lse, delta, is_causal)
    return backward(q, k, v, do, lse, delta, is_causal)
