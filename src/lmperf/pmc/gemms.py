"""The GEMMs of a capture: their work in multiply-adds and the layer structure they repeat.

Work of a GEMM: tensor-pipe counters count 2 ops per multiply-add of whole tiles (a 512-wide
output run with 48-wide tiles in clusters of 4 counts 576 columns); fp32 GEMMs without tensor
cores count one FFMA per multiply-add (plus one per output element and split for the epilogue).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from lmperf.analysis.kernels import ATTENTION, LOSS, MATMUL, OPTIMIZER, SOFTMAX
from lmperf.analysis.tiles import ceil_div, round_up
from lmperf.pmc.kernels import category, is_backward, is_generated, tensor_work
from lmperf.pmc.parse import FADD as FADD
from lmperf.pmc.parse import FFMA, TENSOR_PATHS, Capture, KernelRecord

FMUL = "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"
STORE_BYTES = "sm__sass_data_bytes_mem_global_op_st.sum"  # absent from older captures
# Bytes a Hopper TMA store sends to L2 (a cuBLAS nvjet or cuDNN epilogue); absent from captures
# collected before it joined collect's metric list.
TMA_STORE_BYTES = "l1tex__m_l1tex2xbar_write_bytes_mem_global_op_tma_st.sum"
# A GEMM this much smaller than the typical one is bookkeeping (rotary tables), not a layer.
_TINY = 0.02


def tensor_path(kernel: KernelRecord) -> str | None:
    """The tensor-pipe source type a kernel used most, or None without tensor work."""
    return kernel.derive("tensor_path", _tensor_path)


def _tensor_path(kernel: KernelRecord) -> str | None:
    best = max(TENSOR_PATHS, key=lambda path: kernel.metric(TENSOR_PATHS[path]))
    return best if kernel.metric(TENSOR_PATHS[best]) > 0 else None


def macs(kernel: KernelRecord) -> float:
    """Multiply-adds a GEMM kernel executed (tile padding included)."""
    return kernel.derive("macs", _macs)


def _macs(kernel: KernelRecord) -> float:
    tensor = tensor_work(kernel)
    return tensor / 2 if tensor > 0 else kernel.metric(FFMA)


def simt_widths(kernel: KernelRecord, tokens: int, k: int) -> list[int]:
    """Output widths w that could explain an fp32 SIMT GEMM (no tensor work) with N=`tokens` rows
    and inner size k: it runs N·w·k FFMA, plus N·w more when its epilogue scales with an FFMA
    (some cuBLAS xmma variants do, others not). Both readings are whole numbers when k divides w,
    and a kernel that computes whole tiles (seen for LM heads: V=50257 counted as 50432) reads as a
    padded width; the caller confirms a reading with other evidence."""
    if tensor_path(kernel) is not None or not kernel.metric(FFMA):
        return []
    ffma = kernel.metric(FFMA)
    return sorted({int(w) for w in (ffma / (tokens * k), ffma / (tokens * (k + 1))) if w == int(w)})


def tile_extent(name: str) -> int | None:
    """The larger side of the output tile a GEMM kernel's name declares (`..._128x256_...`,
    `tilesize64x256x8`), i.e. how far tile padding can round a width up; None if unnamed."""
    match = re.search(r"(?:tilesize|_)(\d+)x(\d+)(?:x\d+)?_", name)
    return max(int(match.group(1)), int(match.group(2))) if match else None


# `nvjet_sm90_tst_AxB_KxS_CxD_...`: an A x B output tile, K-deep steps along the inner size (S
# stages of them), clusters of C x D
_NVJET = re.compile(r"nvjet_\w*?_(\d+)x(\d+)_(\d+)x\d+_(\d+)x(\d+)_[hv]_")
# cuBLAS's fp32 SIMT GEMMs (`sm80_xmma_gemm_f32f32_..._tilesize128x128x8_..._ffma`) run whole
# tiles too: FFMA = (rows padded) x (width padded) x k, measured exact on a fused QKV projection
_SIMT_TILE = re.compile(r"(?:xmma_gemm_f32f32\w*?_tilesize|_simt_sgemm_)(\d+)x(\d+)(?:x\d+)?_")


# Inference reads a GEMM's name for its tiles hundreds of times a capture, and a capture repeats
# a few dozen names: each is read once.
@functools.lru_cache(maxsize=8192)
def nvjet_tiles(name: str) -> tuple[int, int, int, int, int] | None:
    """An nvjet name's A, B, K, C and D (`nvjet_sm90_tst_AxB_KxS_CxD_...`), or None."""
    nvjet = _NVJET.search(name)
    return tuple(map(int, nvjet.groups())) if nvjet else None  # type: ignore[return-value]


