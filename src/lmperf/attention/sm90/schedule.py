"""The persistent forward's schedule: which query tiles each SM's program takes, and in what order.

One program per SM takes work items in turn. Non-causal, an item is a query tile, all of equal
cost. Causal, a tile's cost grows with its index, so items are either pairs of tiles k and
n_m - 1 - k (every pair costs the same) taken in a fixed turn, or single tiles in an order the
host builds once per shape (`ordered_items`, `order_table`): longest first, each to the program
with the least work so far, so that the last round holds short tiles.

A non-causal last round that leaves most SMs idle is split instead (`split_plan`): its tiles each
run as `parts` runs over a share of their keys, one run a program (FlashDecoding's split over
keys, for the last round only), merged after the kernel (sm90.combine).

The host side builds the order and the plan; the Gluon functions at the end are the kernel's
side of the same contract, shared by the forward's producer and consumers.
"""

from __future__ import annotations

import functools
import heapq
import threading

import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@functools.cache
def multiprocessors(device: torch.device) -> int:
    """The GPU's SM count: the persistent kernels' grid."""
    return torch.cuda.get_device_properties(device).multi_processor_count


def ordered_items(n_m: int, heads: int, programs: int, seq_k: int, block_m: int, block_n: int,
                  section: int, tile_cost: float) -> tuple[list[int], list[int]]:
    """(codes, starts): every causal query tile of `heads` (batch x head) x n_m, coded as
    batch_head * n_m + tile, and each program's run of them, codes[starts[p]:starts[p + 1]].

    The heads go in sections of `section`; within one, tiles with the most key tiles first (tile
    t reads ceil(min(seq_k, (t + 1) * block_m) / block_n)), head after head at each rank; each
    tile to the program with the least work so far (`tile_cost` per tile beside its key tiles;
    ties to the lower program). A program runs its tiles in the order they came, so the tiles at
    work at once stay within a section or two and share their K and V in the L2."""
    key_tiles = [-(-min(seq_k, (t + 1) * block_m) // block_n) for t in range(n_m)]
    by_cost = sorted(range(n_m), key=lambda t: -key_tiles[t])
    loads = [(0.0, p) for p in range(programs)]
    runs = [[] for _ in range(programs)]
    for first in range(0, heads, section):
        for t in by_cost:
            for bh in range(first, min(heads, first + section)):
                load, p = heapq.heappop(loads)
                runs[p].append(bh * n_m + t)
                heapq.heappush(loads, (load + key_tiles[t] + tile_cost, p))
    starts = [0]
    for run in runs:
        starts.append(starts[-1] + len(run))
    return [code for run in runs for code in run], starts


# Tables are never freed: a CUDA graph captured with one, or a kernel still running on another
# stream, reads it by address. Past this many shapes (a few KB each) new shapes run the pairs.
MAX_TABLES = 1024
_TABLES: dict = {}  # (shape key, device) -> an ordered forward's int32 table on that device


def order_table(n_m: int, heads: int, seq_k: int, block_m: int, block_n: int, section: int, tile_cost: float,
                device: torch.device) -> torch.Tensor | None:
    """`ordered_items` for the persistent grid (one program per SM, at most one a tile) as one
    int32 tensor on `device` (codes, then starts), built once per shape and kept. None for a new
    shape while a CUDA graph is being captured (no copy to the device is allowed then) or once
    MAX_TABLES are kept: the caller runs pairs in a fixed turn instead."""
    programs = min(heads * n_m, multiprocessors(device))
    key = (n_m, heads, programs, seq_k, block_m, block_n, section, tile_cost, device)
    table = _TABLES.get(key)
    if table is None:
        if len(_TABLES) >= MAX_TABLES or (device.type == "cuda" and torch.cuda.is_current_stream_capturing()):
            return None
        codes, starts = ordered_items(n_m, heads, programs, seq_k, block_m, block_n, section, tile_cost)
        table = _TABLES[key] = _kept_tensor(codes + starts, device)
    return table


def _kept_tensor(values: list[int], device: torch.device) -> torch.Tensor:
    """values as an int32 tensor on `device`, allocated and filled by a thread of its own.

    A thread that warms up a CUDA graph (torch.compile's mode="reduce-overhead") allocates from
    that graph's private pool, whose blocks the graph's outputs reuse and whose live blocks it
    checks against its outputs: a table kept for good would be overwritten there, or fail the
    check. The caching allocator routes a pool's allocations by thread, so another thread's land
    in the ordinary pool; that thread waits for its copy, so the caller's stream reads it whole."""
    made: list = []

    def make():
        try:
            table = torch.tensor(values, dtype=torch.int32, device=device)
            if device.type == "cuda":
                torch.cuda.current_stream(device).synchronize()
            made.append(table)
        except Exception as error:  # handed to the caller's thread
            made.append(error)

    worker = threading.Thread(target=make, name="lmperf-order-table")
    worker.start()
    worker.join()
    if isinstance(made[0], Exception):
        raise made[0]
    return made[0]


def split_plan(tiles: int, programs: int, key_tiles: int) -> tuple[int, int]:
    """(whole, parts): the first `whole` query tiles run whole and each of the others as `parts`
    runs over their key tiles, so that the last round has a run for as many programs as it can.
    parts is 1 (nothing split) when the tiles fill every round, when the last round is more than
    half full (two runs a tile would not fit the programs), or with a single key tile."""
    last = tiles % programs
    if last == 0:
        return tiles, 1
    parts = min(programs // last, key_tiles)
    if parts < 2:
        return tiles, 1
    return tiles - last, parts


def key_range(part: int, parts: int, key_tiles: int) -> tuple[int, int]:
    """[first, stop) key tiles of run `part` of `parts` over `key_tiles` (runs differ by at most one
    tile), as the forward kernel's `_key_span` computes them."""
    return part * key_tiles // parts, (part + 1) * key_tiles // parts


# ----------------------------------------------------------------------------- the kernel's side


@gluon.jit
def turn(TABLE, items, ORDERED: gl.constexpr):
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
def table_code(TABLE, item, ORDERED: gl.constexpr):
    """The table's entry for work item `item` with ORDERED (read one item ahead, so that its
    latency passes under the item before; TABLE[items], read past a program's last item, is the
    first run's start), else 0."""
    if ORDERED:
        return gl.load(TABLE + item)
    return item * 0


@gluon.jit
def _run_of(item, whole, parts, PIECES: gl.constexpr):
    """(work unit, run, runs) of item `item`: with PIECES every item is a run over the keys of one
    of the query tiles from `whole` on (`split_plan`), item r x parts + p being run p of unit
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
def _work(item, half, n_m, per_head, code, PAIRS: gl.constexpr, ORDERED: gl.constexpr):
    """The query tile and batch x head of work item `item` (its half `half`, 0 or 1, with PAIRS),
    and whether it exists. An item is one query tile (per_head = n_m of them per batch x head),
    or with PAIRS (causal) a pair, query tiles k and n_m - 1 - k (per_head = ceil(n_m / 2)):
    every pair costs the same, n_m + 1 tiles' worth of keys, so programs that take pairs in turn
    stay level; the middle tile of an odd n_m is a pair's only half. Items are numbered head by
    head, so the programs at work at once share few heads' K/V. With ORDERED the item is the
    query tile the host's table holds at `item` (`code`: batch x head times n_m plus the tile,
    `ordered_items`)."""
    if ORDERED:
        return code % n_m, code // n_m, half == 0
    bh = item // per_head
    k = item % per_head
    if PAIRS:
        tile_m = k + (1 - half) * (n_m - 1 - 2 * k)  # half 0: the later tile, with more keys
        return tile_m, bh, (half == 0) | (2 * k != n_m - 1)
    return k, bh, half == 0


@gluon.jit
def _key_span(run, runs, n_tiles):
    """[first, stop) of the key tiles run `run` of `runs` reads (`key_range`)."""
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
def work_item(item, code, half, whole, parts, n_m, per_head, PAIRS: gl.constexpr, ORDERED: gl.constexpr,
              PIECES: gl.constexpr):
    """Work item `item` (its half `half` with PAIRS): its query tile, batch x head, whether it
    exists, and which run of how many over the tile's keys it is (`_run_of`)."""
    unit, run, runs = _run_of(item, whole, parts, PIECES)
    tile_m, bh, exists = _work(unit, half, n_m, per_head, code, PAIRS, ORDERED)
    return tile_m, bh, exists, run, runs


@gluon.jit
def tile_keys(tile_m, bh, run, runs, H, seq_k, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
              CAUSAL: gl.constexpr, PIECES: gl.constexpr):
    """An existing work item's batch, head, first row, and the key tiles [first_tile, n_tiles)
    it reads (a run of a split tile reads its share of them; split tiles are non-causal)."""
    b, h, start_m, n_tiles = _tile_coordinates(tile_m, bh, H, seq_k, BLOCK_M, BLOCK_N, CAUSAL)
    first_tile = 0
    if PIECES:
        first_tile, n_tiles = _key_span(run, runs, n_tiles)
    return b, h, start_m, first_tile, n_tiles
