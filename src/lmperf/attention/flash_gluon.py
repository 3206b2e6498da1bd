"""The attention forward on Hopper in Gluon: FlashAttention-3's warp-specialised schedule.

Triton's tl.dot waits on each product as soon as it is issued, so a tile's softmax never runs
under the tensor cores' work, and Triton 3.6 does not warp-specialise our loops on sm90
(docs/attention.md items 8 and 26). Gluon (triton.experimental.gluon, shipped with Triton)
exposes the asynchronous wgmma, TMA, mbarriers and warp specialisation, and this kernel uses
them as FlashAttention-3 does. One program holds 128 query rows (`CONSUMERS` warp groups of 64):
  - a producer warp (24 registers) loads Q once and streams K and V tiles through a ring of
    shared-memory slots by TMA; a slot is refilled once every consumer has released it;
  - two consumer warp groups (240 registers each) of 64 query rows share each 128-key K/V tile
    (three at 160 registers each can, with 64-key tiles at 128: `CONSUMERS`, `tiles`). Per key
    tile j a consumer issues S_{j+1} = Q K_{j+1}^T and O += P_j V_j together, waits for S_{j+1}
    only and runs its online softmax while P_j V_j is still on the tensor cores, then waits for
    P_j V_j, rescales O and releases slot j (in the machine code only at head_dim 128: elsewhere
    ptxas moves that wait above the softmax, which measured as fast there; `_consumer`). Causal
    at 128, the first consumer runs the diagonal tile over its first 64 keys only, the rest being
    hidden from its rows (`_half_diagonal`). Nothing
    stays in flight across the loop's back edge
    (ptxas serialises every wgmma of a kernel that does that, benchmarks/attention/trials); O
    leaves by a TMA store staged in shared memory where that was faster (`O_BY_TMA`), else by
    register stores;
  - persistent (`schedule`): one program per SM takes query tiles in turn (causal: in an order
    the host builds, longest first, `ordered_items`), the producer loading the next one's Q and
    first K/V tiles under the current one's P V and epilogue, which a program per tile left
    exposed (1.03-1.44x as fast below 4096 keys); at d64 into a second Q buffer (`QUERY_SLOTS`),
    so already while the current one's last Q K^T runs; non-causal at d64 from 4096 keys, a last round
    at most half full goes to a second launch as runs over its tiles' keys, merged after it
    (`split_keys`, `SPLIT_FROM_KEYS`).
Forward time flash_triton's / this one's on an H100 (benchmarks/attention/gluon-ws-forward-h100-
6c23e70, bf16, 16k tokens): 1.069-1.254 at head_dim 128 (4k and 16k keys, causal and not),
0.942-1.244 at 64; from 1k to 16k keys (gluon-tiles-h100-37dafcb) 1.033-1.184 at 128, and at 64
behind Triton's below 4096 keys until the kernel was persistent (FROM_KEYS). Head_dim 80 (the
2.7B preset's) runs as 64 + 16 columns: 1.051-1.205 from 4096 keys (gluon-d80-h100-e48ed64).

Scope: CUDA sm90 (the kernel is written for Hopper's wgmma), bf16/fp16, head_dim 64, 80 or 128,
inputs 4-d with unit-stride head_dim and 16-byte aligned (TMA); anything else runs Triton's
forward (flash_triton.triton_forward decides, `supported`). Output and LSE are laid out as
flash_triton's forward lays them out, so its backward takes them unchanged. Under torch.compile
the launch is an opaque custom op (`lmperf::flash_gluon_forward`). Like flash_triton's kernels,
a row offset within one (batch, head) is 32-bit: seq_q x heads x head_dim below 2^31.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import heapq
import math
import os

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

from lmperf.attention import split_keys
from lmperf.attention.launch import CachedLaunch

LOG2E = 1.4426950408889634
ROWS = 64  # query rows per consumer warp group; a program holds CONSUMERS[head_dim] of them
# head_dim -> (BLOCK_N keys per tile, K/V slots) of a program of two consumers: S, P and O of a
# warp group fit its registers with at most 104 bytes spilled (non-causal / causal: 0 / 0 at 64,
# 56 / 8 at 80, 0 / 104 at 128)
# (benchmarks/attention/gluon_sm90_report.py, gluon-sm90-report-triton36.txt); 80 is 64 + 16
# columns (`column_blocks`). At 128, 128-key tiles against 64-key tiles with three consumers
# (the layout before), forward time on an H100 (benchmarks/attention/gluon-forward-wide-tiles-
# h100-9d37a01, two rounds, 16k tokens): 1.020-1.153x as fast non-causal at 1k-4k keys, level
# at 16k (0.994-1.028), 1.031-1.143 causal at 1k-16k. A wgmma that reads both operands from
# shared memory, as Q K^T does, needs 4096 / BLOCK_N + 64 bytes a clock at the tensor cores'
# rate: at 64 keys all of the SM's 128, at 128 three quarters. Two slots of 128 keys starve
# the ring (0.861-1.000x the layout before); with Q as Q K^T's register operand as well the
# non-causal forward fell to 0.862-0.993x the layout before.
TILES = {64: (128, 3), 80: (128, 3), 128: (128, 3)}
# head_dim -> consumer warp groups per program (2 or 3; a program holds 64 x that query rows).
# Three share each K/V tile among more rows and leave two to feed the tensor cores while one
# runs its softmax, at 160 registers a thread instead of 240 (the register file holds three
# such warp groups beside the producer's). Forward time two / three on an H100 with 64-key tiles
# at 128 (benchmarks/attention/gluon-consumers-h100-c9f5415, bf16, two rounds): 1.096-1.143
# non-causal (4k, 16k keys), 1.018-1.072 causal; at 64 (128-key tiles) 0.682-0.721 non-causal
# and 0.935-0.989 causal. Three stay selectable (tests run both): with 128-key tiles two win.
CONSUMERS = {64: 2, 80: 2, 128: 2}
# head_dim -> (BLOCK_N, slots) with three consumers where TILES' do not fit: at 128 the 48 KB of
# Q and three 64 KB slots of 128-key K and V would pass the 227 KB of shared memory.
THREE_CONSUMER_TILES = {128: (64, 3)}
CONSUMER_REGISTERS = {2: 240, 3: 160}
# (head_dim, causal) points whose forward stores O by TMA, staged in shared memory beside Q and
# the K/V ring (16 KB more; at head_dim 128 Q and the ring take 224 of the 227 KB), instead of by
# register stores. Forward time register stores / TMA store on an H100 (benchmarks/attention/
# gluon-forward-o-by-tma-h100-30ec68e, two interleaved rounds, 16k tokens): d64 1.026-1.058 at 1k
# keys, 0.985-1.045 at 2k, 0.993-1.047 at 4k, 0.958-1.018 at 16k (causal and not); d80 non-causal
# 1.031-1.110 at 1k and 1.009-1.079 at 2k, level from 4k; d80 causal 0.903-0.981 from 2k, so not there.
O_BY_TMA = {(64, False), (64, True), (80, False)}
# Persistent (one program per SM taking work items in turn, the next query tile's loads under the
# current one's epilogue) against one program per query tile, forward time on an H100
# (benchmarks/attention/gluon-persistent-h100-03ffae7, bf16, 16k tokens, two rounds): d64
# non-causal 1.120-1.158 at 1k keys, 1.068-1.099 at 2k, 1.021-1.045 at 4k, 1.003-1.024 at 16k;
# causal (pairs of tiles k and n-1-k as items) 1.200-1.439, 1.126-1.148, 1.070-1.106,
# 0.996-1.018; d80 1.037-1.225 at 1k-16k; d128 1.004-1.108 non-causal, causal 1.055-1.092 at 1k
# and 1.004-1.170 at 4k but 0.947-0.952 at 16k (a program's six pairs against 5.2 on average:
# pairs are coarse there), where one program per pair was 0.964-0.996. So persistent everywhere
# but at d128 causal past 8192 keys (1.039-1.145x as fast at 6144, level at 8192:
# benchmarks/attention/gluon-persistent-causal-8k-h100-8e0fa89), until causal items became single
# tiles in the host's order (ORDERED_CAUSAL below): then persistent / one program per tile at
# d128 causal 16k 1.009 (per-round median, 0.969-1.088), and at the 8B model's attention (32
# query heads, 8 K/V heads, 32k keys) 13.17-13.80 ms against 13.49-15.27, each round faster
# (benchmarks/attention/forward-ordered-causal-3d19d48/call2-h100-1ba18be). Persistent at every
# length now; head_dim -> the most keys it takes persistent (a GPU test mode sets 0: one program
# per query tile).
PERSISTENT_CAUSAL_MAX_KEYS: dict[int, int] = {}
# Causal persistent forwards take single query tiles in an order the host builds once per shape
# (`ordered_items`, `order_table`) instead of pairs in a fixed turn. The pairs cost the same, but
# their count rarely divides by the SMs: 1024 pairs (d128, 16k tokens) on 132 SMs leave 32 of them
# idle for the last eighth of the time. Single tiles, longest first within sections of heads whose
# K and V fit a share of the L2 (`L2_SHARE`), each to the program with the least work so far
# (greedy longest-processing-time), leave a last round of short tiles. Predicted 1-3% (a
# simulation of both schedules, 1.1-3.1%). Forward time pairs / ordered on an H100
# (benchmarks/attention/forward-ordered-causal-3d19d48, per-round medians of four interleaved
# rounds): d64 1.032 at 1k keys, 1.022 at 2k, 1.003 at 4k, 1.017 at 8k, 1.025 at 16k; d128 1.025,
# 1.007, 1.005, 1.005 at 1k-8k (at 16k, then one program per tile either way: 0.997). At d80 the
# other way round, ordered / pairs 0.987, 1.009, 0.980 at 1k, 2k, 4k
# (benchmarks/attention/final-h100-bc63f30/call6-h100-bc63f30), so d80 keeps the pairs.
# The head_dims whose causal persistent forwards take the ordered single tiles; the rest, pairs.
ORDERED_CAUSAL = {64, 128}
L2_SHARE = 16 << 20  # bytes of K and V a section of heads reads (an H100's L2 holds 50 MB)
TILE_COST = 1.0  # a query tile's own cost in key tiles, beside its key tiles (first S, last P V, epilogue)
# Non-causal persistent forwards run a sparse last round's query tiles as runs over their keys,
# merged after the kernel (`split_keys`): 4096 tiles on 132 SMs leave 128 of them idle for the
# 32nd round. The runs go in a launch of their own after the whole tiles' (whose kernel is then
# the unsplit one): one kernel taking both, runs after its whole tiles, was 0.991, 1.003, 1.015,
# 1.029x as fast at d64 1k-16k and 0.907-0.949x at d80, every key tile slower there although its
# loop's machine code was the unsplit one's but for the mask test's tile index. As two launches
# (d64, kernel times by torch.profiler): at 2048 keys the whole tiles' kernel took 595-599 us
# against 602-612 unsplit (the last round's 19 us mostly hidden by the SMs' own spread), which
# the runs' 5 us, the merge's 13 and two launch gaps outweigh; at 16384, 4399-4408 against
# 4536-4542, plus 10 and 26 (benchmarks/attention/forward-split-keys-67307cf, calls 1-2). The
# merge now loads every run at once (a loop over runs waited on each run's loads: 3.2-4.2 us
# now). Predicted with it: 0.7% of the forward at 4096 keys, 1.8% at 8192, 2.6% at 16384; measured
# (kernel times, three forwards each) d64 4096 keys 1136-1146 + 6 + 3 us against 1161-1167, 8192
# 2225-2238 + 8 + 3 against 2287-2290, 16384 4397-4415 + 10 + 3 against 4532-4533, forward time
# split / unsplit per-round medians of six interleaved rounds 0.992, 0.968, 0.975; at d80 4096
# keys 1300-1307 + 7 + 4 against 1297-1314, medians 1.001 at 4096 and 8192 keys, 0.958 at 16384
# (benchmarks/attention/forward-split-keys-67307cf, call 3). Again (call 4): d64 0.991, 0.978,
# 0.979 at 4096-16384 keys; d80 16384 1.033, the other way round from call 3, so d80 does not split.
# head_dim -> the fewest keys at which it splits (d128: no timed shape had a sparse last round).
SPLIT_FROM_KEYS = {64: 4096}
# head_dim -> Q buffers of a two-consumer program (default 1): with two the producer loads the next
# query tile's Q while the current one runs, where with one it waits for the current one's last
# Q K^T (the consumers then wait for Q and the first K/V at every tile: 2.5-3.7% of their samples
# at d128 full 1k, benchmarks/attention/gluon-forward-pingpong-h100-49e6921). 16 KB more at d64.
# A/B (benchmarks/attention/forward-double-q-9e392d4), one buffer / two, per-round medians of six:
# d64 full 1.041 / 1.031 / 1.012 and causal 1.053 / 1.022 / 0.998 at 1k / 2k / 4k keys; d80 full
# 0.954 / 0.913 / 0.911 (cause not found: 180 KB, spills as with one), so d80 keeps one; d128
# has no room (224 of 227 KB).
QUERY_SLOTS = {64: 2}
# LMPERF_ATTENTION_GLUON=0 keeps Triton's forward everywhere (to time the two side by side).
ENABLED = os.environ.get("LMPERF_ATTENTION_GLUON", "1") != "0"


@contextlib.contextmanager
def disabled():
    """Triton's forward everywhere inside the block (ENABLED restored after, as it was)."""
    global ENABLED
    enabled, ENABLED = ENABLED, False
    try:
        yield
    finally:
        ENABLED = enabled


