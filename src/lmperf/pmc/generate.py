"""Inference captures: `generate` with a KV cache is one prefill over the prompt, then one decode
step per new token, and every step ends at the LM head.

Hugging Face computes the logits of the last position only (`logits_to_keep=1`), so every step's
LM head multiplies B rows: the same kernel with the same work, once per step. The capture splits
at those heads; the first step is the prefill when its token rows (norm grids) outnumber a decode
step's. The architecture is read from the prefill, which has every kernel of a forward pass; a
capture of decode steps alone is read from its last step, whose KV-cache update gives the context.
"""

from __future__ import annotations

from dataclasses import dataclass

from lmperf.analysis.kernels import MATMUL, kernel_category
from lmperf.pmc import gemms as g
from lmperf.pmc.parse import Capture, KernelRecord


@dataclass(frozen=True)
class Steps:
    """The kernels of each generate step, in order; `prefill` when the first one is a prefill."""

    steps: list[list[KernelRecord]]
    prefill: bool

    @property
    def decode_steps(self) -> int:
        return len(self.steps) - (1 if self.prefill else 0)


def _rows(kernels: list[KernelRecord]) -> int:
    """The most rows any norm or gather launch of a step covers (its token count B·T)."""
    from lmperf.pmc.infer import token_candidates

    return max(token_candidates(kernels) or [0])


def split_steps(capture: Capture) -> Steps | None:
    """The generate steps, or None when the capture holds fewer than two LM-head repeats."""
    kernels = capture.kernels
    phases = g.split_phases(capture)
    if phases.backward or phases.optimizer:
        return None  # a training step: its backward GEMMs may repeat the LM head's shape
    gemms = [k for k in kernels if kernel_category(k.name) == MATMUL and g.macs(k) > 0]
    if not gemms:
        return None
    head = gemms[-1]
    heads = [k for k in gemms if k.name == head.name and g.macs(k) == g.macs(head)]
    if len(heads) < 2 or any(k.index <= heads[0].index for k in gemms if k not in heads
                             and k.index > heads[-1].index):
        return None
    bounds = [-1] + [k.index for k in heads]
    steps = [[k for k in kernels if lo < k.index <= hi] for lo, hi in zip(bounds, bounds[1:])]
    counts = [sum(k in gemms for k in step) for step in steps]
    if len(steps) < 2 or len(set(counts[1:])) > 1 or counts[0] > counts[1]:
        return None  # each step after the first is one whole forward pass (the first may be cut)
    prefill = _rows(steps[0]) > _rows(steps[1])
    if not prefill and not all(_embeds(step) for step in steps[1:]):
        return None  # repeats of a layer's GEMM (a forward range cut after a layer), not steps
    return Steps(steps, prefill)


def _embeds(step: list[KernelRecord]) -> bool:
    """Whether the step looks up token embeddings (a gather) before its first GEMM, as every
    forward pass does and no layer does."""
    first_gemm = next(k.index for k in step if kernel_category(k.name) == MATMUL)
    return any(("gather" in k.name.lower() or "index_select" in k.name.lower()
                or "indexselect" in k.name.lower()) for k in step if k.index < first_gemm)


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
