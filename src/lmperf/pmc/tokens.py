"""The token count B·T of a forward pass, read from kernels that run one program, or one row
reduction, per token: LayerNorm and embedding-gather grids, row reductions' FMUL counts."""

from __future__ import annotations

from collections import Counter

from lmperf.analysis.kernels import NORM, REDUCTION, kernel_category
from lmperf.pmc import gemms as g
from lmperf.pmc.completeness import is_lookup
from lmperf.pmc.parse import KernelRecord


def token_candidates(forward: list[KernelRecord]) -> Counter:
    """Row counts = N: LayerNorm and embedding-gather grids, row-reduction FMUL counts."""
    rows: Counter = Counter()
    for k in forward:
        cls = kernel_category(k.name)
        if (cls == NORM and "layer_norm" in k.name.lower()) or is_lookup(k):
            rows[k.grid[0]] += 1
        if cls == REDUCTION and k.metric(g.FMUL):
            rows[int(k.metric(g.FMUL))] += 1
    return rows