@gluon.jit
def _work(item, half, n_m, per_head, code, CAUSAL: gl.constexpr, PAIRS: gl.constexpr, ORDERED: gl.constexpr):
    """The query tile and batch x head of work item `item` (its half `half`, 0 or 1, with PAIRS),
    and whether it exists. An item is one query tile (per_head = n_m of them per batch x head;
    causal, the ones with the most keys first), or with PAIRS (causal only) a pair, query tiles k
    and n_m - 1 - k (per_head = ceil(n_m / 2)): every pair costs the same, n_m + 1 tiles' worth of
    keys, so programs that take pairs in turn stay level; the middle tile of an odd n_m is a
    pair's only half. Items are numbered head by head, so the programs at work at once share few
    heads' K/V. With ORDERED the item is the query tile the host's table holds at `item`
    (`code`: batch x head times n_m plus the tile, `ordered_items`)."""
    if ORDERED:
        return code % n_m, code // n_m, half == 0
    bh = item // per_head
    k = item % per_head
    if PAIRS:
        tile_m = k + (1 - half) * (n_m - 1 - 2 * k)  # half 0: the later tile, with more keys
        return tile_m, bh, (half == 0) | (2 * k != n_m - 1)
    if CAUSAL:
        return n_m - 1 - k, bh, half == 0
    return k, bh, half == 0


