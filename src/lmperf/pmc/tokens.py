"""The token count B·T of a forward pass, read from kernels that run one program, or one row
reduction, per token: LayerNorm and embedding-gather grids, row reductions' FMUL counts."""

from __future__ import annotations

import re
from collections import Counter

from lmperf.analysis.kernels import NORM, REDUCTION
from lmperf.pmc.kernels import category
from lmperf.pmc import gemms as g
from lmperf.pmc.completeness import is_lookup
from lmperf.pmc.parse import KernelRecord


# torch.compile's row reductions (a norm, fused with the residual add and the embedding lookup
# before it) run XBLOCK rows a program: one for wide rows, a few for narrow ones. The last program
# may hold fewer rows: N=231 in programs of 2 runs a grid of 116, as N=232 does.
_GENERATED_NORM = re.compile(r"^triton_(red|per)_\w*(mean|rsqrt|norm|var)")
_ROWS_A_PROGRAM = (2, 4)
_MULTIPLE_SUPPORT = 0.25  # a grid times XBLOCK is a weaker reading than the grid itself


def token_candidates(forward: list[KernelRecord]) -> Counter:
    """Row counts = N: LayerNorm and embedding-gather grids, row-reduction FMUL counts, and the
    grids of compiled norms (times a few rows a program, the last program full or not)."""
    rows: Counter = Counter()
    for k in forward:
        cls = category(k)
        if _GENERATED_NORM.match(k.name):
            rows[k.grid[0]] += 1
            for per_program in _ROWS_A_PROGRAM:
                for last_rows in range(1, per_program + 1):
                    rows[(k.grid[0] - 1) * per_program + last_rows] += _MULTIPLE_SUPPORT
            continue
        if (cls == NORM and "layer_norm" in k.name.lower()) or is_lookup(k):
            rows[k.grid[0]] += 1
        if cls == REDUCTION and k.metric(g.FMUL):
            rows[int(k.metric(g.FMUL))] += 1
    return rows
