"""The vocabulary V from the LM head and the kernels around it.

Tensor-pipe work counts padded tiles, so the LM head's work only bounds V (by rows x columns of
padding). Counters of bytes pin it when one of them sees the N·V logits exactly:
- the loss's log-softmax FFMA count (training steps);
- lmperf's fused loss's row kernel, one program per row of logits: it overwrites each row with
  its gradient and stores the row's fp32 loss, st.global bytes = rows·(V·size + 4);
- the head's requested st.global bytes: fp32 GEMMs and 16-bit ones whose V is no multiple of 8
  (F.linear probes show it); a serial split-K cutlass head (grid z = its slices) stores the
  output once a slice and a 4-byte semaphore a slice for each output tile (2·N·V·2 B plus 9,432 B
  = 2 x 4 B x 1,179 tiles of 128 x 128 over 301 rows);
- an fp32 SIMT head split along k whose slices' partial sums meet in a workspace of whole tiles:
  its st.global bytes, N·V·4 + 4·FADD, with FADD = (z - 1)·padded rows·padded V;
- a Hopper TMA-store head (st.global bytes 0): the bytes its TMA stores send to L2, or the L2
  write sectors from the SMs (x 32 bytes), when they are a whole number of N·bytes rows;
- the fp32 copy of the logits that follows the head (Hugging Face generate's last-position
  logits, a training loss's upcast): st.global bytes = N·V·4. Only a forward kernel counts: the
  backward's copies after the head cast the logits' gradient to the logits' own 16-bit dtype
  (N·V·2 B, which read as an fp32 copy of V/2 logits) or copy other tensors;
- the L2 read sectors of the copy of the head's weight just before it (inductor's pad_mm pads
  the rows to a multiple of 8; the copy reads the V x d source once): V·d·size bytes;
- the 16-bit copy of the head's weight that precedes it where the weights are kept in fp32 and
  autocast (a compiled graph casts each weight just before its GEMM): st.global bytes = V·d·size.
  It stands after the head's own bytes, which are not always N·V·size: TMA stores count whole
  32-byte sectors, and rows or column tiles that start off a sector boundary touch more of them
  (an nvjet head named 400x64 stores 16% more).
Each reading counts only when it lies in the head's work bound; else V is an interval, narrowed
to the 8 values below a multiple of 8 where the kernel just before the head copies its weight
padded to that many rows (inductor's pad_mm).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from lmperf.analysis.kernels import MATMUL
from lmperf.analysis.tiles import ceil_div
from lmperf.pmc.kernels import category
from lmperf.pmc import gemms as g
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.result import Inference

# L2 write sectors that came from the SMs; absent from captures collected before it joined
# collect's metric list.
L2_WRITE_SECTORS = "lts__t_sectors_srcunit_tex_op_write.sum"
L2_READ_SECTORS = "lts__t_sectors_srcunit_tex_op_read.sum"
SECTOR_BYTES = 32
_FOLLOWERS = 12  # kernels after the head that may hold its loss or the fp32 copy of its logits


def loss_vocab(kernels: list[KernelRecord], tokens: int) -> int | None:
    """V from the loss's log-softmax (PyTorch's cunn_SoftMaxForward*): one block per row, and
    FFMA per row = 5·V + 11·blockDim (calibrated on this corpus's H100 captures, 4 variants)."""
    for k in kernels:
        if "SoftMaxForward" in k.name and k.grid[0] == tokens and k.metric(g.FFMA):
            vocab = (k.metric(g.FFMA) / tokens - 11 * k.threads_per_block) / 5
            if vocab == int(vocab) and vocab > 0:
                return int(vocab)
    return None


FUSED_LOSS_ROWS_KERNEL = "_cross_entropy_rows_kernel"  # lmperf.ops.cross_entropy_rows_triton
LOSS_BYTES_PER_ROW = 4


def fused_loss_vocab(kernels: list[KernelRecord], size: int) -> int | None:
    """V from lmperf's fused loss's row kernel: (st.global bytes / rows - 4) / size, its rows
    the kernel's programs (a chunk of the N token rows)."""
    for k in kernels:
        if k.name.startswith(FUSED_LOSS_ROWS_KERNEL) and k.grid[0]:
            row_bytes = g.stored_width(k, k.grid[0], 1)
            if row_bytes and row_bytes > LOSS_BYTES_PER_ROW:
                return g.whole(row_bytes - LOSS_BYTES_PER_ROW, size)
    return None


def store_vocab(head: KernelRecord, tokens: int, size: int) -> int | None:
    """V from the head's requested st.global bytes, N·V·size (not a split-K head's: its slices
    store more)."""
    return g.stored_width(head, tokens, size) if head.grid[2] == 1 else None


_CUTLASS_TILE = re.compile(r"cutlass\w*?_(\d+)x(\d+)_")
SEMAPHORE_BYTES = 4


def split_k_vocab(head: KernelRecord, tokens: int, size: int) -> int | None:
    """V from a serial split-K cutlass head (grid z: its slices): each slice stores the N x V
    output of `size` bytes (a partial sum, then the total) and a 4-byte semaphore for each output
    tile of its name's size (exact on five GPT-2 heads of 90 to 333 rows in 128 x 128 tiles).
    The bytes grow with V, so at most one V fits each way the tile may lie; None unless exactly
    one V fits."""
    slices, stored, match = head.grid[2], head.metrics.get(g.STORE_BYTES), _CUTLASS_TILE.search(head.name)
    if slices < 2 or not stored or not match or stored % slices:
        return None
    per_slice, found = stored // slices, set()
    for rows, cols in {(int(match[1]), int(match[2])), (int(match[2]), int(match[1]))}:
        vocab = int(per_slice // (tokens * size))
        while vocab > 0:
            bytes_ = tokens * vocab * size + SEMAPHORE_BYTES * ceil_div(tokens, rows) * ceil_div(vocab, cols)
            if bytes_ < per_slice:
                break
            if bytes_ == per_slice:
                found.add(vocab)
            vocab -= 1
    return found.pop() if len(found) == 1 else None


def split_k_sums_vocab(head: KernelRecord, tokens: int) -> int | None:
    """V from an fp32 SIMT head split along k into z slices (grid z) whose partial sums meet in a
    workspace: z - 1 slices store their sums over whole output tiles there (rows padded to the
    tile, V padded to whole column tiles), one FADD an element adds them in, and the N x V output
    follows, so st.global bytes = N·V·4 + 4·FADD and FADD = (z - 1)·padded rows·padded V
    (cuBLAS's xmma GEMMs of 64 x 64 tiles over V = 32,000 and of 128 x 128 tiles over V = 32,064,
    whose workspace is 32,128 wide, z = 2). V only where the stores give a whole number whose
    padded tiles the FADD count is, with the rows on either side of the tile the name declares."""
    slices, summed = head.grid[2], head.metric(g.FADD)
    if g.simt_tile(head) is None or slices < 2 or not summed:
        return None
    vocab = g.whole(head.metric(g.STORE_BYTES) - 4 * summed, tokens * 4)
    if vocab is None or vocab <= 0:  # no stores counted, or fewer than the sums alone
        return None
    padded = {(slices - 1) * outputs for outputs in g.simt_padded_outputs(head, tokens, vocab)}
    return vocab if summed in padded else None


def tma_vocab(head: KernelRecord, tokens: int, size: int) -> tuple[int, str] | None:
    """V from a TMA-store head: its TMA store bytes, else its L2 write sectors (a TMA store's
    rows of V·size bytes start 16-byte aligned, so V is a multiple of 8)."""
    if head.metrics.get(g.STORE_BYTES) != 0:
        return None
    for metric, scale, how in (
        (g.TMA_STORE_BYTES, 1, "its TMA store bytes"),
        (L2_WRITE_SECTORS, SECTOR_BYTES, "its L2 write sectors x 32 B"),
    ):
        count = head.metrics.get(metric)
        vocab = g.whole(count * scale if count else None, tokens * size)
        if vocab and vocab % 8 == 0:
            return vocab, f"{how} = N·V·{size} B"
    return None


def copy_vocabs(kernels: Sequence[KernelRecord], rows: int, size: int) -> list[int]:
    """V from each copy kernel whose st.global bytes are a whole number of rows·size: after the
    head (N rows of 4 bytes), one of them is the fp32 copy of the logits; before it (d rows of
    the compute dtype's bytes), the cast of its weight. The caller keeps the one in the head's
    bound; the others copy other tensors (generate's growing token ids, other weights)."""
    found = [g.stored_width(k, rows, size) for k in kernels if category(k) != MATMUL and "copy" in k.name.lower()]
    return [vocab for vocab in found if vocab]


def _copied_rows(leaders: Sequence[KernelRecord], tokens: int, d: int, size: int) -> int | None:
    """The d-wide rows the kernel just before the head stores with st.global where it may copy
    the head's weight: no GEMM, and no final norm storing the N token rows. Only the last kernel
    counts: a compiled autocast graph casts every weight just before its GEMM, the MLP's d-wide
    ones too."""
    if not leaders or category(leaders[-1]) == MATMUL:
        return None
    rows = g.stored_width(leaders[-1], d, size)
    return rows if rows and rows != tokens else None


def padded_weight_vocab(
    leaders: Sequence[KernelRecord], tokens: int, d: int, size: int, low: int, high: int
) -> int | None:
    """V rounded up to a multiple of 8, from the kernel just before the head where it copies the
    head's weight padded so (inductor's pad_mm: 50,257 rows stored as 50,264 x d): its rows
    (`_copied_rows`) a multiple of 8 in [low, high]. V lies within the 8 below it; a cast of an
    unpadded weight whose V is a multiple of 8 gives the same."""
    padded = _copied_rows(leaders, tokens, d, size)
    return padded if padded and padded % g.PAD_MM_ROWS == 0 and low <= padded <= high else None


def copied_weight_vocab(leaders: Sequence[KernelRecord], tokens: int, d: int, size: int) -> int | None:
    """V from the L2 read sectors of the kernel just before the head where it copies the head's
    weight (`_copied_rows`; pad_mm pads the rows to a multiple of 8): it reads the V x d source
    once, V·d·size bytes in whole 32-byte sectors when a row is whole sectors (a cast from fp32
    reads twice the bytes, 2V, which the head's work bound refuses)."""
    if (d * size) % SECTOR_BYTES or not _copied_rows(leaders, tokens, d, size):
        return None
    return g.whole((leaders[-1].metrics.get(L2_READ_SECTORS) or 0) * SECTOR_BYTES, d * size)


def readings(
    head: KernelRecord,
    followers: list[KernelRecord],
    tokens: int,
    dtype: str | None,
    leaders: Sequence[KernelRecord] = (),
    d: int | None = None,
    gradients: Collection[KernelRecord] = (),
) -> list[tuple[int, str]]:
    """Every exact reading of V, strongest first, each with how it was read: `leaders` are the
    kernels before the head, d the model width, `gradients` the followers a backward pass runs."""
    size = 4 if dtype == "fp32" else 2
    found = [
        (loss_vocab(followers[:_FOLLOWERS], tokens), "the loss's log-softmax FFMA count"),
        (
            fused_loss_vocab(followers[:_FOLLOWERS], size),
            f"lmperf's fused loss stores rows·(V·{size} + 4) B",
        ),
        (store_vocab(head, tokens, size), f"its global store bytes = N·V·{size} B"),
        (
            split_k_vocab(head, tokens, size),
            f"its global store bytes = {head.grid[2]} split-K slices x (N·V·{size} B + 4 B a tile)",
        ),
        (
            split_k_sums_vocab(head, tokens) if size == 4 else None,
            f"its global store bytes = N·V·4 B + 4 B for each FADD, which adds {head.grid[2] - 1} split-K"
            " slice(s)' sums over whole tiles (padded rows x padded V),",
        ),
    ]
    tma = tma_vocab(head, tokens, size)
    if tma:
        found.append(tma)
    # the fp32 copy is a forward's upcast: a backward's copy of N·V·2 B (a 16-bit step's gradient
    # of the logits) reads as V/2, which the head's bound may hold (25,136 lies between the tile
    # readings 16,641-16,768 and 49,921-50,304 of a compiled OPT step's 128 rows)
    backward = {id(k) for k in gradients}
    found += [
        (vocab, "the fp32 copy of the logits after it stores N·V·4 B")
        for vocab in copy_vocabs([k for k in followers[:_FOLLOWERS] if id(k) not in backward], tokens, 4)
    ]
    if d:
        found.append(
            (copied_weight_vocab(leaders, tokens, d, size), f"the copy of its weight before it reads V·d·{size} B")
        )
    if d and size == 2:
        # nearest the head first: a compiled autocast graph casts every weight just before its
        # GEMM, so the down-projection's d_ff x d cast may come a few kernels before the head's
        found += [
            (vocab, f"the {size}-byte copy of its weight before it stores V·d·{size} B")
            for vocab in copy_vocabs(leaders[-_FOLLOWERS:][::-1], d, size)
        ]
    return [(v, how) for v, how in found if v]


def set_vocab(
    result: Inference,
    head: KernelRecord,
    followers: list[KernelRecord],
    tokens: int,
    low: float,
    bound: float,
    leaders: Sequence[KernelRecord] = (),
    d: int | None = None,
    gradients: Collection[KernelRecord] = (),
    tiles: Sequence[tuple[int, int]] = (),
) -> bool:
    """Set V from the first exact reading inside [low, bound]: the interval the head's tiles
    allow, else its work bound (`gradients`: as `readings` takes them). Where the head's tiles
    give `tiles`, one reading per tiling, V must lie inside one of them too: [low, bound] spans
    the gaps between disjoint readings, and a V there contradicts the head's work."""
    for vocab, how in readings(head, followers, tokens, result.values["dtype"], leaders, d, gradients):
        held = not tiles or any(near <= vocab <= far * 1.0001 for near, far in tiles)
        if low <= vocab <= bound * 1.0001 and held:
            result.set(
                "vocab_size",
                vocab,
                0.9,
                f"LM head {g.macs(head):,.0f} MACs bound V by {bound:.0f}; {how} gives V={vocab}",
            )
            return True
    return False