@gluon.jit
def _turn(TABLE, items, ORDERED: gl.constexpr):
    """(first, stop, step) of the work items this program takes: pid, pid + programs, ... in a
    fixed turn, or with ORDERED its own run of the host's table (TABLE[items + pid] up to
    TABLE[items + pid + 1])."""
    first = gl.program_id(0)
    stop = items
    step = gl.num_programs(0)
    if ORDERED:
        first = gl.load(TABLE + items + gl.program_id(0))
        stop = gl.load(TABLE + items + gl.program_id(0) + 1)
        step = 1
    return first, stop, step


@gluon.jit
def _code(TABLE, item, ORDERED: gl.constexpr):
    """The table's entry for work item `item` with ORDERED (read one item ahead, so that its
    latency passes under the item before; TABLE[items], read past a program's last item, is the
    first run's start), else 0."""
    if ORDERED:
        return gl.load(TABLE + item)
    return item * 0


@gluon.jit
def _run_of(item, whole, parts, PIECES: gl.constexpr):
    """(work unit, run, runs) of item `item`: with PIECES every item is a run over the keys of one
    of the query tiles from `whole` on (`split_keys`), item r x parts + p being run p of unit
    whole + r; else the item is a unit of its own, whole (run 0 of 1)."""
    unit = item
    run = item * 0
    runs = item * 0 + 1
    if PIECES:
        unit = whole + item // parts
        run = item % parts
        runs = runs * parts
    return unit, run, runs


@gluon.jit
def _key_span(run, runs, n_tiles):
    """[first, stop) of the key tiles run `run` of `runs` reads (split_keys.key_range)."""
    return run * n_tiles // runs, (run + 1) * n_tiles // runs


