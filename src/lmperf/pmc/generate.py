"""Inference captures: `generate` with a KV cache is one prefill over the prompt, then one decode
step per new token, and every step ends at the LM head.

Hugging Face computes the logits of the last position only (`logits_to_keep=1`), so every step's
LM head multiplies B rows: the same kernel with the same work, once per step. The capture splits
at those heads; the first step is the prefill when its token rows (norm grids) outnumber a decode
step's. The architecture is read from the prefill, which has every kernel of a forward pass; a
capture of decode steps alone is read from its last step, whose KV-cache update gives the context.
A range cut inside a decode step ends with that step's layer GEMMs, so the head is not simply the
last GEMM: it is the last GEMM whose repeats split the range into steps of equal GEMM and
attention counts (the first step may be cut at its start).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from lmperf.analysis.kernels import ATTENTION, COPY, MATMUL
from lmperf.pmc.kernels import category
from lmperf.pmc import gemms as g
from lmperf.pmc.attention_shape import PLAUSIBLE_HEAD_DIMS
from lmperf.pmc.completeness import attention_groups, forward_start, lookups_before_first_gemm
from lmperf.pmc.parse import Capture, KernelRecord
from lmperf.pmc.tokens import token_candidates

_SAMPLING_EVIDENCE = 5  # sampling kernels seen on both sides of a lone decode step


@dataclass(frozen=True)
class Steps:
    """The kernels of each generate step, in order; `prefill` when the first one is a prefill."""

    steps: list[list[KernelRecord]]
    prefill: bool
    tail: list[KernelRecord]  # the kernels after the last LM head: the last token's sampling

    @property
    def decode_steps(self) -> int:
        return len(self.steps) - (1 if self.prefill else 0)


def _rows(kernels: list[KernelRecord]) -> int:
    """The most rows any norm or gather launch of a step covers (its token count B·T)."""
    return max([rows for rows, support in token_candidates(kernels).items() if support >= 1] or [0])


def split_steps(capture: Capture) -> Steps | None:
    """The generate steps, or None when no LM head repeats over whole steps."""
    kernels = capture.kernels
    phases = g.split_phases(capture)
    if phases.backward or phases.optimizer:
        return None  # a training step: its backward GEMMs may repeat the LM head's shape
    where = [i for i, k in enumerate(kernels) if category(k) == MATMUL and g.macs(k) > 0]
    keys = [(kernels[i].name, g.macs(kernels[i])) for i in where]
    for key in dict.fromkeys(reversed(keys)):  # the head is the last GEMM of the last whole step
        at = [i for i, other in enumerate(keys) if other == key]
        bounds = [-1] + [where[i] for i in at]
        steps = [kernels[lo + 1 : hi + 1] for lo, hi in zip(bounds, bounds[1:])]
        # GEMM launches per step, work or not: a decode step may build its rotary table with
        # cuBLAS's K=1 kernel, which does no FFMA, where the prefill ran a GEMM (Mistral)
        gemms = [sum(category(k) == MATMUL for k in step) for step in steps]
        if len(steps) < 2 or not _whole_steps(steps, gemms):
            continue
        # the LM head is a step's largest GEMM, a layer's never: a forward whose layers end in
        # the same GEMM (compiled, where the norms' row grids vary) is not split at them
        if any(category(k) == MATMUL and g.macs(k) > keys[at[0]][1] for k in kernels[bounds[-1] + 1 :]):
            continue
        prefill = gemms[0] == gemms[1] and _rows(steps[0]) > _rows(steps[1])
        if prefill and 2 * _shared_launches(steps[0], steps[1]) > gemms[1]:
            # a prefill's B·T rows and a decode step's B run other GEMM kernels or other work in
            # all but a few launches (one of 16 in every generate of the corpora); mostly the same
            # launches over "more rows" are a compiled forward's layers, cut at a GEMM, whose norms
            # cover one row a program in the first and two in the second
            continue
        if prefill and _same_attention_work(steps[0], steps[1]):
            continue
        # decode steps alone must each look up embeddings: a layer's repeated GEMM splits a
        # forward range cut after a layer into look-alike steps; and behind a prefill too, each
        # step's head must be its largest GEMM (a compiled layer's norms may cover fewer rows a
        # program in the second layer than in the first, as a decode step's do)
        if (prefill or all(_embeds(step) for step in steps[1:])) and _head_is_largest(steps[1:]):
            return Steps(steps, prefill, kernels[bounds[-1] + 1 :])
    return _one_decode_step(kernels, where)


def _one_decode_step(kernels: list[KernelRecord], gemms: list[int]) -> Steps | None:
    """A range that holds a single decode step: it opens inside the previous token's sampling and
    closes after its own, so the kernels before its embedding lookup run the same ops (by
    category) as the end of those after its LM head, less the copies that prepare its inputs.
    A forward pass's range opens with input preparation and ends at the head or a loss."""
    if not gemms:
        return None
    head = gemms[-1]
    step, tail = kernels[: head + 1], kernels[head + 1 :]
    start = forward_start(step)
    if not tail or start is None:
        return None
    before = [category(k) for k in step[:start]]
    while before and before[-1] == COPY:
        before.pop()
    after = [category(k) for k in tail]
    if len(before) < _SAMPLING_EVIDENCE or after[-len(before) :] != before:
        return None
    return Steps([step], False, tail)


