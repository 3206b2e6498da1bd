"""Inference captures: `generate` with a KV cache is one prefill over the prompt, then one decode
step per new token, and every step ends at the LM head.

Hugging Face computes the logits of the last position only (`logits_to_keep=1`), so every step's
LM head multiplies B rows: the same kernel with the same work, once per step. The capture splits
at those heads; the first step is the prefill when its token rows (norm grids) outnumber a decode
step's. The architecture is read from the prefill, which has every kernel of a forward pass.
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
    if len(steps) < 2:
        return None
    return Steps(steps, _rows(steps[0]) > _rows(steps[1]))
