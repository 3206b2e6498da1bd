"""The K/V heads: the K (or fused QKV) projection's output width in whole heads, read from its
tiles, its own stores and the kernels that rotate, reduce or count its outputs."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from lmperf.pmc import gemms as g
from lmperf.pmc.attention_shape import (
    AttentionShape,
)
from lmperf.analysis.kernels import ATTENTION, MATMUL
from lmperf.pmc.kernels import category
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.result import Inference
from lmperf.pmc.counts import SLACK, count_widths, element_size, exact_width, row_padding
from lmperf.pmc.roles import ACTIVATION, before_attention


def kv_heads(result, roles, tokens, d, shape: AttentionShape, counts: Counter) -> None:
    qkv = roles["qkv"]
    hd = shape.head_dim
    heads = [kv for kv in range(1, shape.n_heads + 1) if shape.n_heads % kv == 0]
    q = shape.n_heads * hd
    if len(qkv) >= 3:
        kernel, what, q_width = qkv[1], "K projection", 0
        kv_of = {kv * hd: kv for kv in heads}
    else:
        kernel, what = qkv[-1], "fused QKV projection"
        q_width = q if len(qkv) == 1 else 0  # one fused GEMM, or Q apart and K, V fused
        kv_of = {q_width + 2 * kv * hd: kv for kv in heads}
    size = element_size(result)
    rotated = _rotated_widths(roles, tokens, size)
    apart = _rotated_apart(roles, tokens, q, size)
    in_turn = _rotated_in_turn(roles)
    # a split-K GEMM's output is stored by the reduction that sums its slices: the projection's own
    # N·w values, where its tiles (both ways round, in padded areas alike) leave several widths
    reduced = g.reduced_widths(kernel, _launched_after(roles, kernel), tokens, size)
    witnessed = (
        {
            width: f"only {width} is what the split-K reduction after it stores: {reduced[width]} rows x "
            f"{width} values of {size} B, one FMUL each"
            + (f" (N = {tokens} rows padded by pad_mm)" if reduced[width] != tokens else "")
            for width in kv_of
            if width in reduced
        }
        or {
            width: f"only {width} has a kernel after it store N·{q + kv * hd} = N·(q + k) elements: "
            f"q and k of {kv} K/V heads (rotated)"
            for width, kv in kv_of.items()
            if q + kv * hd in rotated
        }
        or {
            width: f"only {width} has a kernel after it store N·{width} elements: the fused product "
            f"copied whole, q and the k and v of {kv} K/V heads"
            for width, kv in kv_of.items()
            if q_width and width in rotated
        }
        or {
            width: f"only {width} has a kernel after it rotate N·{kv * hd} elements at the float work per "
            f"element (FADD and FMUL) of the one that rotates q's N·{q}: k of {kv} K/V heads, rotated apart"
            for width, kv in kv_of.items()
            if kv * hd in apart
        }
        or {
            width: f"only {width} has the kernels that rotate k repeat those that rotate q op for op at "
            f"{kv}/{shape.n_heads} of their float work: k of {kv} K/V heads, rotated in turn"
            for width, kv in kv_of.items()
            if Fraction(kv, shape.n_heads) in in_turn
        }
        or {
            width: f"only {width} is what its epilogue's FADD ({kernel.metric(g.FADD):,.0f} = N·{width}) "
            f"counts: one bias added to each output, {kv} K/V heads"
            for width, kv in kv_of.items()
            # a split-K GEMM (grid z) may add per slice: its FADD is no count of outputs
            if kernel.grid[2] == 1 and g.whole(kernel.metric(g.FADD), tokens) == width
        }
    )
    if q_width:
        # d-wide tensors count N·2d and N·3d (a norm storing two N·d rows, or running two or three
        # float ops an element): the fused widths of H/2 and H K/V heads, which no count then tells
        counts = _counts_off_multiples(counts, tokens, d)
    width = _width(result, "n_kv_heads", kernel, tokens, d, counts, what, hd, tuple(kv_of), witnessed)
    if width is None:
        low, high = result.intervals.pop("n_kv_heads")
        result.bound("n_kv_heads", kv_of[low], kv_of[high], 0.5, result.evidence["n_kv_heads"])
        return
    kv_width = width if len(qkv) >= 3 else (width - q_width) // 2
    kv_heads = max(1, min(shape.n_heads, kv_width // hd))
    confidence = result.confidence["n_kv_heads"]
    result.set(
        "n_kv_heads",
        kv_heads,
        confidence,
        f"K/V width {kv_width} / head_dim {hd}; " + result.evidence["n_kv_heads"],
    )


def _width(
    result: Inference,
    name: str,
    kernel: KernelRecord,
    tokens: int,
    d: int,
    counts: Counter,
    what: str,
    multiple: int = 1,
    allowed: tuple = (),
    witnessed: dict[int, str] | None = None,
) -> int | None:
    """The output width of a projection GEMM with inner size d (a multiple of `multiple`).
    `witnessed`: allowed widths that a store elsewhere confirms, and how. Where the GEMM's tile
    readings leave several allowed widths and no count picks one of them, the width is only
    bounded: None, with the interval recorded under `name`."""
    bound = g.macs(kernel) / (tokens * d)
    readings = g.width_readings(kernel, tokens, d)
    span = g.outer_span(readings)
    fitting = sorted({w for w in allowed for low, high in readings if low <= w <= high})
    tiles = f"{what}: {g.macs(kernel):,.0f} MACs of {kernel.name[:40]} tiles put the width in {readings}"
    if len(fitting) == 1:
        result.set(
            name, fitting[0], 0.9, f"{tiles}; of the widths whole K/V head counts allow, only {fitting[0]} lies there"
        )
        return fitting[0]
    seen = [w for w in fitting if w in (witnessed or {})]
    if len(seen) == 1:
        result.set(name, seen[0], 0.9, f"{tiles}; of the widths {fitting} there, {witnessed[seen[0]]}")
        return seen[0]
    # A GEMM's own output stores, with st.global (a max-autotune Triton template) or TMA (cuBLAS's
    # nvjet kernels), hold N·w elements exactly; counts of other tensors can pass for N·w within
    # the padding bound (a T x T causal mask: 4,096 = N·64 at N = T = 64)
    size = element_size(result)
    own, slices = g.output_width(kernel, tokens, size), 1
    if own not in allowed and kernel.grid[2] > 1:
        # a split-K GEMM (cuBLAS's xmma kernels, a slice per grid z) stores each slice's
        # partial product, N·w fp32 values a slice
        slices = kernel.grid[2]
        own = g.whole(kernel.metrics.get(g.STORE_BYTES), tokens * 4 * slices)
    padded_low = bound / (SLACK * row_padding(tokens))
    if own in allowed and padded_low <= own <= bound * 1.0001 and (not fitting or own in fitting):
        result.set(
            name,
            own,
            0.9,
            f"{what}: {g.macs(kernel):,.0f} MACs bound it by {bound:.0f}; the GEMM's own "
            + ("TMA " if kernel.metrics.get(g.STORE_BYTES) == 0 else "")
            + "store bytes = "
            + (f"{slices} split-K slices x N·{own}·4 B" if slices > 1 else f"N·{own}·{size} B"),
        )
        return own
    simt = g.simt_widths(kernel, tokens, d)
    simt = [w for w in simt if w % multiple == 0]
    if len(simt) == 1:
        result.set(
            name,
            simt[0],
            0.9,
            f"{what}: fp32 SIMT GEMM, {g.macs(kernel):,.0f} FFMA = "
            f"N·{simt[0]}·{'(d + 1)' if simt[0] * d * tokens != g.macs(kernel) else 'd'} "
            f"(the only reading that is a whole number of {multiple}-wide heads)",
        )
        return simt[0]
    # a split-K fp32 SIMT GEMM's tiles and slices hold its FFMA exactly (`g.split_k_simt_allows`)
    simt_split_k = not span and g.split_k_simt(kernel)
    split = [w for w in allowed if g.tiles_allow(kernel, tokens, d, w)] if simt_split_k else []
    if len(split) == 1:
        result.set(
            name,
            split[0],
            0.9,
            f"{what}: fp32 SIMT GEMM in {kernel.grid[2]} split-K slices, {g.macs(kernel):,.0f} FFMA: of the "
            f"widths whole K/V head counts allow, only {split[0]} fills its tiles and slices so",
        )
        return split[0]
    heads = [w for w in range(span[0], span[1] + 1) if w % multiple == 0] if span else []
    if len(heads) == 1:
        result.set(
            name,
            heads[0],
            0.9,
            f"{what}: {g.macs(kernel):,.0f} MACs of {kernel.name[:40]} "
            f"tiles put the width in [{span[0]}, {span[1]}], one whole number of "
            f"{multiple}-wide heads: {heads[0]}",
        )
        return heads[0]
    exact = exact_width(bound, tokens, counts, SLACK * row_padding(tokens))
    # a count of another tensor (a norm storing two N·d rows: N·2048 at d=1024) can lie between
    # the tile readings: with allowed widths in them, only one of those can be the width
    if exact and (exact in fitting if fitting else not span or span[0] <= exact <= span[1]):
        result.set(
            name,
            exact,
            0.9,
            f"{what}: {g.macs(kernel):,.0f} MACs bound it by {bound:.0f}; "
            f"elementwise counts {tokens * exact:,} = N·{exact}",
        )
        return exact
    if fitting:
        result.bound(
            name, fitting[0], fitting[-1], 0.5, f"{tiles}; the widths {fitting} there all fit, no count picks one"
        )
        return None
    result.set(
        name,
        int(round(bound)),
        0.4,
        f"{what}: {g.macs(kernel):,.0f} MACs = N·d·{bound:.0f} "
        "(tile padding not resolved: no matching elementwise count)",
    )
    return int(round(bound))


def _launched_after(roles: dict, kernel: KernelRecord) -> KernelRecord | None:
    """The first layer's kernel launched right after `kernel`, or None."""
    layer = roles["first_layer"]
    return next((layer[i + 1] for i, k in enumerate(layer[:-1]) if k is kernel), None)