@functools.lru_cache(maxsize=8192)
def simt_name_tile(name: str) -> tuple[int, int] | None:
    """The output tile an fp32 SIMT GEMM name declares, or None."""
    simt = _SIMT_TILE.search(name)
    return (int(simt[1]), int(simt[2])) if simt else None


def simt_tile(kernel: KernelRecord) -> tuple[int, int] | None:
    """The output tile an fp32 SIMT GEMM's name declares (`..._tilesize64x256x8_...`), or None."""
    return simt_name_tile(kernel.name) if tensor_path(kernel) is None else None


def width_readings(kernel: KernelRecord, tokens: int, k: int) -> list[tuple[int, int]]:
    """Intervals [low, high], one per reading, one of which holds the output width of a cuBLAS nvjet
    (or fp32 SIMT xmma) GEMM with N=`tokens` rows and inner size k. An nvjet name
    `nvjet_sm90_tst_AxB_KxS_CxD_...` declares an A x B tile in clusters of C x D;
    its work is (rows padded to one side's tile x cluster) x (width padded to the other's) x k.
    Which side holds the rows is not in the name, nor reliably in the grid (both seen on the H100
    captures, and grids of the same tile count fit either), so both readings count."""
    nvjet = nvjet_tiles(kernel.name) if tensor_path(kernel) else None
    simt = simt_tile(kernel) if kernel.metric(FFMA) else None
    if nvjet:
        a, b, depth, c, d = nvjet
        tile_rows, tile_cols = a * c, b * d
        # its tensor work runs whole K-deep steps: k = 1120 counts as 1152 in steps of 64
        inners = (round_up(k, depth),)
    elif simt:
        tile_rows, tile_cols = simt
        # an fp32 SIMT GEMM may spend one more FFMA per output element in its epilogue (k + 1)
        inners = (k, k + 1)
    else:
        return []
    readings = []
    for inner in inners:
        for rows, cols in ((tile_rows, tile_cols), (tile_cols, tile_rows)):
            padded = macs(kernel) / (inner * round_up(tokens, rows))
            if padded == int(padded) and padded % cols == 0:
                readings.append((int(padded) - cols + 1, int(padded)))
    if nvjet and "splitK" in kernel.name:
        readings += _split_k_nvjet_readings(kernel, tokens, k, *nvjet)
    return readings


def _split_k_nvjet_readings(
    kernel: KernelRecord, tokens: int, k: int, a: int, b: int, depth: int, c: int, d: int
) -> list[tuple[int, int]]:
    """Width readings of a split-K nvjet GEMM whose s slices each run whole K-deep steps of their
    share of k: 3 slices of k = 4096 in steps of 64 run 1408 each, 4224 in all (a Qwen3's output
    projection over an attention 4096 wide). s is no part of the name; the grid pins it: s times
    the output tiles' CTAs, clusters of C x D CTAs of A x B tiles, is every CTA it launched."""
    readings = []
    for slices in range(2, min(kernel.blocks, ceil_div(k, depth)) + 1):  # each slice runs a step or more
        inner = slices * ceil_div(k, slices * depth) * depth
        if kernel.blocks % slices or inner == round_up(k, depth):
            continue
        for (rows, row_cluster), (cols, col_cluster) in (((a, c), (b, d)), ((b, d), (a, c))):
            row_tiles = ceil_div(tokens, rows * row_cluster) * row_cluster
            padded = macs(kernel) / (inner * row_tiles * rows)
            if padded != int(padded) or padded % (cols * col_cluster):
                continue
            if slices * row_tiles * int(padded) // cols == kernel.blocks:
                readings.append((int(padded) - cols * col_cluster + 1, int(padded)))
    return readings


