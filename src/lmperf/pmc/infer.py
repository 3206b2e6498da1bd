"""`lmperf pmc infer`: a decoder-only Transformer's architecture from one capture's counters.

The chain of evidence (each step names the kernels it used in `evidence`):
1. mode: optimizer kernels mean a training step; gradient kernels without them a backward only.
2. dtype: which tensor pipe the GEMMs used (bf16, fp16; tf32 or none with FFMA work = fp32).
3. n_layers: the forward GEMMs repeat with a period; the last forward GEMM is the LM head.
4. tokens N = B·T: row counts of LayerNorm / embedding-gather launch grids and row reductions.
5. d_model, d_ff, K/V width, vocabulary: GEMM work is N·K·(padded width); elementwise kernels
   count exact element numbers (N·d for residual adds, N·d_ff for activations), so each width is
   the element count / N that lies just under the GEMM's padded bound.
6. batch, seq_len, heads: the attention kernels (attention_shape).
Fields it cannot pin down are reported as missing, not guessed.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

from lmperf.pmc import gemms as g
from lmperf.pmc import vocab
from lmperf.pmc.collectives import read_parallelism, without_collectives
from lmperf.pmc.attention_shape import (
    PLAUSIBLE_HEAD_DIMS,
    AttentionShape,
    fused_shape,
    grid_names_batch,
    mask_fits,
    naive_shape,
    scores_size,
    stored_bytes,
    stores_deny,
    stores_fit,
    template_pins_products,
    untie_by_causal_mask,
    untie_by_rotary_table,
)
from lmperf.analysis.kernels import ATTENTION, LOSS, MATMUL, MATMUL_AUX
from lmperf.analysis.tiles import ceil_div, round_up
from lmperf.pmc.kernels import category, is_generated, is_triton, runs_norm
from lmperf.pmc.generate import Steps, cache_length, split_steps
from lmperf.pmc.completeness import (
    attention_groups,
    backward_gaps,
    counter_gaps,
    forward_gaps,
    generate_gaps,
    optimizer_gaps,
)
from lmperf.pmc.params import add_parameter_counts, optimizer_parameters
from lmperf.pmc.parse import Capture, KernelRecord, read_capture
from lmperf.pmc.result import Gap, Inference
from lmperf.pmc.tokens import token_candidates

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
    return _element_size(result) if _compiled(forward) else None


def _element_size(result: Inference) -> int:
    """Bytes of one activation: 4 for fp32, else 2."""
    return 4 if result.values["dtype"] == "fp32" else 2


def _compiled(kernels: Sequence[KernelRecord]) -> bool:
    return any(is_generated(k.name) for k in kernels)


class StoredCounts(Counter):
    """Element counts read from store bytes: a norm of a training step stores beside its N·d
    outputs one fp32 statistic per row (its rstd, for the backward), `row_extra` elements a row."""

    row_extra = 0


def _count_widths(count: float, tokens: int, counts: Counter) -> set[float]:
    """The widths w an element count of `counts` reads as, N·w (less a row statistic each row
    where `counts` counts stores, which may hold one)."""
    return {(count - extra * tokens) / tokens for extra in {0, getattr(counts, "row_extra", 0)}}


def exact_width(
    bound: float, tokens: int, counts: Counter, slack: float = SLACK, allow: Callable[[int], bool] | None = None
) -> int | None:
    """The width w in [bound/slack, bound] with N·w an element count seen most often, else None;
    `allow`: a test each such width must pass (the GEMM's tiles)."""
    fits = [
        (n, _alignment(w) if getattr(counts, "row_extra", 0) else 0, w)
        for v, n in counts.items()
        for w in _count_widths(v, tokens, counts)
        if w == int(w) and bound / slack <= w <= bound * 1.0001 and (allow is None or allow(int(w)))
    ]
    # A count read with and without a row statistic gives two widths two apart: the model's is
    # the one a power of two divides further (1280, not 1282 or 1278).
    return int(max(fits)[2]) if fits else None


def _alignment(width: float) -> int:
    """How many factors of two divide the width (up to 64-wide alignment)."""
    width, twos = int(width), 0
    while width and width % 2 == 0 and twos < 6:
        width, twos = width // 2, twos + 1
    return twos


def _mode_and_dtype(result: Inference, phases: g.Phases, layer_gemms: list[KernelRecord]) -> None:
    if phases.optimizer:
        result.set(
            "mode",
            "train_step",
            0.95,
            f"{len(phases.optimizer)} optimizer kernels "
            f"({phases.optimizer[0].name[:40]}...) after {len(phases.backward)} backward kernels",
        )
    elif phases.backward:
        result.set(
            "mode",
            "train_step",
            0.5,
            f"{len(phases.backward)} gradient kernels but no "
            "optimizer kernel: a forward-backward step without the optimizer",
        )
    else:
        result.set("mode", "forward", 0.9, "no gradient or optimizer kernel in the range")
    paths = Counter(g.tensor_path(k) for k in layer_gemms)
    path, count = paths.most_common(1)[0] if paths else (None, 0)
    if path in ("bf16", "fp16", "fp8"):
        result.set("dtype", path, 0.95, f"{count} layer GEMMs ran on the {path} tensor pipe")
    elif path == "tf32" or (path is None and any(k.metric(g.FFMA) for k in layer_gemms)):
        result.set(
            "dtype",
            "fp32",
            0.9,
            "layer GEMMs used " + ("TF32 tensor cores" if path else "FFMA instructions, no tensor pipe"),
        )
    else:
        result.unknown("dtype", "no layer GEMM with tensor or FFMA work")


def layer_roles(layer: g.Layers) -> dict | None:
    """Which GEMM of the first layer is which: qkv projections, (naive attention's QK^T, PV), out, MLP."""
    marker = g.attention_marker(layer.first_layer)
    if marker is None:
        return None
    kind, at = marker
    before = [k for k in layer.layer_gemms if k.index < at.index]
    after = [k for k in layer.layer_gemms if k.index > at.index]
    roles = dict(kind=kind, marker=at, qk=None, pv=None, first_layer=layer.first_layer)
    compiled = _compiled(layer.first_layer)
    if kind == "softmax":
        # QK^T and PV are the matmuls either side of the softmax, whatever their size: in a
        # decode step they are GEMVs too small to count among the layer GEMMs
        matmuls = [k for k in layer.first_layer if category(k) == MATMUL]
        qk = next((k for k in reversed(matmuls) if k.index < at.index), None)
        pv = next((k for k in matmuls if k.index > at.index), None)
        if qk is None or pv is None:
            return None
        if compiled and g.macs(qk) > 0:
            # torch.compile may run the V projection after the softmax, which only P V needs: P V
            # is the matmul after the softmax with QK^T's work (B·H·T²·hd both), and a projection
            # before it belongs with Q and K. One that repeats a projection's kernel and work from
            # before the softmax is the V projection (the K projection's twin), even where its
            # padded work happens to equal QK^T's. QK^T is no projection: P V repeats its kernel
            # and work where the two products have one shape (T = head_dim, or padded tiles).
            seen = {(k.name, g.macs(k)) for k in before if k is not qk}
            later = [k for k in matmuls if k.index > at.index]
            later = [k for k in later if (k.name, g.macs(k)) not in seen] or later
            pv = min(later, key=lambda k: abs(g.macs(k) - g.macs(qk)))
            before = before + [k for k in after if k.index < pv.index]
            after = [k for k in after if k.index > pv.index]
        roles.update(qk=qk, pv=pv)
        before, after = [k for k in before if k is not qk], [k for k in after if k is not pv]
    if compiled and len(after) < 2:
        before, after = _mlp_before_attention(layer.first_layer, before, after)
    if not before or len(after) < 2:
        return None
    out = after[0]
    if compiled:
        # torch.compile may schedule the output projection after an MLP that does not depend on
        # it (GPT-NeoX's parallel residual); it is the least work there: N·d·d against N·d·d_ff
        out = min(after, key=g.macs)
    rest = [k for k in after if k is not out]
    roles.update(qkv=before, out=out, ups=rest[:-1], down=rest[-1] if rest else out)
    return roles


_ACTIVATION = re.compile(r"gelu|silu|relu|tanh|sigmoid")


def _mlp_before_attention(
    first_layer: list[KernelRecord], before: list[KernelRecord], after: list[KernelRecord]
) -> tuple[list[KernelRecord], list[KernelRecord]]:
    """A parallel-residual layer (GPT-NeoX) compiled may run its MLP before its attention: the
    GEMMs right before the activation kernel (two of equal work: gate and up) and the one right
    after it (down) move from `before` to `after`, behind the output projection."""
    act = next((k for k in first_layer if is_generated(k.name) and _ACTIVATION.search(k.name)), None)
    if act is None or not before or act.index > before[-1].index:
        return before, after
    ups = [k for k in before if k.index < act.index][-2:]
    if len(ups) == 2 and g.macs(ups[0]) != g.macs(ups[1]):
        ups = ups[1:]
    down = next((k for k in before if k.index > act.index), None)
    if down is None or len(ups) == len([k for k in before if k.index < act.index]):
        return before, after  # no projection would be left before the attention
    mlp = [*ups, down]
    return [k for k in before if k not in mlp], [*after, *mlp]


def _tokens_and_width(
    result: Inference,
    support: Counter,
    roles: dict,
    counts: Counter,
    head: KernelRecord | None = None,
    stores: Callable[[int, int], bool | None] | None = None,
):
    """(N, d): the row count and exact width that explain the attention output projection.
    Between row counts the launches support equally (a compiled norm's grid of 116 programs of
    2 rows: N=231 or 232), the one whose N·d more kernels count wins. A width the projection's
    declared tiles cannot produce from N rows is no reading: a compiled norm's grid of 72
    programs of 2 rows reads as N=72 too, and a count of another tensor (a rotary kernel's
    144·512 = 72·1024 elements) then passes for N·d. Nor is one that a max-autotune template's own
    stores deny: a norm's 40 programs of 2 rows padded to 2048 lanes count 40·2048 float ops,
    which pass for N·d at N=40, d=2048, where the projection stored 80·1536 elements. Nor is one
    the MLP's input norm stores too few values for (`norm_stores_rows`), nor one whose N·d·V work
    the LM head's tiles deny (`head_holds`; `head`: None where the head sees other rows).
    A reading the attention kernel's own stores deny (`stores`(N, d) False) yields to one they
    hold exactly (True): a compiled Qwen3's norms of two rows a program over 64 rows of d 2048
    read N=32 from their grids, and every GEMM's row tiles pad 32 and 64 alike, but its attention
    stores 64·2048 outputs.
    `support`: row count -> launches that support it (`token_candidates`)."""
    size, out = _element_size(result), roles["out"]
    readings = []  # (launches, counts of N·d, -order of support, N, d): ties go to the first
    for order, (tokens, launches) in enumerate(support.most_common()):
        width = exact_width(
            (g.macs(out) / tokens) ** 0.5,
            tokens,
            counts,
            (SLACK * row_padding(tokens)) ** 0.5,
            lambda w, n=tokens: (
                g.tiles_allow(out, n, w, w)
                and norm_stores_rows(roles, n, w, size)
                and head_holds(head, n, w, size, counts)
            ),
        )
        if width and is_generated(out.name) and not g.stores_whole_outputs(out, tokens, width, size):
            continue
        if width:
            readings.append((launches, counts[tokens * width], -order, tokens, width))
    if not readings:
        return None
    launches, _, _, tokens, d = max(readings)
    passed = ""
    if stores is not None and stores(tokens, d) is False:
        confirmed = [r for r in readings if stores(r[3], r[4]) is True]
        if confirmed:
            passed = (
                f"; not N={tokens}, which more launches count: the attention's "
                f"{stored_bytes(roles['marker']):,.0f} B of stores deny it"
            )
            launches, _, _, tokens, d = max(confirmed)
    result.evidence["_tokens"] = f"N={tokens} rows seen in {launches} norm/gather/reduction launches"
    result.set(
        "d_model",
        d,
        0.9,
        f"elementwise counts {tokens * d:,} = N·d; out-projection "
        f"{g.macs(out):,.0f} MACs = N·d·{g.macs(out) / tokens / d:.0f} (padded d){passed}",
    )
    return tokens, d


@dataclasses.dataclass(frozen=True)
class _OffD:
    """A reading of the output projection's work as N·d·a, a the attention's width, not d."""

    tokens: int
    d: int
    width: int  # a
    evidence: str


def _attention_off_d(
    support: Counter,
    roles: dict,
    counts: Counter,
    size: int,
    head: KernelRecord | None = None,
    rival: bool = False,
    confirms: Callable[[int, int], bool] | None = None,
) -> tuple[_OffD | None, str]:
    """The reading of `_off_d_at` at the row count the most launches support; where `confirms`
    (N, a) does not hold for it, the first that it holds for at the other row counts in order of
    support, if any (a compiled norm of two rows a program reads as N/2 rows at least as often as
    N: the attention kernel and the norm's stores decide)."""
    candidates = [tokens for tokens, _ in support.most_common()]
    if not candidates:
        return None, ""
    first = _off_d_at(candidates[0], roles, counts, size, head, rival)
    if confirms is None or (first[0] and confirms(first[0].tokens, first[0].width)):
        return first
    for tokens in candidates[1:]:
        reading, _ = _off_d_at(tokens, roles, counts, size, head, rival)
        if reading and confirms(reading.tokens, reading.width):
            return reading, ""
    return first


def _off_d_at(
    tokens: int,
    roles: dict,
    counts: Counter,
    size: int,
    head: KernelRecord | None,
    rival: bool,
) -> tuple[_OffD | None, str]:
    """Where the output projection is no N·d·d GEMM at N=`tokens` rows: (the reading, "") when
    its work reads as N·d·a, d the width `_residual_width` gives (a compiled Qwen3 counts more
    kernels at N·a than at N·d) and the MLP's input norm stores, and the attention's width a the
    one width in the GEMM's tile interval that kernels count N·a of (the query's rotary or norm,
    the attention's output, the query projection's own stores) and the query projection's tiles
    allow; else (None, why not), the why empty where the work gives no reading at all. A model
    built so (Qwen3, Gemma) and one tensor-parallel rank's shard of every GEMM both land here.
    `rival`: an N·d·d reading stands already, and the attention kernel will judge between them: a
    is then any such width but d, even where the tiles would allow d too."""
    widths = _counted_widths(counts, tokens)
    if not widths:
        return None, ""
    out = roles["out"]
    d, witness = _residual_width(widths, out, head, tokens, size)
    kernels = widths[d]
    if not norm_stores_rows(roles, tokens, d, size) or not head_holds(head, tokens, d, size, counts):
        return None, ""
    # the tiles' readings, not the interval around them: readings of 737-768 and 1793-2048 leave
    # d = 1024 out
    span = _work_span(out, tokens, d)
    if _in_span(d, out, tokens, d) and not rival:
        return None, ""
    query = _query_projection(roles)
    normed = _head_norm_widths(roles, tokens, size)
    projected = _query_output_widths(query, tokens, size)
    fits = [
        w
        for w in set(widths) | normed | projected
        if _out_projection_allows(out, tokens, d, w)
        and w % 32 == 0
        and w != d
        and (query is None or _in_span(w, query, tokens, d))
    ]
    if not span and not fits:
        return None, ""
    where = (
        f"in [{span[0]}, {span[1]}], {'narrower than' if span[1] < d else 'wider than' if span[0] > d else 'not'} d"
        if span
        else "not d"
    )
    why = (
        f"its work is N·d·a with N = {tokens} and d = {d} (the width {kernels} elementwise kernels "
        f"count N·d of) and the attention's width a {where}"
    )
    # Counts may fit more than one width by coincidence (a norm's FADD, a split-K reduction's
    # sums); the query projection's own stores of its N·a outputs decide between them.
    stored = g.padded_output_width(query, tokens, size) if query is not None and len(fits) > 1 else None
    fits = [stored] if stored in fits else fits
    if len(fits) != 1:
        return None, f"{why}, and {'no' if not fits else 'more than one'} width there that kernels count N·a of"
    a = fits[0]
    side = "narrower" if a < d else "wider"
    evidence = (
        f"elementwise counts {tokens * d:,} = N·d in {kernels} kernels"
        + (f", {witness}" if witness else "")
        + "; out-projection "
        f"{g.macs(out):,.0f} MACs = N·d·{g.macs(out) / tokens / d:.0f}: an attention {a} wide "
        + (
            f"({widths[a]} kernels count N·{a})"
            if widths[a]
            else f"(a norm before it stores N·{a} values and an fp32 statistic a row it normalizes)"
            if a in normed
            else f"(the query projection's own stores hold its N·{a} outputs)"
        )
        + (
            f", which the query projection's stores of N·{a} values pick"
            if stored and (widths[a] or a in normed)
            else ""
        )
        + f", {side} than d"
    )
    return _OffD(tokens, d, a, evidence), ""


def _query_output_widths(query: KernelRecord | None, tokens: int, size: int) -> set[int]:
    """The width of the N·a outputs a query projection that runs apart from K and V stores (over
    N rows or the rows pad_mm pads them to): where no per-head norm counts N·a and q and k are
    rotated together (N·(a + K/V width) values), its own stores are the one count of a."""
    width = g.padded_output_width(query, tokens, size) if query is not None else None
    return {width} if width else set()


def _head_norm_widths(roles: dict, tokens: int, size: int) -> set[int]:
    """The widths w of N·w values that a norm between the first projection and the attention
    stores beside one fp32 statistic a row, a program a row: Liger's per-head q and k norms of
    Qwen3 (N·H rows of head_dim) count their elements over padded rows, so only their stores give
    the attention's width."""
    if not roles["qkv"]:
        return set()
    widths = set()
    for kernel in _before_attention(roles, roles["qkv"][0]):
        values = (kernel.metric(g.STORE_BYTES) - 4 * kernel.blocks) / size
        if runs_norm(kernel) and values > 0 and values % tokens == 0:
            widths.add(int(values // tokens))
    return widths


def _counted_widths(counts: Counter, tokens: int) -> Counter:
    """width w -> kernels whose element counts read as N·w (N=`tokens`), whole positive widths only."""
    widths: Counter = Counter()
    for count, kernels in counts.items():
        for width in _count_widths(count, tokens, counts):
            if width == int(width) and width > 0:
                widths[int(width)] += kernels
    return widths


def head_holds(head: KernelRecord | None, tokens: int, d: int, size: int, counts: Counter) -> bool:
    """Whether an LM head of nvjet tiles that stores N·V logits (V whole) may have done N·d·V work
    in them: it may unless its tiles hold that work for another width kernels count N·w of and not
    for d (a head whose stores are no logits, a fused loss's, holds none). Twice the rows at half
    d (N·d alike in every layer GEMM) asks the head for half the logits of the same work:
    192·768·75,968 where 96·1536·151,936 ran."""
    vocab = g.output_width(head, tokens, size) if head is not None else None
    if not vocab:
        return True
    others = set(_counted_widths(counts, tokens)) - {d}
    return g.readings_hold(head, tokens, d, vocab) or not any(g.readings_hold(head, tokens, w, vocab) for w in others)


def norm_stores_rows(roles: dict, tokens: int, d: int, size: int) -> bool:
    """Whether the norm before the MLP, where one runs apart from the GEMMs, stores at least the
    N·d values it normalizes (`size` bytes each; it may store a residual sum and row statistics
    beside them, and a training step's weight casts may store more). A model read at twice its
    token rows and half its attention width (Qwen3, whose attention is twice d wide: N·d·2d =
    2N·d·d in every GEMM and the attention) fails here: its norms store half the values 2N rows of
    d would need."""
    mlp = (roles["ups"] or [roles["down"]])[0]
    between = [k for k in roles["first_layer"] if roles["out"].index < k.index < mlp.index]
    first = next((i for i, k in enumerate(between) if runs_norm(k)), None)
    if first is None:
        return True
    # the norm's output is one of the kernels from the norm on (a fused norm; eager RMSNorm's
    # weight multiply, its rsqrt kernel storing a value a row; a cast for an fp8 GEMM storing
    # one byte a value after it), and none stores more than the largest of them
    stores = [k.metric(g.STORE_BYTES) for k in between[first:] if category(k) not in (MATMUL, MATMUL_AUX)]
    return not any(stores) or max(stores) >= tokens * d * size


def _work_span(kernel: KernelRecord, tokens: int, k: int) -> tuple[int, int] | None:
    """The interval that holds a GEMM's output width, with N=`tokens` rows and inner size k: its
    named tiles' (`g.width_interval`), or for a kernel that names none (a max-autotune template),
    its work over the rows as counted and as padded to whole row tiles."""
    span = g.width_interval(kernel, tokens, k)
    if span or not is_generated(kernel.name) or not g.macs(kernel):
        return span
    padded = round_up(tokens, ROW_TILE)
    return math.ceil(g.macs(kernel) / (padded * k)), int(g.macs(kernel) / (tokens * k))


def _in_span(width: int, kernel: KernelRecord, tokens: int, k: int) -> bool:
    """Whether a GEMM's tiles (or, a template's, its work) allow an output `width`."""
    if g.width_readings(kernel, tokens, k):
        return g.readings_hold(kernel, tokens, k, width)
    if g.split_k_simt(kernel):
        return g.split_k_simt_allows(kernel, tokens, k, width)
    span = _work_span(kernel, tokens, k)
    return span is not None and span[0] <= width <= span[1]


def _query_projection(roles: dict) -> KernelRecord | None:
    """The query projection where Q, K and V run apart (its output is the attention's width), else
    None (a fused QKV's output is not)."""
    return roles["qkv"][0] if len(roles["qkv"]) >= 3 else None


def _out_projection_allows(out: KernelRecord, tokens: int, d: int, width: int) -> bool:
    """Whether the output projection's tiles allow N rows of d outputs from an attention `width`
    wide: read both ways, as outputs `width` wide over d (where its tiles pad the rows and the
    width alike) and as outputs d wide over `width`, the GEMM it is (its tiles pad the rows and d,
    not the inner width: 144·1024·1344 in tiles of 48 rows and 256 columns)."""
    return _in_span(width, out, tokens, d) or g.readings_hold(out, tokens, width, d)


def _residual_width(
    widths: Counter, out: KernelRecord, head: KernelRecord | None, tokens: int, size: int
) -> tuple[int, str]:
    """d among the widths kernels count N·w of (`widths`: w -> kernels), and what witnesses it
    beyond the count: the one whose N·d·V work the LM head's nvjet tiles hold, V from the head's
    own stores; else the width the output projection stores (N·d), where kernels count it; else
    the width the most kernels count."""
    vocab = g.output_width(head, tokens, size) if head is not None else None
    if vocab:
        held = [w for w in widths if g.readings_hold(head, tokens, w, vocab)]
        # an fp32 SIMT head's epilogue FFMA make its work N·(d + 1)·V as well as N·d·V, a
        # training norm's stores count N·(d + 1) (its outputs and a statistic a row), and an nvjet
        # head's K-deep steps do the same work for d and d - 2: of such near widths, d is the one
        # a power of two divides furthest
        if len(held) == 2 and held[1] - held[0] <= 2:
            held = [max(held, key=_alignment)]
        if len(held) == 1:
            return held[0], f"the only one whose N·d·{vocab:,} work the LM head's tiles hold"
    stored = g.output_width(out, tokens, size)
    if stored and widths[stored]:
        return stored, "the output projection's stores too"
    return widths.most_common(1)[0][0], ""


def _attention_confirms(result: Inference, roles: dict, phases: g.Phases) -> Callable[[int, int], bool]:
    """Whether the attention kernel confirms N rows of an attention `width` wide: its counted
    work fits them exactly or its own stores hold their outputs exactly, and its stores do not
    deny them."""

    def confirms(tokens: int, width: int) -> bool:
        return _confirmed(result, roles, tokens, _attention_fit(result, roles, tokens, width, phases.forward))

    return confirms


def _attention_stores(result: Inference, roles: dict, phases: g.Phases) -> Callable[[int, int], bool | None]:
    """Whether the attention kernel's own stores hold N rows of an attention `width` wide (True),
    deny them (False) or say nothing (None: no stores counted, or no shape fits and the stores
    do not deny every plausible head count, `stores_deny`)."""

    def fit(tokens: int, width: int) -> bool | None:
        shape = _attention_fit(result, roles, tokens, width, phases.forward)
        if shape is not None:
            return _attention_stores_fit(result, roles, tokens, shape)
        # no (B, T, H) fits, so no heads to judge the log-sum-exps by: the outputs still judge
        denied = roles["kind"] != "softmax" and stores_deny(roles["marker"], tokens, width, _element_size(result))
        return False if denied else None

    return fit


def _confirmed(result: Inference, roles: dict, tokens: int, shape: AttentionShape | None) -> bool:
    """Whether the attention kernel confirms the reading `shape` of N = `tokens` rows (see
    `_attention_confirms`)."""
    if shape is None:
        return False
    stores = _attention_stores_fit(result, roles, tokens, shape)
    return stores is not False and (shape.error < EXACT_ATTENTION or stores is True)


def _attention_stores_fit(result: Inference, roles: dict, tokens: int, shape: AttentionShape) -> bool | None:
    """`stores_fit` of the fused attention kernel for a reading of N = `tokens` rows as `shape`."""
    if roles["kind"] == "softmax":
        return None
    width = shape.n_heads * shape.head_dim
    return stores_fit(roles["marker"], tokens, width, shape.n_heads, _element_size(result))


def _masks_fit(roles: dict, shape: AttentionShape) -> bool:
    """Whether a kernel between the Q/K/V projections and the attention stores a causal mask of
    the shape's B and T (or of one of its ties)."""
    if not roles["qkv"]:
        return False
    kernels = _before_attention(roles, roles["qkv"][-1])
    return any(mask_fits(kernels, b, t) for b, t, _ in ((shape.batch, shape.seq_len, 0), *shape.ties))


def _off_d_rival(
    result: Inference,
    phases: g.Phases,
    roles: dict,
    support: Counter,
    counts: Counter,
    head: KernelRecord,
    tokens: int,
    d: int,
) -> _OffD | None:
    """An attention off d that the attention kernel confirms better than the N·d·d reading
    (`tokens`, d) does: N·d·a at N' = 2N·d·d where a = 2d (Qwen3's 16 heads of 128 over d
    1024: half the token rows of a d-wide attention, which the compiled norms' programs of two
    rows also support), and padded tiles can make N·d·a pass for N·d·d at the same N (160·768·1024
    in tiles of 96 rows is 256·768·768 in tiles of 128). The rival wins where the attention
    kernel confirms it and not the N·d·d reading, or where it confirms both and more launches count
    the rival's token rows, or where the rows and the attention are the same and the output projection
    stores N·d of the rival's d, or where the rows and d are the same and the query projection
    stores N·a of the rival's a. Before the launches count, the attention's own stores (its
    outputs, N·a values) and a causal mask's (B·T·T entries) judge where they tell the two apart:
    a max-autotune GPT-NeoX of 2 x 80 rows at d 768 reads as 80 rows of d 1536 and an attention
    768 wide in every GEMM and in the attention's padded tiles, but not in its T x T mask.
    `support`: row count -> launches that support it (`token_candidates`)."""
    size = _element_size(result)
    rival, _ = _attention_off_d(
        support, roles, counts, size, head, rival=True, confirms=_attention_confirms(result, roles, phases)
    )
    if rival is None:
        return None
    theirs = _attention_fit(result, roles, rival.tokens, rival.width, phases.forward)
    if not _confirmed(result, roles, rival.tokens, theirs):
        return None
    ours = _attention_fit(result, roles, tokens, d, phases.forward)
    beaten = f"; over N={tokens} rows of an attention {d} wide (N·d·d), "
    if ours is not None and _attention_stores_fit(result, roles, tokens, ours) is False:
        why = f"which the attention's {stored_bytes(roles['marker']):,.0f} B of stores deny"
        return dataclasses.replace(rival, evidence=rival.evidence + beaten + why)
    if not _confirmed(result, roles, tokens, ours):
        return dataclasses.replace(
            rival, evidence=rival.evidence + beaten + "which the attention kernel fits less well"
        )
    masked = _masks_fit(roles, ours), _masks_fit(roles, theirs)
    if masked == (True, False):
        return None
    if masked == (False, True):
        why = f"whose B={ours.batch}, T={ours.seq_len} no causal mask's stores fit"
        return dataclasses.replace(rival, evidence=rival.evidence + beaten + why)
    if support[rival.tokens] > support[tokens]:
        why = f"which fewer launches count the rows of ({support[tokens]:g})"
        return dataclasses.replace(rival, evidence=rival.evidence + beaten + why)
    # the same rows and attention: only d differs, and the projection's own stores say which
    if (rival.tokens, rival.width) == (tokens, d) and g.output_width(roles["out"], tokens, size) == rival.d:
        why = f"which the output projection's stores of N·{rival.d} values deny"
        return dataclasses.replace(rival, evidence=rival.evidence + beaten + why)
    # the same rows and d: only the attention's width differs (heads of 96 and of 128 do the same
    # work in cuDNN's 128-wide head tiles), and the query projection's own stores say which
    query = _query_projection(roles)
    if (rival.tokens, rival.d) == (tokens, d) and query and g.padded_output_width(query, tokens, size) == rival.width:
        why = f"which the query projection's stores of N·{rival.width} values deny"
        return dataclasses.replace(rival, evidence=rival.evidence + beaten + why)
    return None


def _shard_or_model(result: Inference, d: int, attention_width: int) -> None:
    """An attention narrower than d by a whole factor t is also what one rank of t-way tensor
    parallelism over a model whose attention spans d runs: say so, and hold the widths that would
    differ (heads, K/V heads, d_ff) below the confidence of a reading nothing contests."""
    v = result.values
    if d % attention_width or v["n_heads"] is None:
        return
    t = d // attention_width
    full = [f"{v['n_heads'] * t} heads"]
    if v["n_kv_heads"] is not None:
        full.append(f"{v['n_kv_heads'] * t} K/V heads")
    if v["d_ff"] is not None:
        full.append(f"d_ff {v['d_ff'] * t}")
    if v["vocab_size"] is not None:
        full.append(f"a vocabulary of {v['vocab_size']:,} or {v['vocab_size'] * t:,} (its LM head whole or split)")
    result.assumptions.append(
        f"n_heads, n_kv_heads and d_ff: heads x head_dim = {attention_width} is d_model / {t}, as a model "
        f"built so runs it, or as one rank runs its shard of every GEMM under {t}-way tensor parallelism "
        f"over a model of {', '.join(full)}; the model built so is read"
    )
    for name in ("n_heads", "n_kv_heads", "d_ff"):
        if v[name] is not None:
            result.set(name, v[name], min(result.confidence[name], TIED), result.evidence[name])


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
    size = _element_size(result)
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


def infer(capture: Capture) -> Inference:
    """Infer every field of `result.FIELDS` that the capture supports; the rest say why not."""
    whole, capture = capture, without_collectives(capture)  # communication does no model arithmetic
    steps = split_steps(capture)
    if steps and steps.prefill:
        # generate's range ends with sampling kernels after the last LM head: judge the prefill
        result = _infer_generate(dataclasses.replace(capture, kernels=steps.steps[0]), steps)
    elif steps:  # decode steps without their prefill: judge the last one, a whole forward pass
        result = _infer_decode(dataclasses.replace(capture, kernels=steps.steps[-1]), steps)
    else:
        result = _infer_fields(capture)
    for gap in counter_gaps(capture) + (generate_gaps(steps.steps, steps.tail) if steps else []):
        result.retract(gap)
    if whole is not capture:  # only a capture with collectives says anything of parallelism
        read_parallelism(result, whole, g.split_phases(capture).forward)
    for name, value in result.values.items():
        if value is None and name not in result.evidence:
            result.evidence[name] = "not determined: " + ("; ".join(result.missing) or "no evidence")
    return result


def _infer_generate(capture: Capture, steps: Steps) -> Inference:
    """A generate capture (`capture` holds its prefill): the architecture from the prefill, whose LM head sees the last
    position only (B rows); prompt length and decode steps from the step structure."""
    result = _infer_fields(capture, last_position_logits=True, followers=steps.steps[1])
    result.set(
        "mode",
        "generate",
        0.85,
        f"{len(steps.steps)} steps end at the same LM head "
        f"({steps.steps[0][-1].name[:40]}); the first covers more token rows: a prefill, "
        f"then {steps.decode_steps} decode steps",
    )
    result.extra("decode_steps", steps.decode_steps, 0.85, "LM-head repeats after the prefill")
    prompt = result.values["seq_len"]
    if prompt is not None:
        result.extra(
            "prompt_len",
            prompt,
            result.confidence["seq_len"],
            "the prefill's sequence length: " + result.evidence["seq_len"],
        )
    return result


def rotary_heads(
    kernels: Sequence[KernelRecord], between: Sequence[KernelRecord], batch: int, size: int
) -> tuple[int, int, int] | None:
    """(query heads, K/V heads, head_dim) of one decode token per sequence from rotary position
    embedding (Llama-style): the cos table holds batch x head_dim fp32 values, and rotating q and
    then k concatenates two halves of batch x heads x head_dim values each (`between` holds the
    first layer's kernels from its Q/K/V projections to its attention). None without them."""
    cos = next((k for k in kernels if "cos_kernel" in k.name), None)
    head_dim = (cos.metrics.get(g.STORE_BYTES) or 0) / (batch * 4) if cos else 0
    if head_dim not in PLAUSIBLE_HEAD_DIMS:
        return None
    cats = [k.metrics.get(g.STORE_BYTES) or 0 for k in between if "CatArray" in k.name][:2]
    heads = [c / (batch * head_dim * size) for c in cats]
    if len(heads) < 2 or not all(h == int(h) and h >= 1 for h in heads) or heads[0] % heads[1]:
        return None
    return int(heads[0]), int(heads[1]), int(head_dim)


_DECODE_SHAPE = ("seq_len", "n_heads", "n_kv_heads", "head_dim", "params_blocks", "params_total")


def _infer_decode(capture: Capture, steps: Steps) -> Inference:
    """Decode steps alone (`capture` holds the last): one token per sequence, so the attention's
    T is 1; the prompt is the KV cache's length at that step less the steps captured, assuming
    the range starts at the first decode step."""
    structure = _structure(capture)
    result = _infer_fields(capture, last_position_logits=True, decode=True, structure=structure)
    result.set(
        "mode",
        "generate",
        0.7,
        f"{len(steps.steps)} steps end at the same LM head "
        f"({steps.steps[-1][-1].name[:40]}) over the same token rows: decode steps, no prefill",
    )
    result.extra("decode_steps", steps.decode_steps, 0.7, "LM-head repeats (no prefill in the range)")
    v = result.values
    phases, layer, roles = structure
    length = None
    if roles and None not in (v["batch"], v["dtype"]):
        size = 4 if v["dtype"] == "fp32" else 2
        between = _before_attention(roles, roles["qkv"][-1])
        if None not in (v["n_kv_heads"], v["head_dim"]):
            length = cache_length(between, v["batch"], v["n_kv_heads"] * v["head_dim"], size)
        rotary = None if length else rotary_heads(capture.kernels, between, v["batch"], size)
        if rotary and v["d_model"] == rotary[0] * rotary[2]:
            length = cache_length(between, v["batch"], rotary[1] * rotary[2], size)
            if length:  # the rotary shape, confirmed by the cache: it replaces the attention fit
                why = (
                    f"decode step: rotary tables of head_dim {rotary[2]} per token, rotated q of "
                    f"{rotary[0]} and k of {rotary[1]} heads, and a KV-cache update of {length} "
                    "rows of exactly that K/V width"
                )
                for name, value in zip(("n_heads", "n_kv_heads", "head_dim"), rotary):
                    result.set(name, value, 0.7, why)
                add_parameter_counts(result, roles, capture, phases)
    if length is None or length <= len(steps.steps):
        # the attention then ran one query per sequence against a cache of unknown length: the
        # (T, H, head_dim) it was read as is unconfirmed, and the parameters rest on it (B is
        # the token rows, and V the head's output over them)
        result.retract(
            Gap(
                "decode",
                "decode steps alone, and no KV-cache update stores a whole "
                "number of B·kv_width rows for both K and V, so the attention shape "
                "read from one query per sequence is not confirmed",
                _DECODE_SHAPE,
            )
        )
        return result
    prompt = length - len(steps.steps)
    why = (
        f"the KV-cache update of the last captured step stores {length} rows per sequence: "
        f"the prompt plus {len(steps.steps)} tokens, if the range starts at the first decode step"
    )
    result.set("seq_len", prompt, 0.6, why)
    result.extra("prompt_len", prompt, 0.6, why)
    return result


def _structure(capture: Capture) -> tuple[g.Phases, g.Layers | None, dict | None]:
    """The capture's phases, its repeating layers and the first layer's GEMM roles."""
    phases = g.split_phases(capture)
    gemms = g.forward_gemms(phases.forward)
    attention = attention_groups([k for k in phases.forward if gemms and k.index < gemms[-1].index])
    layer = g.find_layers(phases.forward, attention)
    return phases, layer, layer_roles(layer) if layer else None


def _infer_fields(
    capture: Capture,
    last_position_logits: bool = False,
    followers: Sequence[KernelRecord] = (),
    decode: bool = False,
    structure: tuple | None = None,
) -> Inference:
    """`structure`: `_structure(capture)` when the caller has it already."""
    result = Inference()
    phases, layer, roles = structure or _structure(capture)
    _read_fields(result, capture, phases, layer, roles, last_position_logits, followers, decode)
    # A range cut short reads like a smaller model: what it lacks retracts what rests on it.
    n_layers = layer.n_layers if layer else None
    for gap in (
        forward_gaps(phases, layer, roles is not None)
        + backward_gaps(phases, n_layers)
        + optimizer_gaps(phases, _trained(phases), _least_parameters(result))
    ):
        result.retract(gap)
    return result


def _trained(phases: g.Phases) -> int | None:
    """The parameters AdamW's launches update, where their count is exact."""
    trained = optimizer_parameters(phases)
    return trained[0] if trained and trained[1] else None


def _least_parameters(result: Inference) -> int | None:
    """The fewest parameters the shapes allow: the blocks and one (tied) embedding."""
    v = result.values
    vocab_size = v["vocab_size"] or result.intervals.get("vocab_size", (None,))[0]
    if v["params_blocks"] is None or not vocab_size or v["d_model"] is None:
        return None
    return v["params_blocks"] + vocab_size * v["d_model"]


def _read_fields(
    result: Inference,
    capture: Capture,
    phases: g.Phases,
    layer: g.Layers | None,
    roles: dict | None,
    last_position_logits: bool,
    followers: Sequence[KernelRecord],
    decode: bool = False,
) -> None:
    _mode_and_dtype(result, phases, layer.layer_gemms if layer else g.forward_gemms(phases.forward))
    if layer is None:
        result.missing.append("structure: the forward GEMMs do not repeat layer by layer")
        for name in ("mode", "dtype"):  # whatever ran, it shows no model's step to be sure of
            if result.values[name] is not None:
                result.set(
                    name,
                    result.values[name],
                    min(result.confidence[name], 0.5),
                    result.evidence[name] + " (no layer structure: maybe no model's step)",
                )
        return
    result.set(
        "n_layers",
        layer.n_layers,
        0.9,
        f"{len(layer.layer_gemms)} GEMMs per layer repeat {layer.n_layers} times, then the LM head",
    )
    if roles is None:
        result.missing.append("roles: no attention kernel splits the layer's GEMMs into projections, attention and MLP")
        return
    size = stored_size(result, phases.forward)
    counts = element_counts(phases.forward, size, _element_size(result))
    # a generate's prefill runs its LM head over the last position alone (B rows, not N), and a
    # fused loss over chunks of the rows: neither head can judge a reading of N
    head = None if last_position_logits or loss_chunks(capture, layer.lm_head) > 1 else layer.lm_head
    support = token_candidates(phases.forward)
    found = _tokens_and_width(result, support, roles, counts, head, _attention_stores(result, roles, phases))
    if found is None:
        off_d, why = _attention_off_d(
            support, roles, counts, _element_size(result), head, confirms=_attention_confirms(result, roles, phases)
        )
        if off_d is None:
            result.missing.append(
                "tokens/d_model: no row count and element count explain the output projection"
                + (f"; {why}: heads x head_dim would not be d_model, and no field is read" if why else "")
            )
            return
    else:
        off_d = _off_d_rival(result, phases, roles, support, counts, head, *found)
    if off_d is not None:
        tokens, d, attention_width = off_d.tokens, off_d.d, off_d.width
        result.set("d_model", d, 0.9, off_d.evidence)
        result.evidence["_tokens"] = f"N={tokens} rows seen in {support[tokens]:g} norm/gather/reduction launches"
    else:
        tokens, d = found
        attention_width = d
    decode_batch = _decode_batch(followers, tokens) if last_position_logits else None
    shape = _attention(result, roles, tokens, attention_width, decode_batch, phases.forward)
    if shape is None and attention_width != d:
        # an attention width off d rests on the attention kernel's heads confirming it
        result.unknown(
            "d_model",
            f"the output projection reads as N·{d}·{attention_width}, an attention off d that no (B, T, H, "
            "head_dim) of the attention kernel confirms",
        )
        return
    _mlp(result, roles, tokens, d, size, attention_width)
    if shape:
        _kv_heads(result, roles, tokens, d, shape, counts)
    if decode:  # one new token per sequence, whatever the attention was read as
        result.set(
            "batch",
            tokens,
            0.8,
            f"a decode step runs one token per sequence: B = the {tokens} token rows of its norms and lookups",
        )
    if last_position_logits:
        head_rows = result.values["batch"]
    else:
        head_rows = padded_rows(
            phases.forward, layer.lm_head, ceil_div(tokens, loss_chunks(capture, layer.lm_head)), d, size
        )
    if head_rows:
        _vocab(result, layer.lm_head, phases, head_rows, d, list(followers))
        if not last_position_logits and head_rows > tokens:
            result.evidence["vocab_size"] += f" (N: the head's {head_rows} rows, its input padded from {tokens})"
    else:
        result.unknown("vocab_size", "the LM head's rows (the batch) are not determined")
    if shape and attention_width != d:
        _shard_or_model(result, d, attention_width)
    add_parameter_counts(result, roles, capture, phases)


def padded_rows(forward: list[KernelRecord], gemm: KernelRecord, rows: int, width: int, size: int | None) -> int:
    """The rows a compiled step's GEMM multiplies: `rows`, or rows padded up to 16 bytes of
    elements (torch.compile pads a matmul's input so its tiles load aligned: N=231 runs as 232
    in fp16), which the kernel feeding it stores as padded rows of `width`. `size`: the stored
    element size of a compiled step, None for an eager one (no padding)."""
    feeder = next((k for k in reversed(forward) if k.index < gemm.index and category(k) != MATMUL), None)
    if size is None or feeder is None:
        return rows
    stored = g.stored_width(feeder, width, size)  # the rows it stores
    aligned = round_up(rows, 16 // size)
    return stored if stored and rows < stored <= aligned else rows


def loss_chunks(capture: Capture, head: KernelRecord) -> int:
    """How many row chunks a fused linear cross-entropy (Liger-Kernel's, lmperf's) splits the
    tokens into: its loss kernel and the LM head's GEMM run once per chunk, so the head seen
    last in the forward multiplies ceil(N / chunks) rows. 1 for a loss over the whole logits."""
    losses = [k for k in capture.kernels if category(k) == LOSS and k.index > head.index]
    if not losses:
        return 1
    chunks = sum(k.name == losses[0].name for k in capture.kernels)
    heads = sum(k.name == head.name and g.macs(k) == g.macs(head) for k in capture.kernels)
    return chunks if chunks > 1 and heads >= chunks - 1 else 1  # the last chunk may be smaller


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
        size = _element_size(result)
    mlp_counts = element_counts(between, size)
    slack = SLACK * row_padding(tokens)
    # Counts elsewhere in the step are not read: a LayerNorm's FMUL count (N·4495 at d=1280)
    # passed for N·d_ff on OPT, whose ReLU (a clamp) counts no FP32 ops.
    exact = exact_width(bound, tokens, mlp_counts, slack)
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
            f"own stores = N·{stored}·{_element_size(result)} B each"
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
    widths = {g.output_width(k, tokens, _element_size(result)) for k in ups}
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


def _mlp(result: Inference, roles: dict, tokens: int, d: int, size: int | None, attention_width: int) -> None:
    f = _d_ff(result, roles, tokens, d, size, attention_width)
    ups = roles["ups"]
    up_width = sum(g.macs(k) for k in ups) / (tokens * d)
    gated = len(ups) == 2 or (len(ups) == 1 and up_width > 1.5 * f)
    readings = g.width_readings(ups[0], tokens, d) if len(ups) == 1 else []
    stores_f = len(ups) == 1 and g.output_width(ups[0], tokens, _element_size(result)) == f
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


def _decode_batch(decode_step: Sequence[KernelRecord], tokens: int) -> int | None:
    """B as a generate's first decode step reads it (one token per sequence): the row count its
    norms and lookups agree on most, when it divides the prefill's token rows. It only breaks a
    tie of the prefill's attention: a static cache hands SDPA a mask, the kernel runs whole
    padded tiles, and B=4, T=64 in 64 x 128 tiles counts the work of B=1, T=256; elsewhere the
    decode step's bookkeeping kernels may outnumber its norms."""
    rows = token_candidates(list(decode_step)).most_common(1)
    return rows[0][0] if rows and rows[0][0] >= 1 and tokens % rows[0][0] == 0 else None


def _attention_fit(
    result: Inference,
    roles: dict,
    tokens: int,
    width: int,
    forward: Sequence[KernelRecord] = (),
    batch: int | None = None,
) -> AttentionShape | None:
    """The (B, T, H, head_dim) that best explains the first layer's attention kernel over `tokens`
    rows and an attention `width` wide (H·head_dim), or None; reads nothing into `result`."""
    if roles["kind"] == "softmax":
        between = [k for k in roles["first_layer"] if roles["qk"].index < k.index < roles["pv"].index]
        activations = stored_size(result, roles["first_layer"])
        size = scores_size(roles["qk"], activations)
        shape = naive_shape(roles["qk"], roles["marker"], tokens, width, between, size)
        if shape is not None and size != activations:
            shape = dataclasses.replace(
                shape, evidence=f"{shape.evidence}, in fp32 scores of the fp32 QK^T product (no 16-bit tensor work)"
            )
    else:
        shape = fused_shape(roles["marker"], tokens, width, batch)
        if shape is not None and batch == shape.batch:
            shape = dataclasses.replace(
                shape, evidence=f"{shape.evidence}, B as the {batch} token rows of a decode step"
            )
    if shape is None:
        return None
    shape = untie_by_rotary_table(shape, [k for k in forward if k.index < roles["marker"].index])
    if roles["qkv"]:
        shape = untie_by_causal_mask(shape, _before_attention(roles, roles["qkv"][-1]))
    return shape


def _attention(
    result: Inference,
    roles: dict,
    tokens: int,
    d: int,
    batch: int | None = None,
    forward: Sequence[KernelRecord] = (),
) -> AttentionShape | None:
    """B, T, H and head_dim from the attention kernel; `batch`: a decode step's B, which breaks a
    tie across B, as the rotary angle table among the `forward` kernels may."""
    shape = _attention_fit(result, roles, tokens, d, forward, batch)
    if shape is None:
        for name in ("batch", "seq_len", "n_heads", "head_dim"):
            result.unknown(name, f"attention kernel {roles['marker'].name[:50]} fits no (B, T, H)")
        return None
    confidence = 0.9 if shape.error < EXACT_ATTENTION else 0.6
    evidence = shape.evidence
    # where the work is not modelled exactly (the memory-efficient kernel's TF32 tiles), a grid
    # that names B and H and stores that hold exactly the N·d outputs pin the shape as well
    if (
        confidence < 0.9
        and roles["kind"] != "softmax"
        and grid_names_batch(roles["marker"])
        and _attention_stores_fit(result, roles, tokens, shape) is True
    ):
        confidence = 0.9
        evidence += "; its grid (query tiles, H, B) names B and H, and its stores hold the N·d outputs exactly"
    if confidence < 0.9 and roles["kind"] == "softmax" and _template_pins(result, roles, shape):
        confidence = 0.9
        evidence += (
            f"; QK^T's bmm template launches {roles['qk'].grid} = (tiles, B·H, 1) and stores its"
            f" {stored_bytes(roles['qk']):,.0f} B of B·H·T² scores exactly"
        )
    # a tie of other heads leaves H and head_dim resting on the same choice as B and T
    tied_fields = ("batch", "seq_len", "n_heads", "head_dim")
    if shape.ties:
        if all(h == shape.n_heads for _, _, h in shape.ties):
            tied_fields = ("batch", "seq_len")
        others = ", ".join(f"B={b}, T={t}" + (f", H={h}" if h != shape.n_heads else "") for b, t, h in shape.ties)
        result.assumptions.append(
            f"{' and '.join(tied_fields)}: {others} explain the attention kernel's grid and work as well as "
            f"B={shape.batch}, T={shape.seq_len}; the fewest sequences is taken"
        )
    for name, value in (
        ("batch", shape.batch),
        ("seq_len", shape.seq_len),
        ("n_heads", shape.n_heads),
        ("head_dim", shape.head_dim),
    ):
        tied = shape.ties and name in tied_fields
        result.set(name, value, min(confidence, TIED) if tied else confidence, evidence)
    return shape


def _template_pins(result: Inference, roles: dict, shape: AttentionShape) -> bool:
    """Whether a naive attention's QK^T, a Triton bmm template, pins `shape` by its grid and
    stores (`template_pins_products`), in the scores' size its softmax reads them in."""
    size = scores_size(roles["qk"], stored_size(result, roles["first_layer"]))
    return template_pins_products(roles["qk"], shape, size)


def _kv_heads(result, roles, tokens, d, shape: AttentionShape, counts: Counter) -> None:
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
    size = _element_size(result)
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


def _launched_after(roles: dict, kernel: KernelRecord) -> KernelRecord | None:
    """The first layer's kernel launched right after `kernel`, or None."""
    layer = roles["first_layer"]
    return next((layer[i + 1] for i, k in enumerate(layer[:-1]) if k is kernel), None)


def _counts_off_multiples(counts: Counter, tokens: int, d: int) -> Counter:
    """`counts` without those that read as N·w for a w that is a whole multiple of d."""
    kept = type(counts)({v: n for v, n in counts.items() if all(w % d for w in _count_widths(v, tokens, counts))})
    kept.row_extra = getattr(counts, "row_extra", 0)
    return kept


def _before_attention(roles: dict, after: KernelRecord, scores: bool = False) -> list[KernelRecord]:
    """The first layer's kernels after `after` and before its attention kernel, or with `scores`
    before the naive attention's QK^T matmul where there is one."""
    end = (roles["qk"] or roles["marker"]) if scores else roles["marker"]
    return [k for k in roles["first_layer"] if after.index < k.index < end.index]


def _rotated_widths(roles: dict, tokens: int, size: int) -> set[int]:
    """The widths w of N·w elements that kernels between the Q/K/V projections and the attention
    store: the rotary embedding, which stores q and k rotated (one kernel when fused, eager
    Liger's or compiled), stores N·(q + k) of them. The MLP's activation, which a compiled
    parallel-residual layer may run in between, is left out."""
    widths = set()
    for k in _before_attention(roles, roles["qkv"][-1], scores=True):
        if category(k) != MATMUL and not _ACTIVATION.search(k.name.lower()):
            width = g.stored_width(k, tokens, size)
            widths |= {width} if width else set()
    return widths


def _rotated_in_turn(roles: dict) -> set[Fraction]:
    """The ratios r of k's width to q's where eager kernels rotate q, then k, op by op (multiply by
    cos, negate and concatenate the halves, multiply by sin, add: a partial rotary's too): two
    runs of kernels of the same names, each doing float work, the second doing r times the
    first's in every kernel, since k's heads rotate as many dimensions as q's."""
    between = [
        k for k in _before_attention(roles, roles["qkv"][-1], scores=True) if category(k) not in (MATMUL, ATTENTION)
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
    between = [k for k in _before_attention(roles, roles["qkv"][0], scores=True) if category(k) != MATMUL]
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


def _vocab(
    result: Inference, head: KernelRecord, phases: g.Phases, tokens: int, d: int, followers: list[KernelRecord]
) -> None:
    # An fp32 FFMA GEMM may add one FFMA per output element (the epilogue: K counts as d + 1, or
    # d for a gemv): dividing by d keeps the bound an upper one either way.
    bound = g.macs(head) / (tokens * d)
    low = bound / (SLACK * row_padding(tokens))
    after_head = [k for k in phases.forward + phases.backward if k.index > head.index]
    before_head = [k for k in phases.forward if k.index < head.index]
    # where the head's tiles pad V by a known step, only a reading they hold counts: a bf16 copy
    # of the logits (N·V·2 B) reads as an fp32 one of V/2, inside the looser row-padding bound
    spans = g.width_readings(head, tokens, d)
    tiles = g.outer_span(spans)
    near, far = (max(low, tiles[0]), min(bound, tiles[1])) if tiles else (low, bound)
    gradients = [k for k in phases.backward if k.index > head.index]
    # the tilings' readings may be disjoint (the rows on either side of the tile): a V in a gap
    # between them lies in [near, far] and still contradicts the head's work, so set_vocab takes
    # the readings themselves too
    if vocab.set_vocab(result, head, after_head + followers, tokens, near, far, before_head, d, gradients, spans):
        return
    # Tiles pad both the rows (N) and the vocabulary: V is at most the work / (N·d), and at least
    # that with the largest row and column padding the GEMM's tiles allow; an nvjet kernel's name
    # says both paddings, which leaves one column tile.
    if tiles:
        low, high = tiles
    else:
        high, low = int(bound), max(1, int(low) - (g.tile_extent(head.name) or 256) + 1)
    tma_store = head.metrics.get(g.STORE_BYTES) == 0  # None: a capture without the counter
    if g.tensor_path(head) in ("bf16", "fp16") and tma_store:
        high, low = high // 8 * 8, round_up(low, 8)  # a TMA store (0 bytes counted) needs V % 8 == 0
    # only within the head's tiles: the work bound alone holds the casts of other d-wide weights
    padded = vocab.padded_weight_vocab(before_head, tokens, d, _element_size(result), low, high) if tiles else None
    if padded:
        low, high = padded - g.PAD_MM_ROWS + 1, padded
    copied = f": a kernel before it copies its weight padded to {padded} rows of d" if padded else ""
    result.bound(
        "vocab_size",
        low,
        high,
        0.5,
        f"LM head {g.macs(head):,.0f} MACs = padded rows x padded V x d: V is in "
        f"[{low}, {high}]{copied} (no loss kernel, and no store count, pins it)",
    )


def infer_file(path: Path) -> Inference:
    return infer(read_capture(path))
