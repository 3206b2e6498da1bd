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

This module runs the chain; each reading has a module of its own: `roles` (which GEMM is which),
`widths` (N, d_model and the attention's width), `heads` (B, T, H, head_dim), `kv_heads`, `mlp`
and `vocab`, over the element counts of `counts`.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from lmperf.pmc import gemms as g
from lmperf.pmc import vocab
from lmperf.pmc.collectives import read_parallelism, without_collectives
from lmperf.analysis.kernels import LOSS, MATMUL
from lmperf.analysis.tiles import ceil_div, round_up
from lmperf.pmc.kernels import category
from lmperf.pmc.generate import Steps, cache_length, decode_batch, rotary_heads, split_steps
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
from lmperf.pmc.counts import SLACK, element_counts, element_size, row_padding, stored_size
from lmperf.pmc.heads import attention
from lmperf.pmc.kv_heads import kv_heads
from lmperf.pmc.mlp import mlp
from lmperf.pmc.roles import before_attention, layer_roles
from lmperf.pmc.widths import (
    attention_confirms,
    attention_off_d,
    attention_stores,
    off_d_rival,
    shard_or_model,
    tokens_and_width,
)


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
        between = before_attention(roles, roles["qkv"][-1])
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
    counts = element_counts(phases.forward, size, element_size(result))
    # a generate's prefill runs its LM head over the last position alone (B rows, not N), and a
    # fused loss over chunks of the rows: neither head can judge a reading of N
    head = None if last_position_logits or loss_chunks(capture, layer.lm_head) > 1 else layer.lm_head
    support = token_candidates(phases.forward)
    found = tokens_and_width(result, support, roles, counts, head, attention_stores(result, roles, phases))
    if found is None:
        off_d, why = attention_off_d(
            support, roles, counts, element_size(result), head, confirms=attention_confirms(result, roles, phases)
        )
        if off_d is None:
            result.missing.append(
                "tokens/d_model: no row count and element count explain the output projection"
                + (f"; {why}: heads x head_dim would not be d_model, and no field is read" if why else "")
            )
            return
    else:
        off_d = off_d_rival(result, phases, roles, support, counts, head, *found)
    if off_d is not None:
        tokens, d, attention_width = off_d.tokens, off_d.d, off_d.width
        result.set("d_model", d, 0.9, off_d.evidence)
        result.evidence["_tokens"] = f"N={tokens} rows seen in {support[tokens]:g} norm/gather/reduction launches"
    else:
        tokens, d = found
        attention_width = d
    batch = decode_batch(followers, tokens) if last_position_logits else None
    shape = attention(result, roles, tokens, attention_width, batch, phases.forward)
    if shape is None and attention_width != d:
        # an attention width off d rests on the attention kernel's heads confirming it
        result.unknown(
            "d_model",
            f"the output projection reads as N·{d}·{attention_width}, an attention off d that no (B, T, H, "
            "head_dim) of the attention kernel confirms",
        )
        return
    mlp(result, roles, tokens, d, size, attention_width)
    if shape:
        kv_heads(result, roles, tokens, d, shape, counts)
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
        shard_or_model(result, d, attention_width)
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
    padded = vocab.padded_weight_vocab(before_head, tokens, d, element_size(result), low, high) if tiles else None
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