def _counts_off_multiples(counts: Counter, tokens: int, d: int) -> Counter:
    """`counts` without those that read as N·w for a w that is a whole multiple of d."""
    kept = type(counts)({v: n for v, n in counts.items() if all(w % d for w in count_widths(v, tokens, counts))})
    kept.row_extra = getattr(counts, "row_extra", 0)
    return kept


def _rotated_widths(roles: dict, tokens: int, size: int) -> set[int]:
    """The widths w of N·w elements that kernels between the Q/K/V projections and the attention
    store: the rotary embedding, which stores q and k rotated (one kernel when fused, eager
    Liger's or compiled), stores N·(q + k) of them. The MLP's activation, which a compiled
    parallel-residual layer may run in between, is left out."""
    widths = set()
    for k in before_attention(roles, roles["qkv"][-1], scores=True):
        if category(k) != MATMUL and not ACTIVATION.search(k.name.lower()):
            width = g.stored_width(k, tokens, size)
            widths |= {width} if width else set()
    return widths


def _rotated_in_turn(roles: dict) -> set[Fraction]:
    """The ratios r of k's width to q's where eager kernels rotate q, then k, op by op (multiply by
    cos, negate and concatenate the halves, multiply by sin, add: a partial rotary's too): two
    runs of kernels of the same names, each doing float work, the second doing r times the
    first's in every kernel, since k's heads rotate as many dimensions as q's."""
    between = [
        k for k in before_attention(roles, roles["qkv"][-1], scores=True) if category(k) not in (MATMUL, ATTENTION)
    ]
    work = [sum(k.metric(m) for m in (g.FFMA, g.FADD, g.FMUL)) for k in between]
    ratios = set()
    for length in range(2, len(between) // 2 + 1):
        for start in range(len(between) - 2 * length + 1):
            q_run, k_run = range(start, start + length), range(start + length, start + 2 * length)
            if [between[i].name for i in q_run] != [between[i].name for i in k_run]:
                continue
            worked = [(work[i], work[j]) for i, j in zip(q_run, k_run) if work[i] or work[j]]
            if len(worked) < 2 or not all(a and b for a, b in worked):
                continue
            run_ratios = {Fraction(int(b), int(a)) for a, b in worked}
            if len(run_ratios) == 1:
                ratios |= run_ratios
    return ratios


def _rotated_apart(roles: dict, tokens: int, q: int, size: int) -> set[int]:
    """The widths w of N·w elements that kernels between the projections and the attention
    rotate where q and k are rotated by kernels of their own (eager attention compiled): the
    kernel that stores q (N·q elements) gives the FADD and FMUL a rotated element costs, and
    another kernel's FADD and FMUL at those rates agree on how many elements it rotated. Its
    stores do not tell: the compiled k kernel may store k twice (for the attention and the cache).
    Inductor may order the projections K, V, Q with k rotated before Q's GEMM: the kernels from
    the first projection on count."""
    between = [k for k in before_attention(roles, roles["qkv"][0], scores=True) if category(k) != MATMUL]
    stores_q = {k.index for k in between if g.stored_width(k, tokens, size) == q}
    rates = {
        (k.metric(g.FADD) / (tokens * q), k.metric(g.FMUL) / (tokens * q))
        for k in between
        if k.index in stores_q and k.metric(g.FADD) and k.metric(g.FMUL)
    }
    if len(rates) != 1:
        return set()
    ((per_add, per_mul),) = rates
    widths = set()
    for k in between:
        if k.index in stores_q:
            continue
        by_add, by_mul = k.metric(g.FADD) / (tokens * per_add), k.metric(g.FMUL) / (tokens * per_mul)
        if by_add == by_mul == int(by_add) > 0:
            widths.add(int(by_add))
    return widths
