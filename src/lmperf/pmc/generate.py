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

from dataclasses import dataclass

from lmperf.analysis.kernels import MATMUL, kernel_category
from lmperf.pmc import gemms as g
from lmperf.pmc.completeness import attention_groups, is_lookup
from lmperf.pmc.parse import Capture, KernelRecord


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
    from lmperf.pmc.infer import token_candidates

    return max(token_candidates(kernels) or [0])


def split_steps(capture: Capture) -> Steps | None:
    """The generate steps, or None when no LM head repeats over whole steps."""
    kernels = capture.kernels
    phases = g.split_phases(capture)
    if phases.backward or phases.optimizer:
        return None  # a training step: its backward GEMMs may repeat the LM head's shape
    where = [i for i, k in enumerate(kernels) if kernel_category(k.name) == MATMUL and g.macs(k) > 0]
    keys = [(kernels[i].name, g.macs(kernels[i])) for i in where]
    for key in dict.fromkeys(reversed(keys)):  # the head is the last GEMM of the last whole step
        at = [i for i, other in enumerate(keys) if other == key]
        bounds = [-1] + [where[i] for i in at]
        steps = [kernels[lo + 1:hi + 1] for lo, hi in zip(bounds, bounds[1:])]
        gemms = [b - a for a, b in zip([-1] + at, at)]  # GEMMs per step
        if len(steps) < 2 or not _whole_steps(steps, gemms):
            continue
        prefill = gemms[0] == gemms[1] and _rows(steps[0]) > _rows(steps[1])
        # decode steps alone must each look up embeddings: a layer's repeated GEMM splits a
        # forward range cut after a layer into look-alike steps
        if prefill or all(_embeds(step) for step in steps[1:]):
            return Steps(steps, prefill, kernels[bounds[-1] + 1:])
    return None


def _whole_steps(steps: list[list[KernelRecord]], gemms: list[int]) -> bool:
    """Each step after the first holds the same GEMMs and every layer's attention; the first at
    most as many (a range may open mid-step)."""
    layers = [attention_groups(step) for step in steps]
    return (len(set(gemms[1:])) == 1 and gemms[0] <= gemms[1]
            and len(set(layers[1:])) == 1 and 0 < layers[1] and layers[0] <= layers[1])


def _embeds(step: list[KernelRecord]) -> bool:
    """Whether the step looks up token embeddings (a gather) before its first GEMM, as every
    forward pass does and no layer does."""
    first_gemm = next(k.index for k in step if kernel_category(k.name) == MATMUL)
    return any(is_lookup(k) for k in step if k.index < first_gemm)


def cache_length(layer: list[KernelRecord], batch: int, kv_width: int, size: int) -> int | None:
    """Tokens in the KV cache at a decode step: the cache update (a cat or copy between the K/V
    projections and the attention, `layer` holds those kernels) stores B·L·kv_width·size bytes for
    K and again for V. Eager attention then repeats K/V to every query head (L·group rows), so
    the smallest length that two kernels store is the cache's."""
    row = batch * kv_width * size
    lengths = [int(k.metrics.get(g.STORE_BYTES) // row) for k in layer
               if kernel_category(k.name) != MATMUL and ("cat" in k.name.lower() or "copy" in k.name.lower())
               and k.metrics.get(g.STORE_BYTES) and k.metrics.get(g.STORE_BYTES) % row == 0]
    twice = [n for n in set(lengths) if lengths.count(n) >= 2]
    return min(twice or lengths or [0]) or None
