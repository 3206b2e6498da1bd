"""The attention's heads: the (B, T, H, head_dim) that explains the first layer's attention kernel
over N token rows of an attention H·head_dim wide, and how sure its grid, work and stores make
that reading."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from lmperf.pmc.attention_shape import (
    AttentionShape,
    fused_shape,
    grid_names_batch,
    naive_shape,
    scores_size,
    stored_bytes,
    stores_fit,
    template_pins_products,
    untie_by_causal_mask,
    untie_by_rotary_table,
)
from lmperf.pmc.parse import KernelRecord
from lmperf.pmc.result import Inference
from lmperf.pmc.counts import EXACT_ATTENTION, TIED, element_size, stored_size
from lmperf.pmc.roles import before_attention


def attention(
    result: Inference,
    roles: dict,
    tokens: int,
    d: int,
    batch: int | None = None,
    forward: Sequence[KernelRecord] = (),
) -> AttentionShape | None:
    """B, T, H and head_dim from the attention kernel; `batch`: a decode step's B, which breaks a
    tie across B, as the rotary angle table among the `forward` kernels may."""
    shape = attention_fit(result, roles, tokens, d, forward, batch)
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
        and attention_stores_fit(result, roles, tokens, shape) is True
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


def attention_fit(
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
        shape = untie_by_causal_mask(shape, before_attention(roles, roles["qkv"][-1]))
    return shape


def attention_stores_fit(result: Inference, roles: dict, tokens: int, shape: AttentionShape) -> bool | None:
    """`stores_fit` of the fused attention kernel for a reading of N = `tokens` rows as `shape`."""
    if roles["kind"] == "softmax":
        return None
    width = shape.n_heads * shape.head_dim
    return stores_fit(roles["marker"], tokens, width, shape.n_heads, element_size(result))


def _template_pins(result: Inference, roles: dict, shape: AttentionShape) -> bool:
    """Whether a naive attention's QK^T, a Triton bmm template, pins `shape` by its grid and
    stores (`template_pins_products`), in the scores' size its softmax reads them in."""
    size = scores_size(roles["qk"], stored_size(result, roles["first_layer"]))
    return template_pins_products(roles["qk"], shape, size)
