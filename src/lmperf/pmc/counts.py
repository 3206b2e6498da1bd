"""Element counts and the bounds every width reading shares: the exact element numbers that
elementwise kernels count (or store, in a compiled step), the widths N·w they read as, the slack a
GEMM's tile padding allows, and the confidences of a tied or an exact reading."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from lmperf.pmc import gemms as g
from lmperf.analysis.kernels import ATTENTION, MATMUL
from lmperf.analysis.tiles import round_up
from lmperf.pmc.kernels import category, is_generated
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.result import Inference

TIED = 0.6  # the confidence of a reading that a prior, not the counters, picked among equals
EXACT_ATTENTION = 0.01  # the relative error in the attention's counted work below which its reading is exact
SLACK = 1.35  # tile padding makes a GEMM count at most this much more than its true width
ROW_TILE = 256  # GEMMs pad the token rows too: up to a 64-128 row tile times a cluster of 2-4


def row_padding(tokens: int) -> float:
    """How much a GEMM's M = N rows can be padded: N=400 runs as 512 rows (64-row tiles, 8 of
    them for a cluster of 4x2), so widths read from the work are bounded by this factor more."""
    return round_up(tokens, ROW_TILE) / tokens


def element_counts(
    kernels: list[KernelRecord], stored_size: int | None = None, activation_size: int | None = None
) -> Counter:
    """How often each exact FFMA / FADD / FMUL count occurs among non-GEMM, non-attention kernels
    (`activation_size`: bytes of an activation, to read a count rounded up to whole blocks).

    With `stored_size` (compiled steps): the elements those kernels store instead, their global
    store bytes / the activations' element size. torch.compile fuses a residual add into the norm
    after it and pads a reduction's row to a power of two, so its float counts are sums of ops
    over padded rows (N·1024 FFMA at d=768), while each fused kernel still stores its N·w outputs
    once."""
    counts: Counter = Counter() if stored_size is None else StoredCounts()
    if stored_size is not None:
        counts.row_extra = 4 // stored_size
    for k in kernels:
        if category(k) in (MATMUL, ATTENTION):
            continue
        if stored_size is None:
            counts.update(
                _unrounded(k, v, activation_size) for v in (k.metric(g.FFMA), k.metric(g.FADD), k.metric(g.FMUL)) if v
            )
        elif k.metric(g.STORE_BYTES) and k.metric(g.STORE_BYTES) % stored_size == 0:
            counts[k.metric(g.STORE_BYTES) // stored_size] += 1
    return counts


def _unrounded(kernel: KernelRecord, count: float, activation_size: int | None) -> float:
    """The elements an eager elementwise kernel computed. Its last block runs the whole unrolled
    loop over masked loads, so its float count is rounded up to whole blocks of work (N·d =
    161,280 counts 158 blocks of 1,024 = 161,792), while its stores stay exact: the stored
    elements, where that rounding explains the difference; else the count itself."""
    if not activation_size or "elementwise_kernel" not in kernel.name or count % kernel.blocks:
        return count
    stored = kernel.metric(g.STORE_BYTES) / activation_size
    return stored if stored == int(stored) and count - count / kernel.blocks < stored < count else count


def stored_size(result: Inference, forward: list[KernelRecord]) -> int | None:
    """The element size to count stores in for a compiled step (None for an eager one, whose
    float counts are exact)."""
    return element_size(result) if is_compiled(forward) else None


def element_size(result: Inference) -> int:
    """Bytes of one activation: 4 for fp32, else 2."""
    return 4 if result.values["dtype"] == "fp32" else 2


def is_compiled(kernels: Sequence[KernelRecord]) -> bool:
    return any(is_generated(k.name) for k in kernels)


class StoredCounts(Counter):
    """Element counts read from store bytes: a norm of a training step stores beside its N·d
    outputs one fp32 statistic per row (its rstd, for the backward), `row_extra` elements a row."""

    row_extra = 0


def count_widths(count: float, tokens: int, counts: Counter) -> set[float]:
    """The widths w an element count of `counts` reads as, N·w (less a row statistic each row
    where `counts` counts stores, which may hold one)."""
    return {(count - extra * tokens) / tokens for extra in {0, getattr(counts, "row_extra", 0)}}


def exact_width(
    bound: float, tokens: int, counts: Counter, slack: float = SLACK, allow: Callable[[int], bool] | None = None
) -> int | None:
    """The one width of `best_widths`, else None (no count fits, or several fit equally well)."""
    widths = best_widths(bound, tokens, counts, slack, allow)
    return widths[0] if len(widths) == 1 else None


def best_widths(
    bound: float, tokens: int, counts: Counter, slack: float = SLACK, allow: Callable[[int], bool] | None = None
) -> list[int]:
    """The widths w in [bound/slack, bound] with N·w an element count seen most often, in order:
    one where the counts decide, several where they tie, none where no count fits; `allow`: a
    test each such width must pass (the GEMM's tiles)."""
    fits = [
        (n, alignment(w) if getattr(counts, "row_extra", 0) else 0, int(w))
        for v, n in counts.items()
        for w in count_widths(v, tokens, counts)
        if w == int(w) and bound / slack <= w <= bound * 1.0001 and (allow is None or allow(int(w)))
    ]
    if not fits:
        return []
    # A count read with and without a row statistic gives two widths two apart: the model's is
    # the one a power of two divides further (1280, not 1282 or 1278).
    best = max(fits)[:2]
    tied = sorted({w for n, twos, w in fits if (n, twos) == best})
    # Of widths that tie, one whose N·w the GEMM's work holds with no tile padding at all is named
    # by both (a Liger SwiGLU's N·d_ff beside its N·d input, under a down-projection of exactly
    # N·d·d_ff MACs); widths that fit only with padding stay undecided: an eager multiply's count
    # rounded up to whole blocks (N·5408 at d_ff 5400) is seen as often as the activation's exact
    # N·d_ff, and the wider is no likelier.
    unpadded = [w for w in tied if w * 1.0001 >= bound]
    return unpadded if len(tied) > 1 and len(unpadded) == 1 else tied


def alignment(width: float) -> int:
    """How many factors of two divide the width (up to 64-wide alignment)."""
    width, twos = int(width), 0
    while width and width % 2 == 0 and twos < 6:
        width, twos = width // 2, twos + 1
    return twos
