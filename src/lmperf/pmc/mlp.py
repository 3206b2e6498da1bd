"""The MLP: d_ff from the down-projection's work and the activation's counts (or the
up-projections' own stores), and whether the MLP is gated."""

from __future__ import annotations

from collections import Counter

from lmperf.pmc import gemms as g
from lmperf.pmc.kernels import is_triton
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.result import Inference
from lmperf.pmc.counts import SLACK, best_widths, element_counts, element_size, row_padding


def mlp(result: Inference, roles: dict, tokens: int, d: int, size: int | None, attention_width: int) -> None:
    f = _d_ff(result, roles, tokens, d, size, attention_width)
    ups = roles["ups"]
    up_width = sum(g.macs(k) for k in ups) / (tokens * d)
    gated = len(ups) == 2 or (len(ups) == 1 and up_width > 1.5 * f)
    readings = g.width_readings(ups[0], tokens, d) if len(ups) == 1 else []
    stores_f = len(ups) == 1 and g.output_width(ups[0], tokens, element_size(result)) == f
    if stores_f or any(low <= f <= high for low, high in readings):
        # rows padded far beyond N (a decode step's one token per sequence, a template's tiles)
        # inflate the work; a tile reading or the GEMM's own stores that hold d_ff itself say
        # the one up-projection is no fused gate and up
        gated, up_width = False, f
    result.set(
        "mlp",
        "gated" if gated else "gelu",
        0.85,
        f"{len(ups)} up-projection GEMM(s) of total width {up_width:.0f} for d_ff={f}",
    )