@gluon.jit
def _tile_coordinates(tile_m, bh, H, seq_k, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """What the producer and every consumer derive alike from a query tile of the schedule: its
    batch, head, first row, and the key tiles it reads."""
    start_m = tile_m * BLOCK_M
    hi = seq_k
    if CAUSAL:
        hi = gl.minimum(seq_k, start_m + BLOCK_M)
    return bh // H, bh % H, start_m, gl.cdiv(hi, BLOCK_N)


@gluon.jit
def _producer(q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem,
              q_bar, q_empty, ready, empty, TABLE, seq_k, H, group, n_m, per_head, items, whole, parts,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr, SPLIT: gl.constexpr,
              CAUSAL: gl.constexpr, PAIRS: gl.constexpr, ORDERED: gl.constexpr, PIECES: gl.constexpr):
    rows: gl.constexpr = q_desc.block_type.shape[2]
    Q_SLOTS: gl.constexpr = q_bar.shape[0]  # query tiles' Q buffers: the next one's loads while this one runs
    g = 0  # key tiles loaded so far: the ring's running count, across query tiles
    c = 0  # query tiles loaded so far
    first, stop, step = _turn(TABLE, items, ORDERED)
    code = _code(TABLE, first, ORDERED)
    for item in range(first, stop, step):
        following = _code(TABLE, item + 1, ORDERED)
        for half in range(2 if PAIRS else 1):
            unit, run, runs = _run_of(item, whole, parts, PIECES)
            tile_m, bh, exists = _work(unit, half, n_m, per_head, code, CAUSAL, PAIRS, ORDERED)
            if exists:
                b, h, start_m, n_tiles = _tile_coordinates(tile_m, bh, H, seq_k, CONSUMERS * rows, BLOCK_N, CAUSAL)
                first_tile = 0
                if PIECES:
                    first_tile, n_tiles = _key_span(run, runs, n_tiles)
                kv_h = h // group
                q_slot = c % Q_SLOTS
                if c >= Q_SLOTS:  # every consumer's last Q K^T of the query tile that held this buffer is done
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
                c += 1
        code = following


@gluon.jit
def ring_barriers(STAGES: gl.constexpr, CONSUMERS: gl.constexpr):
    """A ring's mbarriers: `ready` (a slot's TMA loads landed; the producer's one arrival with
    the byte count) and `empty` (every consumer warp group done with the slot: one arrival each)."""
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=CONSUMERS)
    return ready, empty


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
    # as in the loop at head_dim 128 (the only one to run this): keeps ptxas from hoisting the P V
    # wait above the softmax
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
    fp32, head_dim columns a row, and the log-sum-exp in base 2, for split_keys.combine."""
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
    lse = (m_i + gl.log2(l_i)) / 1.4426950408889634  # natural log, as flash_triton's backward reads it
    gl.store(LSE + bh.to(gl.int64) * seq_q + offs_m, lse, mask=offs_m < seq_q)


@gluon.jit
def _consumer(q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar, q_empty,
              ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale,
              seq_q, seq_k, H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on, WG: gl.constexpr,
              HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr, BLOCK_N: gl.constexpr,
              STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr, PAIRS: gl.constexpr,
              ORDERED: gl.constexpr, O_BY_TMA: gl.constexpr, PIECES: gl.constexpr):
    # HEAD_DIM: the first column block's width; SPLIT: a second block of TAIL columns follows
    # (head_dim 80 = 64 + 16): every product over the columns is two chained wgmmas, O two
    # accumulators. Without SPLIT the tail arguments are unused.
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
    # width (`half_last`), a quarter of the diagonal tiles' tensor work saved. A/B, forward time
    # without / with, per-round medians of six (benchmarks/attention/half-diagonal-8f8d9be): d128
    # 1.020 / 1.030 / 1.023 / 1.033 at 1k / 2k / 4k / 16k keys; d64 1.017 / 1.017 / 1.009 / 0.990,
    # mixed, so d64 keeps whole tiles.
    HALF_DIAGONAL: gl.constexpr = CAUSAL and not SPLIT and not PIECES and BLOCK_N == 2 * M and HEAD_DIM == 128
    h_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, M, 16])
    zero_h = gl.zeros([M, M], gl.float32, layout=h_layout)

    g = 0  # the ring's running count of key tiles, as the producer's
    c = 0  # query tiles so far
    first, stop, step = _turn(TABLE, items, ORDERED)
    code = _code(TABLE, first, ORDERED)
    for item in range(first, stop, step):
        following = _code(TABLE, item + 1, ORDERED)
        for half in range(2 if PAIRS else 1):
            unit, run, runs = _run_of(item, whole, parts, PIECES)
            tile_m, bh, exists = _work(unit, half, n_m, per_head, code, CAUSAL, PAIRS, ORDERED)
            if exists:
                b, h, start_m, n_tiles = _tile_coordinates(tile_m, bh, H, seq_k, CONSUMERS * M, BLOCK_N, CAUSAL)
                first_tile = 0  # a run of a split tile reads key tiles [first_tile, n_tiles) (non-causal)
                if PIECES:
                    first_tile, n_tiles = _key_span(run, runs, n_tiles)
                row0 = start_m + WG * M
                offs_m = row0 + gl.arange(0, M, layout=rows_s)
                mask_from = seq_k  # key tiles ending past this need a mask
                n_mine = n_tiles - first_tile
                if CAUSAL:
                    mask_from = gl.minimum(seq_k, row0)
                    # This warp group's own last key tile: with three consumers and 64-key tiles
                    # the first two stop one or two tiles before the program's last (all their
                    # keys hidden there; forward 1.021-1.032x as fast at d=128 causal 1k, level
                    # at 4k and 16k: final-h100-41f5771). They still wait for and release the
                    # tiles they skip, which the ring's count and the producer's refills need.
                    n_mine = gl.minimum(n_tiles, gl.cdiv(row0 + M, BLOCK_N))  # first_tile: 0
                if HALF_DIAGONAL:  # not for a tile whose only key tile is the diagonal (kept simple)
                    half_last = (n_mine >= 2) & (row0 + M <= (n_mine - 1) * BLOCK_N + M)
                    n_full = n_mine - half_last.to(gl.int32)
                else:  # a constexpr, so that `_half_diagonal` is not traced at all: a plain False would
                    # become a runtime bool, and the half-width layouts misfit 64-key tiles
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
                    if HEAD_DIM == 128:
                        # Nothing reads these sums back. Without a shared-memory store that needs
                        # the whole softmax, ptxas (Triton 3.6's, CUDA 12.8) schedules the wait for
                        # P_j V_j below before the softmax, so the two never overlapped (the SASS
                        # of every head_dim, causal or not); it does not move the wait above a
                        # store. Forward time before / after on an H100, per round: at 128
                        # 0.949-1.077 (medians 0.984 at causal 1k to 1.044 at full 16k); at 64 and
                        # 80, whose MUFU and tensor pipes were already busy 51% + 49% of the time
                        # (cuDNN's 52% + 51%), 0.949-1.004 and 0.969-1.036
                        # (benchmarks/attention/softmax-under-pv-h100-d5875b1/summary.txt).
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
                if PIECES:  # a run of a split tile (`split_keys`) leaves its O and LSE in the runs' buffers
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


@gluon.jit
def _fwd_kernel(
    q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, o_desc, ot_desc, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q,
    seq_k, H, group, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on,
    HEAD_DIM: gl.constexpr, TAIL: gl.constexpr, SPLIT: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
    CAUSAL: gl.constexpr, PAIRS: gl.constexpr, ORDERED: gl.constexpr, CONSUMERS: gl.constexpr, REGISTERS: gl.constexpr,
    O_BY_TMA: gl.constexpr, PIECES: gl.constexpr, Q_SLOTS: gl.constexpr, num_warps: gl.constexpr,
):
    # Each program takes work items (`_work`) pid, pid + programs, ... in turn (persistent: one
    # program per SM; else one per item, `schedule`), or with ORDERED its run of TABLE
    # (`_turn`, `ordered_items`); with PIECES its items are runs over the keys of the query tiles
    # from `whole` on (`_run_of`, `split_keys`); the producer loads a query tile's Q into one
    # of Q_SLOTS buffers once the consumers' last Q K^T of the tile that held it is done
    # (`q_empty`) and streams its K/V tiles into the ring while they finish P V, O and LSE.
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
    # each consumer's row sums, stored per key tile at head_dim 128 only to order its softmax before a wait (`_consumer`)
    sums_smem = gl.allocate_shared_memory(gl.float32, [CONSUMERS, 64], gl.SwizzledSharedLayout(1, 1, 1, order=[0]))
    fence_async_shared()

    # Argument tuples written inline: one bound to a name first turns its constexprs (the
    # consumer's index WG among them) into tensors on the way into the partitions (Triton 3.6).
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_consumer, (q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar,
                         q_empty, ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q, seq_k,
                         H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on, 0, HEAD_DIM, TAIL,
                         SPLIT, BLOCK_N, STAGES, CAUSAL, CONSUMERS, PAIRS, ORDERED, O_BY_TMA, PIECES)),
            (_consumer, (q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar,
                         q_empty, ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q, seq_k,
                         H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on, 1, HEAD_DIM, TAIL,
                         SPLIT, BLOCK_N, STAGES, CAUSAL, CONSUMERS, PAIRS, ORDERED, O_BY_TMA, PIECES)),
            (_producer, (q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, q_smem, k_smem, v_smem, qt_smem, kt_smem,
                         vt_smem, q_bar, q_empty, ready, empty, TABLE, seq_k, H, group, n_m, per_head, items, whole,
                         parts, BLOCK_N, STAGES, CONSUMERS, SPLIT, CAUSAL, PAIRS, ORDERED, PIECES)),
        ], [4, 1], [REGISTERS, 24])
    else:
        gl.warp_specialize([
            (_consumer, (q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar,
                         q_empty, ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q, seq_k,
                         H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on, 0, HEAD_DIM, TAIL,
                         SPLIT, BLOCK_N, STAGES, CAUSAL, CONSUMERS, PAIRS, ORDERED, O_BY_TMA, PIECES)),
            (_consumer, (q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar,
                         q_empty, ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q, seq_k,
                         H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on, 1, HEAD_DIM, TAIL,
                         SPLIT, BLOCK_N, STAGES, CAUSAL, CONSUMERS, PAIRS, ORDERED, O_BY_TMA, PIECES)),
            (_consumer, (q_smem, k_smem, v_smem, qt_smem, kt_smem, vt_smem, o_smem, ot_smem, o_desc, ot_desc, q_bar,
                         q_empty, ready, empty, sums_smem, O, LSE, TABLE, PART_O, PART_LSE, qk_scale, seq_q, seq_k,
                         H, n_m, per_head, items, whole, parts, stride_ob, stride_oh, stride_on, 2, HEAD_DIM, TAIL,
                         SPLIT, BLOCK_N, STAGES, CAUSAL, CONSUMERS, PAIRS, ORDERED, O_BY_TMA, PIECES)),
            (_producer, (q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, q_smem, k_smem, v_smem, qt_smem, kt_smem,
                         vt_smem, q_bar, q_empty, ready, empty, TABLE, seq_k, H, group, n_m, per_head, items, whole,
                         parts, BLOCK_N, STAGES, CONSUMERS, SPLIT, CAUSAL, PAIRS, ORDERED, PIECES)),
        ], [4, 4, 1], [REGISTERS, REGISTERS, 24])


# The forward's launches past the first of each specialisation skip JITFunction.run's binding
# (launch.CachedLaunch: a fifth of a short forward + backward's host time went there).
_FWD_LAUNCH = CachedLaunch(_fwd_kernel)


def tma_ready(x: torch.Tensor) -> bool:
    """A TMA descriptor can address x: unit-stride last dim, 16-byte aligned strides and base.
    While torch.compile traces, the base is not known (Dynamo breaks the graph at data_ptr, and
    before 2026-11-25 every attention call of a compiled model broke it there): the strides
    decide, and the custom ops realign a base at run time (`aligned`)."""
    size = x.element_size()
    strides_ok = x.stride(-1) == 1 and all(stride * size % 16 == 0 for stride in x.stride()[:-1])
    return strides_ok and (torch.compiler.is_compiling() or x.data_ptr() % 16 == 0)


def aligned(x: torch.Tensor) -> torch.Tensor:
    """x, or a contiguous copy (a fresh allocation, 16-byte aligned) where TMA cannot address it."""
    return x if tma_ready(x) else x.clone(memory_format=torch.contiguous_format)


def tiles(head_dim: int, consumers: int) -> tuple[int, int]:
    """(BLOCK_N keys per tile, K/V slots) of a program of `consumers` warp groups at head_dim."""
    if consumers == 3 and head_dim in THREE_CONSUMER_TILES:
        return THREE_CONSUMER_TILES[head_dim]
    return TILES[head_dim]


def query_slots(head_dim: int, consumers: int) -> int:
    """Q buffers of a program (`QUERY_SLOTS`): timed with two consumer warp groups only."""
    return QUERY_SLOTS.get(head_dim, 1) if consumers == 2 else 1


def stores_o_by_tma(head_dim: int, causal: bool, consumers: int) -> bool:
    """Whether O leaves by a TMA store (`O_BY_TMA`): timed with two consumer warp groups only."""
    return (head_dim, causal) in O_BY_TMA and consumers == 2


def column_blocks(head_dim: int) -> tuple[int, int]:
    """The widths of the column blocks the kernel splits head_dim into: (head_dim, 0) for a power
    of two, else its largest power of two and the rest, which must be one too, >= 16 (80 = 64 +
    16: wgmma and TMA boxes span powers of two; padding 80 to 128 would compute 60% more)."""
    main = 1 << (head_dim.bit_length() - 1)
    tail = head_dim - main
    if tail and (tail < 16 or tail & (tail - 1)):
        raise ValueError(f"head_dim {head_dim} is not a power of two plus a power of two >= 16")
    return main, tail


def fits(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the kernel takes these 4-d (B, H, S, d) inputs, on any device: bf16/fp16 alike,
    a head_dim of TILES (64, 80, 128) for all three, non-empty, TMA-addressable. (This kernel's grid
    is one program per SM; triton_forward refuses batch x heads past the backwards' grid limit,
    flash_triton.MAX_GRID_Y, before it asks.)"""
    return (
        q.dtype in (torch.bfloat16, torch.float16) and k.dtype == v.dtype == q.dtype
        and q.shape[-1] in TILES and k.shape[-1] == v.shape[-1] == q.shape[-1]
        and q.shape[-2] > 0 and k.shape[-2] > 0
        and all(tma_ready(x) for x in (q, k, v))
    )