def tiles_allow(kernel: KernelRecord, tokens: int, k: int, width: int) -> bool:
    """Whether N=`tokens` rows of output `width` and inner size k explain a GEMM's work in the
    tiles its name declares. An nvjet name counts against a width: it declares tiles and
    clusters exactly; so does a split-K fp32 SIMT GEMM's (`split_k_simt_allows`). Another fp32
    SIMT GEMM's epilogue leaves readings out."""
    if split_k_simt(kernel):
        return split_k_simt_allows(kernel, tokens, k, width)
    if not (tensor_path(kernel) and nvjet_tiles(kernel.name)):
        return True
    return readings_hold(kernel, tokens, k, width)


def readings_hold(kernel: KernelRecord, tokens: int, k: int, width: int) -> bool:
    """Whether one of `width_readings` holds `width` (False where the name declares no tiles)."""
    return any(low <= width <= high for low, high in width_readings(kernel, tokens, k))


# A split-K slice's share of k, rounded up to a whole number of these elements: 8 on cuBLAS's
# xmma kernels, 1 or 2 on cutlass's simt_sgemm (every split-K SIMT GEMM of the corpora fits one)
_SLICE_ALIGNMENTS = (1, 2, 4, 8)


def simt_padded_outputs(kernel: KernelRecord, tokens: int, width: int) -> set[int]:
    """The outputs an fp32 SIMT GEMM of named tiles computes for N=`tokens` rows of `width`
    columns: rows and columns each padded to whole tiles, with the rows on either side of the
    tile the name declares."""
    a, b = simt_tile(kernel)
    return {round_up(tokens, rows) * round_up(width, cols) for rows, cols in ((a, b), (b, a))}


def split_k_simt(kernel: KernelRecord) -> bool:
    """Whether a GEMM is an fp32 SIMT one of named tiles split along k (grid z = its slices)."""
    return kernel.grid[2] > 1 and simt_tile(kernel) is not None


def split_k_simt_allows(kernel: KernelRecord, tokens: int, k: int, width: int) -> bool:
    """Whether a split-K fp32 SIMT GEMM (grid z = s slices) of named tiles ran N=`tokens` rows of
    output `width` with inner size k: its FFMA are (rows padded) x (width padded) x (s slices of
    ceil(k / s) rounded up to an alignment), plus none, one or one a slice for its epilogue."""
    slices, ffma = kernel.grid[2], kernel.metric(FFMA)
    for outputs in simt_padded_outputs(kernel, tokens, width):
        for align in _SLICE_ALIGNMENTS:
            inner = round_up(ceil_div(k, slices), align) * slices
            if any(outputs * (inner + extra) == ffma for extra in (0, 1, slices)):
                return True
    return False