def _d_ff(result: Inference, roles: dict, tokens: int, d: int, size: int | None, attention_width: int) -> int:
    """d_ff is the down-projection's K; its output (width d) is padded like the out-projection's,
    whose K is the attention's width."""
    down, out = roles["down"], roles["out"]
    bound = g.macs(down) / (tokens * d)
    # The activation between the up- and the down-projection counts N·d_ff exactly; counts from
    # there alone cannot be confused with N·d when row padding widens the search (N=129: 2x).
    first_up = (roles["ups"] or [down])[0]
    between = [k for k in roles["first_layer"] if first_up.index < k.index < down.index]
    if size is None and any(is_triton(k.name) for k in between):  # Liger's SwiGLU: padded rows
        size = element_size(result)
    # an eager vectorized multiply of gate and up counts whole blocks of its FMUL (N·d_ff =
    # 518,400 runs 507 blocks of 1,024: 519,168), which read as a wider d_ff beside the activation's
    # exact count: its stored elements are read instead
    mlp_counts = element_counts(between, size, element_size(result))
    slack = SLACK * row_padding(tokens)
    # Counts elsewhere in the step are not read: a LayerNorm's FMUL count (N·4495 at d=1280)
    # passed for N·d_ff on OPT, whose ReLU (a clamp) counts no FP32 ops.
    tied = best_widths(bound, tokens, mlp_counts, slack)
    exact = tied[0] if len(tied) == 1 else None
    several = None if exact else _several_ops_width(bound, tokens, mlp_counts, slack)
    exact = exact or (several and several[0])
    if exact:
        counted = (
            f"the activation's counts {', '.join(f'{v:,.0f}' for v in several[1])} = a few ops per element of N·d_ff"
            if several
            else f"elementwise counts {tokens * exact:,} = N·d_ff"
        )
        result.set("d_ff", exact, 0.9, f"down-projection {g.macs(down):,.0f} MACs bound d_ff by {bound:.0f}; {counted}")
        return exact
    stored = _stored_d_ff(result, roles["ups"], down, tokens, d, bound)
    if stored:
        stored, doubled = stored
        result.set(
            "d_ff",
            stored,
            0.85,
            f"down-projection {g.macs(down):,.0f} MACs bound d_ff by {bound:.0f}; the up-projection's "
            f"own stores = N·{stored}·{element_size(result)} B each"
            + (", or twice that from a gate whose epilogue stores its output too" if doubled else ""),
        )
        return stored
    # fp32 SIMT GEMMs of named whole tiles: the down-projection's inner size is d_ff (up to its
    # epilogue), and the up-projection's padded width holds d_ff (2·d_ff fused gate and up)
    inner = g.simt_inner_sizes(down, tokens, d)
    spans = [span for up in roles["ups"] for span in g.width_readings(up, tokens, d)]
    both = sorted(f for f in inner if any(low <= n * f <= high for low, high in spans for n in (1, 2)))
    if len(both) == 1:
        result.set(
            "d_ff",
            both[0],
            0.9,
            f"fp32 SIMT GEMMs of whole tiles: the down-projection's "
            f"inner size is one of {sorted(inner)}, the up-projection's width lies in "
            f"{spans}; only {both[0]} fits both",
        )
        return both[0]
    # fp32 SIMT GEMMs: the down-projection reads d_ff or d_ff + 1 (epilogue), each up-projection
    # d_ff (or 2·d_ff fused gate and up); a width both sides allow is the answer.
    if g.tensor_path(down) is None and down.metric(g.FFMA):
        per_row = down.metric(g.FFMA) / (tokens * d)
        down_reads = {int(per_row) - e for e in (0, 1)} if per_row == int(per_row) else set()
        up_reads = {w // n for k in roles["ups"] for w in g.simt_widths(k, tokens, d) for n in (1, 2) if w % n == 0}
        both = sorted(down_reads & up_reads)
        if len(both) == 1:
            result.set(
                "d_ff",
                both[0],
                0.8,
                f"fp32 SIMT GEMMs: the down-projection's FFMA allow "
                f"{sorted(down_reads)}, the up-projection's {sorted(up_reads)}; only "
                f"{both[0]} fits both",
            )
            return both[0]
    if len(tied) > 1:
        # counts that tie on widths the work holds only with padding name neither (`best_widths`)
        result.bound(
            "d_ff",
            tied[0],
            tied[-1],
            0.5,
            f"down-projection {g.macs(down):,.0f} MACs bound d_ff by {bound:.0f}; elementwise counts "
            f"{', '.join(f'{tokens * w:,}' for w in tied)} = N·{tied} are seen equally often: none decides",
        )
        return tied[0]
    ratio = g.macs(down) / g.macs(out) * attention_width  # same output width d, same padding
    f = int(round(ratio))
    same_tile = down.name == out.name
    result.set(
        "d_ff",
        f,
        0.8 if same_tile and abs(ratio - f) < 0.01 else 0.5,
        f"down/out-projection work ratio {g.macs(down) / g.macs(out):.4f} x "
        + ("d " if attention_width == d else f"the attention's width {attention_width} ")
        + f"({'same' if same_tile else 'different'} GEMM kernel, so "
        f"{'the same' if same_tile else 'possibly different'} tile padding)",
    )
    return f


def _stored_d_ff(
    result: Inference, ups: list[KernelRecord], down: KernelRecord, tokens: int, d: int, bound: float
) -> tuple[int, bool] | None:
    """d_ff from up-projections that store their own product once, N·d_ff elements each, with
    st.global (a max-autotune template) or TMA (cuBLAS), where an activation like OPT's ReLU
    counts no float op to read it from: one width they all store, within the down-projection's
    bound and at most its row padding below it, and one the down-projection's tiles run as their
    inner size; else None. A gate's template whose epilogue multiplies in the other
    up-projection's product may store the gate's output beside that product: twice the width the
    other stores, so the narrowest width counts where every other is it or twice it (the second
    value: whether one was twice it)."""
    if not ups:
        return None
    widths = {g.output_width(k, tokens, element_size(result)) for k in ups}
    width = None if None in widths else min(widths)
    if (
        width
        and widths <= {width, 2 * width}
        and bound / (SLACK * row_padding(tokens)) <= width <= bound * 1.0001
        and g.tiles_allow(down, tokens, width, d)
    ):
        return width, len(widths) == 2
    return None


def _several_ops_width(
    bound: float, tokens: int, counts: Counter, slack: float, max_ops: int = 8
) -> tuple[int, list[float]] | None:
    """An activation that spends several ops per element (exact GELU: 7 FFMA and 4 FMUL) counts
    k·N·d_ff; the width that two different counts agree on for some k <= max_ops, or None."""
    support: dict[int, set[float]] = {}
    for value in counts:
        for ops in range(2, max_ops + 1):
            width, rest = divmod(value, ops * tokens)
            if not rest and bound / slack <= width <= bound * 1.0001:
                support.setdefault(int(width), set()).add(value)
    agreed = sorted((len(values), width) for width, values in support.items() if len(values) >= 2)
    return (agreed[-1][1], sorted(support[agreed[-1][1]])) if agreed else None