# Before it was persistent the Gluon forward trailed Triton's at head_dim 64 below 4096 keys
# (8192 causal) and at 80 below 4096 (a program's first Q K^T and last P V overlapped nothing;
# gluon-tiles-h100-37dafcb, gluon-d80-h100-e48ed64). Persistent, forward time Triton's / Gluon's
# on an H100 (benchmarks/attention/gluon-forward-short-h100-f5af9f9, two interleaved rounds, 16k
# tokens): d64 non-causal 1.028-1.042 at 1024 keys, 1.067-1.167 at 2048; causal 1.063-1.135 at
# 2048, but at 1024 1.009 in one round and 0.797 in the other, so Triton's stays there; d80
# 1.173-1.257 non-causal at 1k and 2k, causal 1.183-1.209 at 2k and at 1k 1.123 in one round,
# 0.691 in the other (that round's first peer, as at d64: the 2.7B step at 1024 decided, see
# docs/attention.md item 36). At 128 it led at every length: 1.033-1.184.
# head_dim -> {is_causal: the fewest keys it runs at}
FROM_KEYS = {64: {False: 0, True: 2048}, 80: {False: 0, True: 0}, 128: {False: 0, True: 0}}


def faster_here(head_dim: int, seq_k: int, is_causal: bool) -> bool:
    """Whether the Gluon forward beat Triton's on the H100 at this head_dim and key count."""
    return head_dim in FROM_KEYS and seq_k >= FROM_KEYS[head_dim][is_causal]


