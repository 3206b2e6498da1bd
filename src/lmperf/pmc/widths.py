"""Token rows N, d_model and the attention's width: the row count and exact width that explain the
output projection's N·d·a work (a = d, or an attention off d: a model built so, or one
tensor-parallel rank's shard), judged by elementwise counts, the GEMMs' tiles and the attention
kernel's stores."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from collections.abc import Callable

from lmperf.pmc import gemms as g
from lmperf.pmc.attention_shape import (
    AttentionShape,
    mask_fits,
    stored_bytes,
    stores_deny,
)
from lmperf.analysis.kernels import MATMUL, MATMUL_AUX
from lmperf.analysis.tiles import round_up
from lmperf.pmc.kernels import category, is_generated, runs_norm
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.result import Inference
from lmperf.pmc.counts import (
    EXACT_ATTENTION,
    ROW_TILE,
    SLACK,
    TIED,
    alignment,
    count_widths,
    element_size,
    exact_width,
    row_padding,
)
from lmperf.pmc.heads import attention_fit, attention_stores_fit
from lmperf.pmc.roles import before_attention


def tokens_and_width(
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
    size, out = element_size(result), roles["out"]
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


def attention_off_d(
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
    for kernel in before_attention(roles, roles["qkv"][0]):
        values = (kernel.metric(g.STORE_BYTES) - 4 * kernel.blocks) / size
        if runs_norm(kernel) and values > 0 and values % tokens == 0:
            widths.add(int(values // tokens))
    return widths


def _counted_widths(counts: Counter, tokens: int) -> Counter:
    """width w -> kernels whose element counts read as N·w (N=`tokens`), whole positive widths only."""
    widths: Counter = Counter()
    for count, kernels in counts.items():
        for width in count_widths(count, tokens, counts):
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
            held = [max(held, key=alignment)]
        if len(held) == 1:
            return held[0], f"the only one whose N·d·{vocab:,} work the LM head's tiles hold"
    stored = g.output_width(out, tokens, size)
    if stored and widths[stored]:
        return stored, "the output projection's stores too"
    return widths.most_common(1)[0][0], ""


def attention_confirms(result: Inference, roles: dict, phases: g.Phases) -> Callable[[int, int], bool]:
    """Whether the attention kernel confirms N rows of an attention `width` wide: its counted
    work fits them exactly or its own stores hold their outputs exactly, and its stores do not
    deny them."""

    def confirms(tokens: int, width: int) -> bool:
        return _confirmed(result, roles, tokens, attention_fit(result, roles, tokens, width, phases.forward))

    return confirms


def attention_stores(result: Inference, roles: dict, phases: g.Phases) -> Callable[[int, int], bool | None]:
    """Whether the attention kernel's own stores hold N rows of an attention `width` wide (True),
    deny them (False) or say nothing (None: no stores counted, or no shape fits and the stores
    do not deny every plausible head count, `stores_deny`)."""

    def fit(tokens: int, width: int) -> bool | None:
        shape = attention_fit(result, roles, tokens, width, phases.forward)
        if shape is not None:
            return attention_stores_fit(result, roles, tokens, shape)
        # no (B, T, H) fits, so no heads to judge the log-sum-exps by: the outputs still judge
        denied = roles["kind"] != "softmax" and stores_deny(roles["marker"], tokens, width, element_size(result))
        return False if denied else None

    return fit


def _confirmed(result: Inference, roles: dict, tokens: int, shape: AttentionShape | None) -> bool:
    """Whether the attention kernel confirms the reading `shape` of N = `tokens` rows (see
    `attention_confirms`)."""
    if shape is None:
        return False
    stores = attention_stores_fit(result, roles, tokens, shape)
    return stores is not False and (shape.error < EXACT_ATTENTION or stores is True)


def _masks_fit(roles: dict, shape: AttentionShape) -> bool:
    """Whether a kernel between the Q/K/V projections and the attention stores a causal mask of
    the shape's B and T (or of one of its ties)."""
    if not roles["qkv"]:
        return False
    kernels = before_attention(roles, roles["qkv"][-1])
    return any(mask_fits(kernels, b, t) for b, t, _ in ((shape.batch, shape.seq_len, 0), *shape.ties))


def off_d_rival(
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
    size = element_size(result)
    rival, _ = attention_off_d(
        support, roles, counts, size, head, rival=True, confirms=attention_confirms(result, roles, phases)
    )
    if rival is None:
        return None
    theirs = attention_fit(result, roles, rival.tokens, rival.width, phases.forward)
    if not _confirmed(result, roles, rival.tokens, theirs):
        return None
    ours = attention_fit(result, roles, tokens, d, phases.forward)
    beaten = f"; over N={tokens} rows of an attention {d} wide (N·d·d), "
    if ours is not None and attention_stores_fit(result, roles, tokens, ours) is False:
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


def shard_or_model(result: Inference, d: int, attention_width: int) -> None:
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