def whole(total: float | None, unit: int) -> int | None:
    """total / unit when it is a positive whole number, else None."""
    return int(total // unit) if total and total % unit == 0 else None


def stored_width(kernel: KernelRecord, rows: int, size: int) -> int | None:
    """The width w of a kernel that stores rows x w elements of `size` bytes with st.global: its
    store bytes / (rows·size) when that is a positive whole number, else None (a TMA store
    counts 0 bytes there, a split-K GEMM its partial sums too)."""
    return whole(kernel.metrics.get(STORE_BYTES), rows * size)


def output_width(kernel: KernelRecord, rows: int, size: int) -> int | None:
    """The width w of a GEMM that stores its rows x w output of `size` bytes once: from its
    st.global bytes, or where it stores with TMA (0 st.global bytes), its TMA store bytes (TMA
    clips a tile at the tensor's edge, so padded rows and columns store nothing). None for a
    split-K GEMM, whose TMA stores are its slices' fp32 partial sums."""
    width = stored_width(kernel, rows, size)
    if width or kernel.metrics.get(STORE_BYTES) != 0 or "splitk" in kernel.name.lower() or kernel.grid[2] > 1:
        return width
    return whole(kernel.metrics.get(TMA_STORE_BYTES), rows * size)


# Inductor's pad_mm pass may pad a GEMM's rows to a multiple of 8 before a template runs it (100
# token rows stored as 104), so a template's stores hold rows or rows rounded up to this.
PAD_MM_ROWS = 8


def pad_mm_rows(rows: int) -> int:
    """The rows pad_mm rounds a GEMM's `rows` up to."""
    return round_up(rows, PAD_MM_ROWS)


def padded_output_width(kernel: KernelRecord, rows: int, size: int) -> int | None:
    """`output_width` over the rows as given, else over those pad_mm rounds them up to: a GEMM
    whose input inductor padded stores the padded rows too (152 of 150 by TMA)."""
    return output_width(kernel, rows, size) or output_width(kernel, pad_mm_rows(rows), size)


def reduced_widths(kernel: KernelRecord, after: KernelRecord | None, rows: int, size: int) -> dict[int, int]:
    """The output widths w of a split-K GEMM whose slices cuBLAS sums in the splitKreduce kernel
    launched right `after` it, each with the rows it is read over: the GEMM's own TMA stores are
    its slices' fp32 partial sums, and the reduction scales each output once (one FMUL) and stores
    it once, rows x w values of `size` bytes, over the rows as given or as pad_mm rounds them up
    to (96 of 90). Empty where its stores are not one value an FMUL (with a bias its epilogue
    stores more: 6 B an output in bf16), or without such a reduction."""
    if after is None or "splitKreduce" not in after.name or category(kernel) != MATMUL:
        return {}
    outputs = after.metric(FMUL)
    if not outputs or after.metrics.get(STORE_BYTES) != outputs * size:
        return {}
    widths = {whole(outputs, n): n for n in sorted({pad_mm_rows(rows), rows}, reverse=True)}
    return {w: n for w, n in widths.items() if w}


def stores_whole_outputs(kernel: KernelRecord, rows: int, width: int, size: int) -> bool:
    """Whether a GEMM that stores with st.global (an inductor template) stored a whole number of
    rows x width outputs of `size` bytes (rows as given or padded by pad_mm): its epilogue may
    store a second tensor beside the product, never a part of one, nor three more (80 rows of
    1024 fp32 values are no 20-row product's four). True where it counts no store
    bytes (a TMA store)."""
    stored = kernel.metrics.get(STORE_BYTES)
    padded = pad_mm_rows(rows)
    return not stored or any(whole(stored, n * width * size) in (1, 2) for n in {rows, padded})


def simt_inner_sizes(kernel: KernelRecord, tokens: int, width: int) -> set[int]:
    """The inner sizes an fp32 SIMT GEMM of named whole tiles, with N=`tokens` rows and a known
    output `width`, can have: its FFMA are (rows padded) x (width padded) x (k + e), the epilogue
    e being 0, 1, or one per split-K slice (grid z) as seen on the H100 captures."""
    if not simt_tile(kernel) or not kernel.metric(FFMA):
        return set()
    sizes = set()
    for outputs in simt_padded_outputs(kernel, tokens, width):
        padded = kernel.metric(FFMA) / outputs
        if padded == int(padded):
            sizes |= {int(padded) - extra for extra in {0, 1, kernel.grid[2]}}
    return sizes


def width_interval(kernel: KernelRecord, tokens: int, k: int) -> tuple[int, int] | None:
    """The interval that holds every reading of `width_readings`, or None without one."""
    return outer_span(width_readings(kernel, tokens, k))


def outer_span(readings: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The interval that holds every one of `readings`, or None without one."""
    return (min(r[0] for r in readings), max(r[1] for r in readings)) if readings else None


@dataclass(frozen=True)
class Phases:
    """Kernels of the forward pass, the backward pass and the optimizer, in launch order."""

    forward: list[KernelRecord]
    backward: list[KernelRecord]
    optimizer: list[KernelRecord]


def split_phases(capture: Capture) -> Phases:
    """Forward ends at the first gradient or optimizer kernel (AdamW/SGD by name)."""
    kernels = capture.kernels
    optimizer = [k for k in kernels if category(k) == OPTIMIZER]

    def gradient_or_optimizer(k: KernelRecord) -> bool:
        return is_backward(k.name) or category(k) == OPTIMIZER

    end = next((i for i, k in enumerate(kernels) if gradient_or_optimizer(k)), len(kernels))
    # Inductor names a forward kernel after a backward op it fuses there (the final LayerNorm of
    # a compiled GPT-NeoX step also computes a term of its backward): generated kernels so named
    # before the forward's loss do not end the forward, which runs to its loss.
    loss = next((i for i, k in enumerate(kernels) if category(k) == LOSS and not is_backward(k.name)), None)
    if (
        loss is not None
        and loss > end
        and all(is_generated(k.name) for k in kernels[end:loss] if gradient_or_optimizer(k))
    ):
        end = next((i for i in range(loss, len(kernels)) if gradient_or_optimizer(kernels[i])), len(kernels))
    # A fused linear cross-entropy (lmperf's, Liger's) runs the LM head's gradient GEMMs right
    # after its loss kernel, before any kernel named a gradient: the backward starts at the first
    # GEMM after the loss, whether or not the range reaches a named gradient kernel (no forward
    # runs a GEMM after its loss).
    if loss is not None and loss < end:
        end = next((i for i in range(loss + 1, end) if category(kernels[i]) == MATMUL), end)
    backward = [k for k in kernels[end:] if category(k) != OPTIMIZER]
    return Phases(kernels[:end], backward, optimizer)


def forward_gemms(forward: list[KernelRecord]) -> list[KernelRecord]:
    """Forward GEMMs big enough to be model layers (drops rotary-table and similar matmuls)."""
    gemms = [k for k in forward if category(k) == MATMUL and macs(k) > 0]
    if not gemms:
        return []
    typical = sorted(macs(k) for k in gemms)[len(gemms) // 2]
    before = {id(k): forward[i - 1] for i, k in enumerate(forward) if i}
    return [k for k in gemms if macs(k) >= _TINY * typical and not _sums_slices(k, before.get(id(k)))]


# cuBLAS may sum a split-K fp32 GEMM's slices in a second xmma GEMM launched right after it, one
# FFMA an output (128 padded rows x 2816 = 360,448 after 380,633,088): no layer GEMM of its own
_SLICE_SUM = 0.01


def _sums_slices(kernel: KernelRecord, before: KernelRecord | None) -> bool:
    """Whether a GEMM launch sums the slices of the split-K fp32 GEMM launched right `before` it."""
    return (
        before is not None
        and tensor_path(kernel) is None
        and category(before) == MATMUL
        and before.grid[2] > 1
        and macs(kernel) < _SLICE_SUM * macs(before)
    )


# max-autotune may run one layer's GEMM as a Triton template and the same GEMM of another layer on
# cuBLAS: the same product in other tiles, so their counted work differs by the padding alone.
_TEMPLATE_PADDING = 0.25


# A template may also pad a few hundred token rows to its 128-row tiles (160 rows counted as 256:
# 1.6 times the cuBLAS GEMM of another layer), up to twice the work. So loose a match tiles the
# layers only where the attention kernels' count fixes the period, and it marks a last GEMM as a
# layer's (a range cut inside a layer) only where that GEMM is not the forward's largest, as an
# LM head is (a fused gate and up may come within twice a head's work: Phi-3's 2·8192 against 32064).
_TEMPLATE_ROW_PADDING = 0.5


def same_layer_gemm(a: KernelRecord, b: KernelRecord, loose: bool = True) -> bool:
    """Whether two GEMM launches could be the same layer GEMM: the same kernel and work, or (one
    a max-autotune template, the other not, or two templates named after other epilogues: layer
    0's QKV fuses the embedding's add, layer 1's does not) the same work up to a template's row
    padding (`loose`) or its tile padding."""
    if a.name != b.name and (is_generated(a.name) or is_generated(b.name)):
        padding = _TEMPLATE_ROW_PADDING if loose else _TEMPLATE_PADDING
        return abs(macs(a) - macs(b)) <= padding * max(macs(a), macs(b))
    return a.name == b.name and abs(macs(a) - macs(b)) <= 1e-6 * macs(b)


def _tiles(works: list[float], templates: list[bool], p: int, pinned: bool = False) -> bool:
    """Whether period p tiles `works`: equal works, or within a template's padding where one of
    the two is a generated template's (`templates`). `pinned` (the attention fixes p): within a
    template's row padding wherever a template is one of the two, for two templates of one GEMM
    may have been tuned to different tiles."""

    def same(i: int, j: int) -> bool:
        if pinned and (templates[i] or templates[j]):
            tolerance = _TEMPLATE_ROW_PADDING
        else:
            tolerance = _TEMPLATE_PADDING if templates[i] != templates[j] else 1e-6
        return abs(works[i] - works[j]) <= tolerance * max(works[i], works[j])

    return len(works) % p == 0 and all(same(i, i % p) for i in range(len(works)))


def layer_period(works: list[float], templates: list[bool] | None = None) -> int | None:
    """The shortest period p that tiles `works` exactly (len % p == 0), or None; where one of two
    works compared is a generated template's (`templates`), within its tile padding."""
    templates = templates or [False] * len(works)
    return next((p for p in range(1, len(works) + 1) if _tiles(works, templates, p)), None)


@dataclass(frozen=True)
class Layers:
    """The repeated block: its GEMMs (one layer), the count, and the LM head after them."""

    n_layers: int
    layer_gemms: list[KernelRecord]
    lm_head: KernelRecord
    first_layer: list[KernelRecord]  # every forward kernel of the first layer, in order


def find_layers(forward: list[KernelRecord], attention_layers: int | None = None) -> Layers | None:
    """Layers from the periodic GEMM sequence; the last forward GEMM is the LM head.
    `attention_layers`: how many layers' attention runs before it, which lets templates padded
    past the usual bound still tile one layer's GEMMs."""
    gemms = forward_gemms(forward)
    if len(gemms) < 2:
        return None
    head, body = gemms[-1], gemms[:-1]
    works, templates = [macs(k) for k in body], [is_generated(k.name) for k in body]
    period = layer_period(works, templates)
    if attention_layers and (period is None or len(body) != period * attention_layers):
        per_layer = len(body) // attention_layers
        if per_layer and _tiles(works, templates, per_layer, pinned=True):
            period = per_layer
    if period is None:
        return None
    n_layers = len(body) // period
    start = body[0].index
    stop = body[period].index if n_layers > 1 else head.index
    first_layer = [k for k in forward if start <= k.index < stop]
    return Layers(n_layers, body[:period], head, first_layer)


def attention_marker(kernels: list[KernelRecord]) -> tuple[str, KernelRecord] | None:
    """The fused attention kernel, or the softmax of naive attention, in a layer's kernels."""
    for k in kernels:
        cls = category(k)
        if cls in (ATTENTION, SOFTMAX):
            return cls, k
    return None