def _asks_sm90(device: torch.device) -> bool:
    return torch.cuda.get_device_capability(device) == (9, 0)


_sm90 = functools.cache(_asks_sm90)


def hopper(device: torch.device) -> bool:
    """Whether `device` is an sm90 GPU. Cached for eager calls: every attention call asks, two to
    three times, and a short forward + backward spent 0.8-1.2 ms of host time against cuDNN's
    0.2-0.3 (benchmarks/attention/host-fwd-bwd-h100-57ee77c). Asked directly while torch.compile
    traces: Dynamo traces through a cache wrapper anyway, and warns that it does."""
    return _asks_sm90(device) if torch.compiler.is_compiling() else _sm90(device)


def can_run(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> bool:
    """Whether the Gluon kernels (this forward, flash_gluon_backward's backward) may take these
    inputs at all: enabled, an sm90 GPU (they are written for Hopper's wgmma) and `fits`."""
    return ENABLED and q.is_cuda and hopper(q.device) and fits(q, k, v)


def supported(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, runs: bool | None = None) -> bool:
    """Whether this forward runs these inputs (else Triton's does): `faster_here` and `can_run`
    (the cheap test first: this runs on every call). runs: can_run's answer, where the caller
    has it already (FlashAttention2Triton asks once for both kernels)."""
    return faster_here(q.shape[-1], k.shape[-2], is_causal) and (can_run(q, k, v) if runs is None else runs)


GL_DTYPES = {torch.bfloat16: gl.bfloat16, torch.float16: gl.float16, torch.float32: gl.float32}


@functools.cache
def shared_layout(rows: int, columns: int, dtype: torch.dtype) -> gl.NVMMASharedLayout:
    """The shared-memory layout of a (1, 1, rows, columns) TMA box of dtype. Cached: deriving it
    took 6.6 us of the 9.3 a descriptor cost on the host (Triton 3.6), and a forward makes three to
    six descriptors, a backward five to ten, per call, against 0.2-0.4 ms of GPU time at 1024 keys
    (benchmarks/attention/host-overhead-h100-f2f9403: the host spent 106-233 us per call)."""
    return gl.NVMMASharedLayout.get_default_for([1, 1, rows, columns], GL_DTYPES[dtype])


# TensorDescriptor's fields with defaults (padding; Triton 3.8 adds round_f32_to_tf32), as from_tensor
# leaves them for bf16/fp16/fp32 boxes.
_DESCRIPTOR_DEFAULTS = {field.name: field.default for field in dataclasses.fields(TensorDescriptor)
                        if field.default is not dataclasses.MISSING}


def descriptor(x: torch.Tensor, rows: int, columns: int | None = None) -> TensorDescriptor:
    """A TMA descriptor of 4-d x in boxes of `rows` x `columns` (default: the whole head_dim).

    Built field by field, without TensorDescriptor's __post_init__ checks (base and strides
    16-byte aligned, last stride 1, shape positive, block shape powers of two): they took 2.2 of
    the 2.7 us a descriptor cost on the host, ten descriptors a forward + backward, and `fits`
    has made them for every tensor the kernels take (`aligned` copies what TMA cannot address;
    dQ, dK and dV are fresh allocations; the boxes are this module's constants). The CPU test
    compares every field with TensorDescriptor.from_tensor's."""
    columns = columns or x.shape[-1]
    desc = TensorDescriptor.__new__(TensorDescriptor)
    desc.__dict__.update(_DESCRIPTOR_DEFAULTS)
    desc.base, desc.shape, desc.strides = x, x.shape, x.stride()
    desc.block_shape, desc.layout = [1, 1, rows, columns], shared_layout(rows, columns, x.dtype)
    return desc


def block_descriptors(x: torch.Tensor, rows: int, columns: int | None = None) -> tuple[TensorDescriptor, TensorDescriptor | None]:
    """Descriptors of x's two column blocks (`column_blocks`), as the Gluon kernels take them: the
    first in boxes of `rows` x `columns` (default: the whole block), the tail whole, each a view of
    x (a column view's base stays 16-byte aligned). Without a tail, None for the second: the
    kernels never read it then, and a launch spends host time on every descriptor argument
    (benchmarks/attention/model-h100-42c284b/host-profile.txt: the d=128 backward's 14 made its
    launch 167 us against 28 for a kernel without any), where a constexpr None costs nothing.
    The sm90 machine code is the same but for parameter offsets."""
    main, tail = column_blocks(x.shape[-1])
    if not tail:
        return descriptor(x, rows, columns), None
    return descriptor(x[..., :main], rows, columns), descriptor(x[..., main:], rows)


def schedule(head_dim: int, seq_k: int, is_causal: bool) -> tuple[bool, bool]:
    """(pairs, persistent): whether work items are pairs of query tiles in a fixed turn (causal
    and persistent; `forward` takes single tiles in the host's order there instead while
    the head_dim is in ORDERED_CAUSAL) and whether one program per SM takes them (`PERSISTENT_CAUSAL_MAX_KEYS`)."""
    persistent = not is_causal or seq_k <= PERSISTENT_CAUSAL_MAX_KEYS.get(head_dim, seq_k)
    return is_causal and persistent, persistent


def ordered_items(n_m: int, heads: int, programs: int, seq_k: int, block_m: int, block_n: int,
                  section: int) -> tuple[list[int], list[int]]:
    """(codes, starts): every query tile of `heads` (batch x head) x n_m, coded as
    batch_head * n_m + tile, and each program's run of them, codes[starts[p]:starts[p + 1]]. The
    heads go in sections of `section`; within one, tiles with the most key tiles first (causal:
    tile t reads ceil(min(seq_k, (t + 1) * block_m) / block_n)), head after head at each rank;
    each tile to the program with the least work so far (`TILE_COST` per tile beside its key
    tiles; ties to the lower program). A program runs its tiles in the order they came, so the
    tiles at work at once stay within a section or two."""
    key_tiles = [-(-min(seq_k, (t + 1) * block_m) // block_n) for t in range(n_m)]
    by_cost = sorted(range(n_m), key=lambda t: -key_tiles[t])
    loads = [(0.0, p) for p in range(programs)]
    runs = [[] for _ in range(programs)]
    for first in range(0, heads, section):
        for t in by_cost:
            for bh in range(first, min(heads, first + section)):
                load, p = heapq.heappop(loads)
                runs[p].append(bh * n_m + t)
                heapq.heappush(loads, (load + key_tiles[t] + TILE_COST, p))
    starts = [0]
    for run in runs:
        starts.append(starts[-1] + len(run))
    return [code for run in runs for code in run], starts


_TABLES: dict = {}  # (shape key, device) -> the ordered forward's int32 table on that device
# Tables are never freed: a CUDA graph captured with one, or a kernel still running on another
# stream, reads it by address, and a freed table's memory could hold anything by then. Past this
# many shapes (a few KB each; 32 KB at 8192 query tiles) new shapes run the pairs instead.
MAX_TABLES = 1024


def order_table(n_m: int, heads: int, seq_k: int, block_m: int, block_n: int, section: int,
                device: torch.device) -> torch.Tensor | None:
    """`ordered_items` for the persistent grid of heads x n_m single tiles (one program per SM,
    as `forward` launches it) as one int32 tensor on `device` (codes, then starts), built once per
    shape and kept. None for a new shape while a CUDA graph is being captured (a copy to the device
    is not allowed then) or once MAX_TABLES are kept: the fixed turn of pairs runs instead."""
    programs = min(heads * n_m, multiprocessors(device))
    key = (n_m, heads, programs, seq_k, block_m, block_n, section, device)
    table = _TABLES.get(key)
    if table is None:
        if len(_TABLES) >= MAX_TABLES or (device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
            return None
        codes, starts = ordered_items(n_m, heads, programs, seq_k, block_m, block_n, section)
        table = _TABLES[key] = torch.tensor(codes + starts, dtype=torch.int32, device=device)
    return table


@functools.cache
def multiprocessors(device: torch.device) -> int:
    """The GPU's SM count: the persistent kernel's grid."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """O (B, H, seq_q, d), stored (B, seq_q, H, d), and LSE (B, H, seq_q) in fp32, as
    flash_triton.triton_forward returns them; inputs as `supported` accepts them."""
    batch, heads, seq_q, head_dim = q.shape
    seq_k = k.shape[2]
    consumers = CONSUMERS[head_dim]
    block_n, stages = tiles(head_dim, consumers)
    main, tail = column_blocks(head_dim)
    (q_desc, qt_desc), (k_desc, kt_desc), (v_desc, vt_desc) = (
        block_descriptors(x, rows) for x, rows in ((q, ROWS), (k, block_n), (v, block_n)))
    o = torch.empty((batch, seq_q, heads, head_dim), dtype=q.dtype, device=q.device).transpose(1, 2)
    lse = torch.empty((batch, heads, seq_q), dtype=torch.float32, device=q.device)
    o_by_tma = stores_o_by_tma(head_dim, is_causal, consumers)
    o_desc, ot_desc = block_descriptors(o, ROWS) if o_by_tma else (None, None)
    n_m = triton.cdiv(seq_q, consumers * ROWS)
    group = heads // k.shape[1]  # query heads a K/V head serves: adjacent heads share its bytes
    pairs, persistent = schedule(head_dim, seq_k, is_causal)
    table = None  # at ORDERED_CAUSAL's head_dims, pairs become single tiles in the host's order
    if pairs and head_dim in ORDERED_CAUSAL:
        section = max(1, L2_SHARE * group // (2 * seq_k * head_dim * k.element_size()))
        table = order_table(n_m, batch * heads, seq_k, consumers * ROWS, block_n, section, q.device)
    pairs = pairs and table is None
    per_head = (n_m + 1) // 2 if pairs else n_m  # work items: pairs of query tiles, or tiles (`_work`)
    units = batch * heads * per_head
    # (items, the runs' O and LSE buffers, PIECES) of each launch: one, or the whole tiles' and the
    # runs' (`split_keys`, SPLIT_FROM_KEYS); without PIECES the buffers are LSE itself, unread, and
    # whole and parts are items and 1, so that they add no specialisations
    launches = [(units, lse, lse, False)]
    whole, parts = units, 1
    if persistent and not is_causal and seq_k >= SPLIT_FROM_KEYS.get(head_dim, math.inf):
        whole, parts = split_keys.plan(units, multiprocessors(q.device), triton.cdiv(seq_k, block_n))
        if parts > 1:
            runs = (units - whole) * parts
            runs_o, runs_lse = split_keys.buffers(runs, consumers * ROWS, head_dim, q.device)
            launches = [(whole, lse, lse, False)] * (whole > 0) + [(runs, runs_o, runs_lse, True)]
    for items, part_o, part_lse, pieces in launches:
        programs = min(items, multiprocessors(q.device)) if persistent else items
        _FWD_LAUNCH(
            (programs,), q_desc, k_desc, v_desc, qt_desc, kt_desc, vt_desc, o_desc, ot_desc, o, lse,
            lse if table is None else table, part_o, part_lse, LOG2E / math.sqrt(head_dim),  # TABLE: unread without ORDERED
            seq_q, seq_k, heads, group, n_m, per_head, items, whole if pieces else items, parts if pieces else 1,
            o.stride(0), o.stride(1), o.stride(2),
            HEAD_DIM=main, TAIL=tail or 16, SPLIT=bool(tail), BLOCK_N=block_n, STAGES=stages, CAUSAL=is_causal,
            PAIRS=pairs, ORDERED=table is not None, CONSUMERS=consumers, REGISTERS=CONSUMER_REGISTERS[consumers],
            O_BY_TMA=o_by_tma, PIECES=pieces, Q_SLOTS=query_slots(head_dim, consumers), num_warps=4,
        )
    if parts > 1:  # the runs went in a launch of their own (SPLIT_FROM_KEYS's comment says why): merge them
        split_keys.combine(runs_o, runs_lse, o, lse, whole, parts, n_m)
    return o, lse


@torch.library.custom_op("lmperf::flash_gluon_forward", mutates_args=())
def _forward_op(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    return forward(aligned(q), aligned(k), aligned(v), is_causal)


@_forward_op.register_fake
def _(q, k, v, is_causal):
    batch, heads, seq_q, head_dim = q.shape
    o = q.new_empty((batch, seq_q, heads, head_dim)).transpose(1, 2)
    return o, q.new_empty((batch, heads, seq_q), dtype=torch.float32)


def launch(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """`forward`, through the custom op where torch.compile traces (Dynamo does not trace Gluon
    launches), directly otherwise (no dispatcher cost on small shapes)."""
    if torch.compiler.is_compiling():
        return _forward_op(q, k, v, is_causal)
    return forward(q, k, v, is_causal)