def _same_attention_work(first: list[KernelRecord], second: list[KernelRecord]) -> bool:
    """Whether two steps' attention kernels do the same counted work: a prefill attends B·T
    queries and a decode step B, so theirs differ; a compiled forward's two layers, cut at a
    GEMM they share, attend alike (a max-autotune layer may run other GEMM kernels than the
    next, so the launches alone do not tell)."""
    works = [sum(g.macs(k) for k in step if category(k) == ATTENTION) for step in (first, second)]
    return works[0] > 0 and works[0] == works[1]


def _shared_launches(first: list[KernelRecord], second: list[KernelRecord]) -> int:
    """How many of the second step's GEMM launches the first runs too, by kernel and work."""
    launches = [Counter((k.name, g.macs(k)) for k in step if category(k) == MATMUL) for step in (first, second)]
    return sum((launches[0] & launches[1]).values())


def _whole_steps(steps: list[list[KernelRecord]], gemms: list[int]) -> bool:
    """Each step after the first holds the same GEMMs and every layer's attention; the first at
    most as many (a range may open mid-step)."""
    layers = [attention_groups(step) for step in steps]
    return (
        len(set(gemms[1:])) == 1
        and gemms[0] <= gemms[1]
        and len(set(layers[1:])) == 1
        and 0 < layers[1]
        and layers[0] <= layers[1]
    )


def _head_is_largest(steps: list[list[KernelRecord]]) -> bool:
    """Whether each step's last GEMM, its LM head (V columns), does more work than any other GEMM
    of the step: a compiled forward's layers look up embeddings too (inductor fuses the lookup
    into every norm it feeds), and end in a GEMM whose twin (up and down) does as much."""
    for step in steps:
        gemms = [k for k in step if category(k) == MATMUL]
        if any(g.macs(k) >= g.macs(gemms[-1]) for k in gemms[:-1]):
            return False
    return True


def _embeds(step: list[KernelRecord]) -> bool:
    """Whether the step looks up token embeddings (a gather) before its first GEMM, as every
    forward pass does and no layer does."""
    return bool(lookups_before_first_gemm(step))


def cache_length(layer: list[KernelRecord], batch: int, kv_width: int, size: int) -> int | None:
    """Tokens in the KV cache at a decode step: the cache update (a cat or copy between the K/V
    projections and the attention, `layer` holds those kernels) stores B·L·kv_width·size bytes for
    K and again for V. Eager attention then repeats K/V to every query head (L·group rows), so
    the smallest length that two kernels store is the cache's (K's and V's update: one store
    alone may be a rotary half's concatenation, which a wrong kv_width reads as a cache)."""
    row = batch * kv_width * size
    lengths = [
        int(k.metrics.get(g.STORE_BYTES) // row)
        for k in layer
        if category(k) != MATMUL
        and ("cat" in k.name.lower() or "copy" in k.name.lower())
        and k.metrics.get(g.STORE_BYTES)
        and k.metrics.get(g.STORE_BYTES) % row == 0
    ]
    twice = [n for n in set(lengths) if lengths.count(n) >= 2]
    return min(twice or [0]) or None


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


def decode_batch(decode_step: Sequence[KernelRecord], tokens: int) -> int | None:
    """B as a generate's first decode step reads it (one token per sequence): the row count its
    norms and lookups agree on most, when it divides the prefill's token rows. It only breaks a
    tie of the prefill's attention: a static cache hands SDPA a mask, the kernel runs whole
    padded tiles, and B=4, T=64 in 64 x 128 tiles counts the work of B=1, T=256; elsewhere the
    decode step's bookkeeping kernels may outnumber its norms."""
    rows = token_candidates(list(decode_step)).most_common(1)
    return rows[0][0] if rows and rows[0][0] >= 1 and tokens % rows[0][0] == 0 else None
