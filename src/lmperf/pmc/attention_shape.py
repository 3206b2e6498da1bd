"""Batch, sequence length and heads from the attention kernels of one layer.

Naive attention (Hugging Face's "eager"): the scores matmul QK^T does B·H·T·T·hd = N·T·d
multiply-adds (N = B·T tokens, d = H·hd), so T follows from it; the softmax touches B·H·T·T
elements, so H follows from its element counters (compiled, from the probabilities it stores,
with each row's statistics where autograd records the step, or from the B·H·T² scores the QK^T
product stores where the softmax stores more of what a backward keeps). Fused attention
(FlashAttention, cuDNN, memory-efficient): the launch grid holds B·H·ceil(T/tile) blocks and the
tensor counter counts 4·B·H·hd·(executed causal tile area); every (B, tile) is tried and the
candidate that explains both best wins.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass

from lmperf.analysis.kernels import SOFTMAX
from lmperf.analysis.tiles import causal_tile_fraction, ceil_div, round_up
from lmperf.pmc.gemms import (
    FADD,
    FFMA,
    FMUL,
    STORE_BYTES,
    TENSOR_PATHS,
    TMA_STORE_BYTES,
    macs,
    nvjet_tiles,
    pad_mm_rows,
    tensor_path,
)
from lmperf.pmc.kernels import category, is_template
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.vocab import SECTOR_BYTES

# PyTorch's memory-efficient attention forward (cutlass): its grid is (query tiles, H, B), so
# where the tiles leave B·H and T in doubt (2 tiles x 20 heads x 1 sequence of 72, or 1 tile x 20
# x 2 of 36) the grid's order settles it; every such kernel of the corpora launches so.
_MEM_EFFICIENT = re.compile(r"fmha_cutlassF")
# Its name declares its element type and tiles, `fmha_cutlassF_f32_aligned_64x128_rf_sm80`: 64
# query rows by 128 keys, `rf` where a head's whole output fits one tile as wide as the keys (kept
# in registers). Each product steps through its inner dimension 32 deep (cutlass's tensor-core k
# step on sm80) over whole tiles: Q·K^T 64 x 128 x the head in steps of 32, P·V 64 x 128 (the
# output padded to the tile) x a key block's keys in steps of 32. Its fp32 products run as three
# TF32 ones (big·big + big·small + small·big). A training step's log-sum-exps are rows padded to
# 32, the block of its backward.
_MEM_EFFICIENT_TILES = re.compile(r"fmha_cutlassF_(b?f\d+)_(?:not)?aligned_(\d+)x(\d+)_rf_")
_MEM_EFFICIENT_K_STEP = 32
_MEM_EFFICIENT_TF32_PASSES = 3
_LOG_SUM_EXP_ROW_ALIGN = 32
# cuDNN's fused forward (not its persistent grid, which counts SMs) runs a block per 128 query
# rows of each head, whatever tile its name declares: 4 heads in blocks of 64 query rows pass for
# 8 heads of 128 (T = 96, 8 blocks), and every such kernel of the corpora launches so.
_CUDNN_FORWARD = re.compile(r"cudnn_generated_fort_native_sdpa_sm\d+_flash_fprop")
_CUDNN_QUERY_TILE = 128
# Its name declares the head tile last (`..._64x128x128_...`), and its products run over the whole
# tile: heads of 80, 96 and 112 do the tensor work of 128 (measured exact on every such launch of
# the corpora), heads of 64 that of a 64 tile.
_CUDNN_HEAD_TILE = re.compile(r"_\d+x\d+x(\d+)_")
# A compiled softmax in a step that autograd records (lmperf's forward keeps gradients on) also
# stores each row's fp32 maximum and sum of the online softmax, from which the backward recomputes
# the probabilities: B·H·T rows of T·size + 8 bytes. It recomputes them from the QK^T product, or
# from the scaled and masked scores where the partitioner keeps those, which the softmax then
# stores as well (a second T·size a row). Where inductor splits the softmax in two, the first
# kernel stores the statistics alone (no T·size a row) and a later one applies them.
_ROW_STATISTICS_BYTES = 2 * 4
_SCORE_COPIES = {0: "", 1: "probabilities", 2: "probabilities, the masked scores"}
# A kernel that stores a value per element it computes spends a few to a few tens of float ops on
# each (every softmax of the corpora, forward and backward, at most 16 per stored byte); one that
# reduces each row of T scores to its statistics stores a few bytes a row, about 2·T ops per byte
# (171 at T = 77). Above this many ops per byte a softmax kernel stores no scores.
_STATISTICS_OPS_PER_BYTE = 32
# SDPA's math path runs a safe softmax (a row masked whole gives zeros, not NaN), which keeps a
# third statistic: one byte a row saying whether the whole row is masked.
_ROW_STATISTICS = {
    _ROW_STATISTICS_BYTES: "",
    _ROW_STATISTICS_BYTES + 1: " and a byte saying whether the row is masked whole",
}
# A Hugging Face step (its softmax in fp32, cast back to the activations' size) may also keep the
# fp32 probabilities, which the softmax's backward reads, and the one-byte keep mask of a dropout
# on them (GPT-2's attention dropout), in some layers and not in others: the softmax stores them.
_FP32_BYTES = 4
_KEEP_MASK_BYTES = 1
# An nvjet GEMM stores its A x B output tiles by TMA in boxes A values wide along the output's
# rows, each row of a box in pieces of at most 128 bytes (the span of its swizzle), and its TMA
# bytes count every 32-byte sector a piece touches: rows of 72 bf16 scores (144 B, every other
# one starting mid-sector) in boxes of 24 touch 6 sectors each, 192 B.
_TMA_PIECE_BYTES = 128
PLAUSIBLE_HEAD_DIMS = (32, 40, 48, 64, 80, 96, 112, 128, 160, 192, 256)
_TILES = (64, 128)
# A head no multiple of 8 (OpenLLaMA-3B's 100) reaches a fused kernel padded with zeros to the next
# multiple, as PyTorch's FlashAttention and memory-efficient paths load whole 16-byte vectors;
# FlashAttention-2 then runs it in the narrowest of its kernels, 32, 64, 96, ... wide, that holds it.
_HEAD_ALIGN = 8
_HEAD_STEP = 32


@dataclass(frozen=True)
class AttentionShape:
    batch: int
    seq_len: int
    n_heads: int
    head_dim: int
    error: float  # relative mismatch of the counted attention work (0 = exact)
    evidence: str
    # other (B, T, H) that explain the kernel exactly as well: the reading then rests on taking
    # the fewest sequences, not on the counters
    ties: tuple[tuple[int, int, int], ...] = ()


def _divisors(n: int) -> list[int]:
    return [b for b in range(1, n + 1) if n % b == 0]


def _whole_heads(heads: float, d: int) -> int | None:
    """`heads` as a head count: a whole number, at least 1, that divides d; else None."""
    return int(heads) if heads == int(heads) and heads >= 1 and d % int(heads) == 0 else None


def stores_row_statistics(kernel: KernelRecord) -> bool:
    """Whether a softmax kernel reduces its rows to their statistics and stores those alone, far
    fewer bytes than float ops: inductor may split a softmax into such a reduction and a kernel
    that applies the statistics, with a GEMM (the V projection) launched between the two."""
    ops = kernel.metric(FFMA) + kernel.metric(FADD) + kernel.metric(FMUL)
    stored = kernel.metric(STORE_BYTES)
    return category(kernel) == SOFTMAX and 0 < stored * _STATISTICS_OPS_PER_BYTE < ops


def scores_size(qk: KernelRecord, activation_size: int | None) -> int | None:
    """The bytes of each score a compiled softmax stores (None for an eager step, whose float
    counts are read instead): those of the QK^T product it reads. An fp32 product (FFMA and no
    tensor work, or TF32) makes fp32 scores whatever the activations' size: PyTorch's math SDPA
    upcasts 16-bit Q, K and V to fp32 (it runs heads no fused backend takes, such as 100, no
    multiple of 8), and a bf16 step's softmax then stores B·H·T² scores of 4 bytes, which
    counted as 2-byte ones read as twice the heads of half the width."""
    path = tensor_path(qk)
    if activation_size and (path == "tf32" or (path is None and qk.metric(FFMA) > 0)):
        return 4
    return activation_size


def naive_shape(
    qk: KernelRecord,
    softmax: KernelRecord,
    tokens: int,
    d: int,
    scores: list[KernelRecord] = (),
    stored_size: int | None = None,
) -> AttentionShape | None:
    """`scores`: the elementwise kernels on the score matrix around the softmax (scaling, mask
    add), which count B·H·T² elements exactly where the warp softmax counts padded rows.
    `stored_size` (a compiled step, whose softmax fuses the scaling and the mask and counts
    several ops an element): count the B·H·T² probabilities it stores, of that many bytes each,
    or those and each row's statistics where no count of probabilities alone fits, or the
    statistics alone where it stores nothing else (`stores_row_statistics`), or else the heads
    the QK^T product's own stores count (over T or pad_mm's padded T) where what a backward keeps
    of the softmax makes up its stores; a count of more heads than the product's stores hold is no reading."""
    t_est = macs(qk) / (tokens * d)
    seq_lens = [t for t in _divisors(tokens) if t <= t_est * 1.001]
    if not seq_lens:
        return None
    T = max(seq_lens)
    B = tokens // T
    # PyTorch's warp softmax pads each row to a power of two (its template's log2 length) and
    # counts the padded elements too: T=384 rows of 512.
    padded = 1 << (T - 1).bit_length()
    if stored_size:
        stored = softmax.metric(STORE_BYTES)  # the kernels around it copy K and V, not scores
        alone = stores_row_statistics(softmax)  # then it stores no score to count
        counts = {stored // stored_size} if stored and stored % stored_size == 0 and not alone else set()
    else:
        counts = {k.metric(m) for k in (softmax, *scores) for m in (FMUL, FADD, FFMA)} - {0.0}
    for count in sorted(counts):
        for row in sorted({T, padded}):
            H = _whole_heads(count / (B * T * row), d)
            if H and (not stored_size or _product_holds(qk, B, T, H, stored_size)):
                shape = "B·H·T²" if row == T else f"B·H·T·{row} (rows padded to {row})"
                return AttentionShape(
                    B,
                    T,
                    H,
                    d // H,
                    abs(t_est - T) / T,
                    f"QK^T matmul {macs(qk):,.0f} MACs = N·T·d gives T={T}; "
                    f"softmax counts {count:,.0f} = {shape} give H={H}",
                )
    if stored_size:
        fit = (stored, B, T, d, stored_size, abs(t_est - T) / T, qk)
        if alone:  # no scores stored, so none to confirm the product's stores with
            return _with_row_statistics(*fit, alone=True)
        return _with_row_statistics(*fit, alone=False) or _from_product_stores(*fit)
    return None


def _with_row_statistics(
    stored: float, B: int, T: int, d: int, size: int, error: float, qk: KernelRecord, alone: bool
) -> AttentionShape | None:
    """The heads of a compiled softmax that stores B·H·T rows of T probabilities of `size` bytes
    (and as many masked scores, or not) and the row's statistics (its fp32 maximum and sum, and a
    safe softmax's masked-row byte), or with `alone` (`stores_row_statistics`) the statistics
    alone: `stored` / (B·T·(copies·T·size + statistics)); None where no reading, or more than
    one, is a whole divisor of d that the QK^T product's stores hold."""
    fits = {}
    for copies, what in _SCORE_COPIES.items():
        if (copies == 0) != alone:
            continue
        for statistics, flag in _ROW_STATISTICS.items():
            H = _whole_heads(stored / (B * T * (copies * T * size + statistics)), d)
            if H and _product_holds(qk, B, T, H, size):
                fits[H] = (copies, what, statistics, flag)
    if len(fits) != 1:
        return None
    ((H, (copies, what, statistics, flag)),) = fits.items()
    row = {0: f"{statistics}", 1: f"(T·{size} + {statistics})"}.get(copies, f"({copies}·T·{size} + {statistics})")
    kept = f"{what} and each row's" if what else "only each row's"
    return AttentionShape(
        B,
        T,
        H,
        d // H,
        error,
        f"QK^T matmul {macs(qk):,.0f} MACs = N·T·d gives T={T}; softmax stores {stored:,.0f} B ="
        f" B·H·T·{row} B, {kept} fp32 maximum and sum{flag}, give H={H}",
    )


def _product_holds(qk: KernelRecord, B: int, T: int, H: int, size: int) -> bool:
    """Whether the QK^T product's own stores hold its B·H·T² scores of `size` bytes: a GEMM
    stores its whole product, and padded tiles or split-K partial sums only add to it, so fewer
    bytes deny H. True where it counts no stores (TMA stores in a capture without that counter)."""
    stored = stored_bytes(qk)
    return not stored or stored >= B * H * T * T * size


def _from_product_stores(
    stored: float, B: int, T: int, d: int, size: int, error: float, qk: KernelRecord
) -> AttentionShape | None:
    """H from the QK^T product's own stores, B·H·T² scores of `size` bytes with H a divisor of d
    (exactly, or as an nvjet's TMA stores count them in whole sectors: `_product_heads`), or
    B·H·T'² where inductor's pad_mm pads both of the product's T-long sides to T' (a multiple
    of 8: T=90 as 96) and slices the scores back, confirmed by the softmax's
    `stored` bytes: B·H·T rows of T scores in one of the sets of tensors a backward may keep
    (`_saved_scores`, the fewest first, which name them; H rests on the product alone), with or
    without each row's fp32 maximum and sum; else None, or where the padded and the unpadded
    product both give a confirmed H.
    Those are 8 bytes a row, never the 9 of SDPA's safe softmax: the tensors are those a Hugging
    Face eager attention keeps, whose plain softmax keeps no masked-row byte. So many sets let the
    softmax's stores alone pass for other shapes: B=3, T=64 and 16 heads store as many bytes,
    T·(2 + 1) + 8 a row, as B=1, T=96 and 32 heads with T·2 + 8."""
    product = stored_bytes(qk)
    fits = {}
    for rows in sorted({T, pad_mm_rows(T)}):
        H = _product_heads(qk, product, B, rows, size, d)
        made_up = [
            (scores, names, statistics)
            for scores, names in _saved_scores(size)
            for statistics in (0, _ROW_STATISTICS_BYTES)
            if H and stored == B * H * T * (T * sum(scores) + statistics)
        ]
        if made_up:
            fits[H] = (rows, *made_up[0])
    if len(fits) != 1:
        return None
    ((H, (rows, scores, names, statistics)),) = fits.items()
    padded = "" if rows == T else f" (T padded to {rows} by pad_mm)"
    if product != B * H * rows * rows * size:
        padded += (
            f", in boxes {_tma_box(qk)} wide counted in whole {SECTOR_BYTES}-byte sectors"
            f" ({product / (B * H * rows):g} B a row),"
        )
    return AttentionShape(
        B,
        T,
        H,
        d // H,
        error,
        f"QK^T matmul {macs(qk):,.0f} MACs = N·T·d gives T={T}; its product's {product:,.0f} B of stores"
        f" = B·H·{'T²' if rows == T else f'{rows}²'}·{size} B{padded} give H={H}; the softmax's {stored:,.0f} B of stores are"
        f" B·H·T·{_row_bytes(scores, statistics)} B: {_listed(names, statistics)}",
    )


def _product_heads(qk: KernelRecord, product: float, B: int, rows: int, size: int, d: int) -> int | None:
    """H, a divisor of d, whose B·H products of `rows` x `rows` scores of `size` bytes the QK^T
    product's `product` bytes of stores are: as TMA counts them (`_tma_score_bytes`) where an nvjet
    stores by TMA alone, else exactly; None where no H is."""
    box = _tma_box(qk)
    if box:
        fits = [H for H in _divisors(d) if _tma_score_bytes(box, B * H * rows, rows, size) == product]
        return fits[0] if fits else None
    return _whole_heads(product / (B * rows * rows * size), d)


def _tma_box(qk: KernelRecord) -> int | None:
    """The width of the boxes an nvjet GEMM that stores by TMA alone stores its output in (its
    tile's A, `_TMA_PIECE_BYTES`), or None for any other kernel."""
    tiles = nvjet_tiles(qk.name)
    return tiles[0] if tiles and qk.metric(TMA_STORE_BYTES) and not qk.metric(STORE_BYTES) else None


def _tma_score_bytes(box: int, rows: int, side: int, size: int) -> int:
    """The bytes TMA stores count for `rows` rows of `side` values of `size` bytes, laid one after
    another, in boxes `box` values wide: the 32-byte sectors each piece of a box's row touches
    (`_TMA_PIECE_BYTES`). A box narrower than a row leaves at least 16 bytes between its rows, so
    no two of them share a sector; one that spans whole rows stores them back to back, counted
    as the bytes they hold. The sectors' offsets repeat every few rows (every other row for rows
    of an odd number of 16 bytes)."""
    if side <= box:
        return rows * side * size
    step = _TMA_PIECE_BYTES // size
    pieces = [
        (start * size, min(start + step, first + box, side) * size)
        for first in range(0, side, box)
        for start in range(first, min(first + box, side), step)
    ]
    row = side * size
    period = SECTOR_BYTES // math.gcd(row, SECTOR_BYTES)
    sectors = [
        sum((r * row + end - 1) // SECTOR_BYTES - (r * row + begin) // SECTOR_BYTES + 1 for begin, end in pieces)
        for r in range(period)
    ]
    whole, rest = divmod(rows, period)
    return SECTOR_BYTES * (whole * sum(sectors) + sum(sectors[:rest]))


def _saved_scores(size: int) -> list[tuple[tuple[int, ...], tuple[str, ...]]]:
    """Each set of B·H·T² tensors a compiled softmax may store, its probabilities of `size` bytes
    first: (the bytes of a score in each, what each is)."""
    extras = [(size, "the masked scores"), (_KEEP_MASK_BYTES, "the dropout keep mask")]
    if size < _FP32_BYTES:
        extras.insert(0, (_FP32_BYTES, "their fp32 copy"))
    return [
        ((size, *(bytes_ for bytes_, _ in chosen)), ("probabilities", *(what for _, what in chosen)))
        for n in range(len(extras) + 1)
        for chosen in itertools.combinations(extras, n)
    ]


def _listed(names: tuple[str, ...], statistics: int) -> str:
    """The tensors a row holds, in words: "probabilities, the dropout keep mask and each row's
    fp32 maximum and sum"."""
    *first, last = (*names, "each row's fp32 maximum and sum") if statistics else names
    return f"{', '.join(first)} and {last}" if first else last


def _row_bytes(scores: tuple[int, ...], statistics: int) -> str:
    """A row's bytes as a formula of T: T·2, T·(2 + 4), (T·(2 + 1) + 8)."""
    row = f"T·{scores[0]}" if len(scores) == 1 else f"T·({' + '.join(map(str, scores))})"
    return f"({row} + {statistics})" if statistics else row


def _cudnn_head_tile(name: str) -> int | None:
    """The head tile a cuDNN fused forward's name declares, or None for any other kernel."""
    tile = _CUDNN_HEAD_TILE.search(name) if _CUDNN_FORWARD.search(name) else None
    return int(tile.group(1)) if tile else None


def _name_head_dims(name: str) -> set[int]:
    """Head dimensions a kernel name suggests (cuDNN ..._64x128x64_..., flash traits<64, ...>)."""
    dims = {int(m.group(3)) for m in re.finditer(r"(\d+)x(\d+)x(\d+)", name)}
    dims |= {int(m.group(1)) for m in re.finditer(r"traits<(\d+)", name)}
    return dims & set(PLAUSIBLE_HEAD_DIMS)


def _holds_head(kernel: KernelRecord, hd: int) -> bool:
    """Whether a cuDNN forward's head tile runs heads of `hd`: those up to the tile and wider than
    the next tile down (half of it), as every such launch of the corpora does; True for any other
    kernel."""
    tile = _cudnn_head_tile(kernel.name)
    return not tile or tile // 2 < hd <= tile


def _padded_head(hd: int) -> int:
    """The head width a fused attention loads: PyTorch pads a head no multiple of 8 with zeros to
    the next one (the kernels load whole 16-byte vectors) and slices the output back after."""
    return round_up(hd, _HEAD_ALIGN)


def _worked_head_dims(kernel: KernelRecord, hd: int) -> tuple[int, ...]:
    """The head widths a fused attention's products may run over: a cuDNN forward's head tile
    where it holds the head; a padded head (`_padded_head`) as padded or in the narrowest multiple
    of 32 that holds it (FlashAttention-2 runs heads in kernels 32, 64, 96, ... wide: a head of
    100, padded to 104, in the 128-wide one); else the head itself."""
    tile = _cudnn_head_tile(kernel.name)
    if tile and hd <= tile:
        return (tile,)
    padded = _padded_head(hd)
    return (hd,) if padded == hd else (padded, round_up(padded, _HEAD_STEP))


def _flops_error(kernel: KernelRecord, B: int, H: int, hd: int, T: int, query_tiles: tuple[int, ...] = _TILES) -> float:
    """Relative mismatch of the counted tensor work against B·H heads of T×T causal attention,
    over whole tiles whose query side is one of `query_tiles` (the grid's, when it gave one)."""
    return _flops_fit(kernel, B, H, hd, T, query_tiles)[0]


def _flops_fit(
    kernel: KernelRecord, B: int, H: int, hd: int, T: int, query_tiles: tuple[int, ...] = _TILES
) -> tuple[float, int]:
    """`_flops_error` and the head width of `_worked_head_dims` that fits the counted work best."""
    counted = sum(kernel.metric(m) for m in TENSOR_PATHS.values())
    if counted <= 0:
        return _simt_error(kernel, B, H, hd, T, query_tiles), hd
    return min(
        (_tensor_error(kernel, counted, B, H, worked, T, query_tiles), worked)
        for worked in _worked_head_dims(kernel, hd)
    )


def _tensor_error(
    kernel: KernelRecord, counted: float, B: int, H: int, hd: int, T: int, query_tiles: tuple[int, ...]
) -> float:
    """Relative mismatch of the `counted` tensor work against B·H heads of T×T causal attention,
    with products `hd` wide."""
    areas = [causal_tile_fraction(T, tq, tk) * T * T for tq in query_tiles for tk in _TILES] + [T * T]
    # A mask passed as a tensor (torch.compile hands SDPA its causal mask as a bias) makes the
    # kernel run every tile, the last ones padded: the whole padded square.
    areas += [round_up(T, tq) * round_up(T, tk) for tq in query_tiles for tk in _TILES]
    # fp32 kernels on TF32 tensor cores split each product into 3 (3xTF32, for fp32 accuracy).
    passes = (1, 3) if kernel.metric(TENSOR_PATHS["tf32"]) > 0 else (1,)
    return min(abs(counted - 4 * B * H * hd * area * n) / counted for area in areas for n in passes)


_SIMT_KEY_TILES = (16, 32, 64, 128)
_SIMT_UNKNOWN = 0.5  # no count to check against


def _simt_error(kernel: KernelRecord, B: int, H: int, hd: int, T: int, query_tiles: tuple[int, ...]) -> float:
    """An fp32 kernel without tensor cores (lmperf's Triton forward in fp32) runs one FFMA per
    multiply-add of its two tile products, 2·hd per score, and one or two more per score for the
    softmax (the exp2 argument's scale and shift): B·H·(2·hd + c) FFMA per executed causal tile
    element (measured: B=2, H=28, hd 64, T=129 in 64x32 tiles, c=2, exact). Only an exact fit
    counts; anything else stays unknown, as other fp32 kernels follow other schedules."""
    ffma = kernel.metric(FFMA)
    if ffma <= 0:
        return _SIMT_UNKNOWN
    fits = [
        abs(ffma - B * H * (2 * hd + extra) * causal_tile_fraction(T, tq, tk) * T * T) / ffma
        for tq in query_tiles
        for tk in _SIMT_KEY_TILES
        for extra in (0, 1, 2)
    ]
    return min(fits) if min(fits) < 1e-3 else _SIMT_UNKNOWN


def _cudnn_persistent_heads(kernel: KernelRecord, B: int, T: int) -> int | None:
    """H of a cuDNN flash forward whose grid is persistent (one block per SM, not one per tile):
    it runs 4 FFMA per row of each executed causal (128 x 128) tile pair, plus 4 per row when it
    keeps the softmax statistics for a backward pass (measured on the H100 captures: 512 FFMA per
    tile pair in forward passes at T = 128..1000, +4·T per head in training steps)."""
    if "cudnn" not in kernel.name or not kernel.metric(FFMA):
        return None
    tiles = ceil_div(T, 128)
    pairs = tiles * (tiles + 1) // 2
    for per_head in (512 * pairs, 512 * pairs + 4 * T):
        heads = kernel.metric(FFMA) / (B * per_head)
        if heads == int(heads) and heads >= 1:
            return int(heads)
    return None


_TIE = 1e-6  # below any mismatch that counts: it only orders shapes whose work fits equally


def fused_shape(kernel: KernelRecord, tokens: int, d: int, batch: int | None = None) -> AttentionShape | None:
    """The (B, T, H, hd) that best explains a fused attention kernel's grid and counts; between
    shapes that explain them equally, the one of batch `batch` where something else read it (a
    generate's decode steps)."""
    hinted = _name_head_dims(kernel.name)
    padded_heads = _padded_heads(kernel, tokens, d)
    # FlashAttention's split-KV forward (chosen when B·H·tiles leave SMs idle) runs a grid of
    # (query tiles, KV splits, B·H): each split adds blocks, not work
    split_kv = "splitkv" in kernel.name and len(kernel.grid) == 3 and "combine" not in kernel.name
    blocks = kernel.blocks // kernel.grid[1] if split_kv else kernel.blocks
    lse_heads = _log_sum_exp_heads(kernel, tokens, d)
    best: tuple[float, AttentionShape] | None = None
    scores: list[tuple[float, int, int, int]] = []
    for B in _divisors(tokens):
        T = tokens // B
        for tq in _TILES:
            H = _whole_heads(blocks / (B * ceil_div(T, tq)), d)
            if H is None:
                continue
            hd = d // H
            if hd not in PLAUSIBLE_HEAD_DIMS and H != padded_heads:
                continue  # a head of another width only where the stores show it padded
            tiles = ceil_div(T, tq)
            if split_kv and (kernel.grid[0], kernel.grid[2]) != (tiles, B * H):
                continue
            if grid_names_batch(kernel) and kernel.grid != (tiles, H, B):
                continue  # PyTorch's memory-efficient forward launches (query tiles, heads, batch)
            if _CUDNN_FORWARD.search(kernel.name) and (tq != _CUDNN_QUERY_TILE or not _holds_head(kernel, hd)):
                continue
            if (
                not split_kv
                and kernel.grid[1:] != (1, 1)
                and sorted(kernel.grid) != sorted((tiles, B, H))
                and kernel.grid != (tiles, B * H, 1)
            ):
                continue  # a 3-D grid is (query tiles, batch, heads) in some order; lmperf's
                # Triton kernel runs (query tiles, batch x heads), one query tile a (1, B·H) grid
            # the tiles that counted the grid's blocks are the ones the work was done in: with
            # any other query tile, B=2, T=154 explains the work of B=4, T=77 (64x128 tiles)
            error, worked = _flops_fit(kernel, B, H, hd, T, (tq,))
            score = (
                error
                + (0.0 if not hinted or hd in hinted else 0.1)
                + (0.1 if lse_heads and H != lse_heads else 0.0)
                + (_TIE if batch and B != batch else 0.0)
            )
            scores.append((score, B, T, H))
            if best is None or score < best[0]:
                best = (
                    score,
                    AttentionShape(
                        B,
                        T,
                        H,
                        hd,
                        error,
                        f"{kernel.grid} grid = B·H·ceil(T/{tq}) blocks{' per KV split' if split_kv else ''}"
                        " and the counted tensor work "
                        f"(causal tiles, relative error {error:.3f}) give B={B}, T={T}, H={H}"
                        + _worked_evidence(hd, worked)
                        + (f"; its stores, N·d outputs and N·H fp32 log-sum-exps, give H={H}" if lse_heads == H else "")
                        + (_padded_evidence(kernel, tokens, H, hd) if padded_heads == H else ""),
                    ),
                )
    if best is None:  # a head of another width counts only where the counters show it
        return _persistent_candidates(kernel, tokens, d) or _mem_efficient_shape(kernel, tokens, d)
    ties = sorted({(B, T, H) for score, B, T, H in scores if abs(score - best[0]) < _TIE / 2 and B != best[1].batch})
    return dataclasses.replace(best[1], ties=tuple(ties))


def _mem_efficient_shape(kernel: KernelRecord, tokens: int, d: int) -> AttentionShape | None:
    """(B, T, H, hd) of PyTorch's memory-efficient forward where no head of a plausible width fits
    it (heads of 100 in fp32, 400 B, whole 16-byte loads, so unpadded): its grid (query tiles, H,
    B) names B and H, its stores are the N·d outputs of heads d / H wide (and a training step's
    log-sum-exps), and its counted tensor work is exactly its schedule's at that head
    (`_mem_efficient_ops`); else None. That work runs the head in steps of 32, so it holds heads
    of 97 to 128 alike: the width itself is d / H."""
    tiles = _mem_efficient_tiles(kernel)
    if tiles is None or len(kernel.grid) != 3:
        return None
    size, rows, _ = tiles
    query_tiles, H, B = kernel.grid
    if tokens % B or d % H or query_tiles != ceil_div(tokens // B, rows):
        return None
    T, hd = tokens // B, d // H
    counted = sum(kernel.metric(m) for m in TENSOR_PATHS.values())
    masks = [
        causal for causal in (True, False) if counted and _mem_efficient_ops(tiles, B, H, hd, T, causal) == counted
    ]
    stores = _mem_efficient_stores(kernel, size, B, H, T, d)
    if not masks or not stores:
        return None
    return AttentionShape(
        B,
        T,
        H,
        hd,
        0.0,
        f"{kernel.grid} grid = (ceil(T/{rows}), H, B) names B={B}, H={H}, so T={T} and heads of {hd};"
        f" its {counted:,.0f} tensor ops are exactly its {'causal' if masks[0] else 'masked'} schedule's"
        f" over heads of {hd} in steps of {_MEM_EFFICIENT_K_STEP}; its {stored_bytes(kernel):,.0f} B of"
        f" stores are {stores}",
    )


def _mem_efficient_tiles(kernel: KernelRecord) -> tuple[int, int, int] | None:
    """(bytes of an element, query rows, keys) of a memory-efficient forward's tiles, from its
    name (`_MEM_EFFICIENT_TILES`); None for any other kernel."""
    tiles = _MEM_EFFICIENT_TILES.search(kernel.name)
    if tiles is None:
        return None
    return (_FP32_BYTES if tiles.group(1) == "f32" else 2), int(tiles.group(2)), int(tiles.group(3))


def _mem_efficient_ops(tiles: tuple[int, int, int], B: int, H: int, hd: int, T: int, causal: bool) -> int | None:
    """The tensor ops a memory-efficient forward of `tiles` (`_mem_efficient_tiles`) counts over
    B·H heads of `hd` and T tokens: each query tile runs the key blocks up to its last row
    (causal) or to T (a mask passed as a tensor, as torch.compile passes it), each block Q·K^T
    over the whole tile with the head in steps of 32, and P·V over the tile's output width with
    the block's keys in steps of 32; 2 ops a multiply-add, 3 TF32 passes in fp32. None for heads
    wider than its one output tile."""
    size, rows, keys = tiles
    if hd > keys:
        return None
    head = round_up(hd, _MEM_EFFICIENT_K_STEP)
    multiply_adds = 0
    for start in range(0, T, rows):
        seen = min(start + rows, T) if causal else T
        for first in range(0, seen, keys):
            multiply_adds += rows * keys * (head + round_up(min(keys, seen - first), _MEM_EFFICIENT_K_STEP))
    passes = _MEM_EFFICIENT_TF32_PASSES if size == _FP32_BYTES else 1
    return 2 * passes * B * H * multiply_adds


def _mem_efficient_stores(kernel: KernelRecord, size: int, B: int, H: int, T: int, d: int) -> str:
    """What a memory-efficient forward's stores hold where they are its B·T·d outputs of `size`
    bytes, with or without the fp32 log-sum-exps of B·H rows padded to 32; "" where neither."""
    outputs = B * T * d * size
    rows = round_up(T, _LOG_SUM_EXP_ROW_ALIGN)
    if stored_bytes(kernel) == outputs:
        return f"its N·d outputs of {size} B, heads unpadded"
    if stored_bytes(kernel) == outputs + B * H * rows * _FP32_BYTES:
        return f"its N·d outputs of {size} B, heads unpadded, and B·H·{rows} fp32 log-sum-exps"
    return ""


def _worked_evidence(hd: int, worked: int) -> str:
    """How the products' head width differs from the head, for the evidence."""
    if worked == hd:
        return ""
    if _padded_head(hd) != hd:
        return f" (heads of {hd} padded to {_padded_head(hd)}, its products {worked} wide)"
    return f" (heads of {hd} padded to its {worked}-wide tile)"


def _padded_evidence(kernel: KernelRecord, tokens: int, H: int, hd: int) -> str:
    """What a forward's stores of padded heads (`_padded_heads`) hold, for the evidence."""
    outputs = f"N·H heads padded to {_padded_head(hd)}"
    if kernel.metric(STORE_BYTES) % (tokens * H * _padded_head(hd)):
        outputs += " and N·H fp32 log-sum-exps"
    return f"; its {kernel.metric(STORE_BYTES):,.0f} B of stores, {outputs}, give H={H}"


def _padded_heads(kernel: KernelRecord, tokens: int, d: int) -> int | None:
    """H of a fused forward whose heads are no multiple of 8 (`_padded_head`): its stores are the
    N·H padded heads of 2 or 4 bytes, and N·H fp32 log-sum-exps where it keeps those, which no
    unpadded head stores; None where no H, or more than one, stores so."""
    stored = kernel.metric(STORE_BYTES)
    fits = {
        H
        for H in _divisors(d)
        if _padded_head(d // H) != d // H
        for size in (2, 4)
        if stored in (tokens * H * _padded_head(d // H) * size, tokens * H * (_padded_head(d // H) * size + 4))
    }
    return fits.pop() if stored and len(fits) == 1 else None


def _log_sum_exp_heads(kernel: KernelRecord, tokens: int, d: int) -> int | None:
    """H of a fused forward that keeps each row's log-sum-exp for the backward pass and stores
    with st.global (a Triton kernel): N·d outputs of 2 or 4 bytes, then N·H fp32 statistics. The
    N·H term is where H shows apart from B and T; None where the stores are not so made up (a
    forward pass keeps no statistics, a TMA store counts no bytes)."""
    stored = kernel.metric(STORE_BYTES)
    for size in (2, 4):
        extra = stored - tokens * d * size
        if extra > 0 and extra % (4 * tokens) == 0 and d % (extra // (4 * tokens)) == 0:
            return extra // (4 * tokens)
    return None


def _persistent_candidates(kernel: KernelRecord, tokens: int, d: int) -> AttentionShape | None:
    """A persistent cuDNN grid (fewer blocks than tiles) says nothing of B·H: H from its FFMA."""
    best = None
    for B in _divisors(tokens):
        T = tokens // B
        H = _cudnn_persistent_heads(kernel, B, T)
        if H is None or d % H or d // H not in PLAUSIBLE_HEAD_DIMS:
            continue
        if kernel.blocks >= B * H * ceil_div(T, 128):
            continue  # not persistent: the grid itself counts the tiles
        error = _flops_error(kernel, B, H, d // H, T)
        if best is None or error < best.error:
            best = AttentionShape(
                B,
                T,
                H,
                d // H,
                error,
                f"persistent cuDNN grid {kernel.grid}: FFMA {kernel.metric(FFMA):,.0f}"
                f" = B·H·512 per causal 128-tile pair gives H={H}; tensor work "
                f"(relative error {error:.3f}) gives B={B}, T={T}",
            )
    return best


# The rotary embedding's angle table: inverse frequencies times positions, an outer product (K=1)
# in fp32 that Hugging Face's Llama-family models run as a tiny matmul and store with st.global:
# (1, T, w) angles for a forward's shared positions, (B, T, w) where each sequence has its own
# (a padded batch, generate), w = the rotated dimensions / 2 (head_dim / 2 unless rotary is partial).
_ANGLE_BYTES = 4
_TABLE_WORK = 1e6  # multiply-adds: far below any projection's N·d·w, far above T·w


def _angle_table_fits(stored: float, batch: int, seq_len: int, head_dim: int) -> bool:
    half = head_dim // 2
    for rows in (seq_len, batch * seq_len):
        w = stored / (_ANGLE_BYTES * rows)
        if w == int(w) and 0 < w <= half and half % int(w) == 0:
            return True
    return False


def untie_by_rotary_table(shape: AttentionShape, kernels: list[KernelRecord]) -> AttentionShape:
    """Where equal fits tie across B, the rotary angle table's stores (T·w or B·T·w angles) may
    allow only one of them: that one, with the table as its evidence; else `shape` unchanged."""
    tables = [k for k in kernels if 0 < macs(k) < _TABLE_WORK and (k.metrics.get(STORE_BYTES) or 0) > 0]
    return _untie(
        shape,
        tables,
        lambda stored, B, T: _angle_table_fits(stored, B, T, shape.head_dim),
        "the rotary angle table's {:,.0f} B of fp32 stores (T or B·T positions x a divisor of head_dim/2)",
    )


# torch.compile hands SDPA its causal mask as a tensor, built by a kernel of its own: T x T
# entries, or B x T x T, of bool, 16- or 32-bit floats, each row padded to whole 16 bytes.
_MASK_SIZES = (1, 2, 4)
_MASK_ROW_ALIGN = 16


def _mask_fits(stored: float, batch: int, seq_len: int) -> bool:
    for size in _MASK_SIZES:
        row = round_up(seq_len * size, _MASK_ROW_ALIGN)
        for width in {seq_len * size, row}:
            if stored in (seq_len * width, batch * seq_len * width):
                return True
    return False


def _mask_kernels(kernels: list[KernelRecord]) -> list[KernelRecord]:
    """The kernels that may have built a causal mask: they store and do no arithmetic."""
    return [
        k
        for k in kernels
        if (k.metrics.get(STORE_BYTES) or 0) > 0 and not macs(k) and not any(k.metric(m) for m in (FFMA, FADD, FMUL))
    ]


def untie_by_causal_mask(shape: AttentionShape, kernels: list[KernelRecord]) -> AttentionShape:
    """Where equal fits tie across B, a kernel between the Q/K/V projections and the attention
    that does no arithmetic and stores one causal mask (T·T or B·T·T entries) may allow only one
    of them: that one, with the mask as its evidence; else `shape` unchanged."""
    return _untie(
        shape, _mask_kernels(kernels), _mask_fits, "the causal mask's {:,.0f} B of stores (T x T or B x T x T entries)"
    )


def grid_names_batch(kernel: KernelRecord) -> bool:
    """Whether a fused attention's grid names B and H themselves: PyTorch's memory-efficient
    forward launches (query tiles, heads, batch)."""
    return bool(_MEM_EFFICIENT.search(kernel.name))


def template_pins_products(qk: KernelRecord, shape: AttentionShape, size: int | None) -> bool:
    """Whether a QK^T run as inductor's Triton bmm template pins a naive reading whose work its
    padded tiles leave loose: the template launches (output tiles, batches, 1), so its grid counts
    the B·H products, and its masked stores are exactly their B·H·T² scores of `size` bytes,
    which give T (and B = N/T) whatever the tiles."""
    products = shape.batch * shape.n_heads
    return (
        bool(size)
        and is_template(qk.name)
        and qk.grid[1:] == (products, 1)
        and stored_bytes(qk) == products * shape.seq_len**2 * size
    )


def mask_fits(kernels: list[KernelRecord], batch: int, seq_len: int) -> bool:
    """Whether one of `kernels` (those between the Q/K/V projections and the attention) stores a
    causal mask of B = `batch` sequences of `seq_len` tokens."""
    return any(_mask_fits(k.metrics[STORE_BYTES], batch, seq_len) for k in _mask_kernels(kernels))


def stored_bytes(kernel: KernelRecord) -> float:
    """The bytes a fused attention kernel stores, by st.global and by TMA together."""
    return kernel.metric(STORE_BYTES) + kernel.metric(TMA_STORE_BYTES)


def stores_fit(kernel: KernelRecord, tokens: int, width: int, heads: int, size: int) -> bool | None:
    """Whether a fused attention forward's stores are what N = `tokens` rows of an attention
    `width` wide store: its N·width outputs of `size` bytes, with or without the N·H fp32
    log-sum-exps a backward pass needs, or those statistics alone (cuDNN stores its output by
    TMA, which captures made before the TMA counter joined the metric list do not count); heads
    no multiple of 8 store their outputs padded (`_padded_head`). TMA clips a tile's rows past N,
    so cuDNN's 128-row tiles store N rows exactly. None where the stores say nothing: none
    counted, or FlashAttention's split-KV forward, whose partial sums are stored too. Every fused
    attention of the corpora stores so."""
    stored = stored_bytes(kernel)
    if not stored or "splitkv" in kernel.name:
        return None
    out, statistics = tokens * width * size, 4 * tokens * heads
    padded = tokens * heads * _padded_head(width // heads) * size if width % heads == 0 else out
    return stored in (out, out + statistics, padded, padded + statistics, statistics)


def stores_deny(kernel: KernelRecord, tokens: int, width: int, size: int) -> bool:
    """Whether a fused attention forward's stores deny N = `tokens` rows of an attention `width`
    wide whatever its heads: `stores_fit` is False for every head count of a plausible head_dim.
    Only the log-sum-exps depend on H, so the N·width outputs judge a reading that no (B, T, H)
    of the grid fits: a max-autotune Qwen3's norms of four rows a program over 64 rows of d 2048
    read N=16 from their grids, at which cuDNN's 16 blocks would be heads of 256 its 128-wide head
    tile cannot hold, and its 262,144 B of stores are not 16·4096 outputs of 2 B. Heads of
    another width count where the stores show them padded (`_padded_heads`)."""
    heads = {width // hd for hd in PLAUSIBLE_HEAD_DIMS if width % hd == 0} | {_padded_heads(kernel, tokens, width)}
    return {stores_fit(kernel, tokens, width, H, size) for H in heads if H} == {False}


def _untie(shape: AttentionShape, kernels: list[KernelRecord], fits_stores, what: str) -> AttentionShape:
    """The one of `shape`'s equal fits across B whose (B, T) `fits_stores`(bytes, B, T) of one of
    `kernels`, with `what` (formatted with those bytes) added to its evidence; `shape` unchanged
    where none or several fit."""
    if not shape.ties:
        return shape
    fits: dict[tuple[int, int, int], float] = {}  # (B, T, H) -> the first kernel's bytes it explains
    for B, T, H in ((shape.batch, shape.seq_len, shape.n_heads), *shape.ties):
        for k in kernels:
            if fits_stores(k.metrics[STORE_BYTES], B, T):
                fits.setdefault((B, T, H), k.metrics[STORE_BYTES])
    if len(fits) != 1:
        return shape
    (((B, T, H), stored),) = fits.items()
    others = "; ".join(f"B={b}, T={t}, H={h}" for b, t, h in ((shape.batch, shape.seq_len, shape.n_heads), *shape.ties))
    return dataclasses.replace(
        shape,
        batch=B,
        seq_len=T,
        n_heads=H,
        head_dim=shape.n_heads * shape.head_dim // H,
        ties=(),
        evidence=f"{shape.evidence.rsplit(' give B=', 1)[0]} fit {others} equally; "
        f"only B={B}, T={T} explains {what.format(stored)}",
    )
