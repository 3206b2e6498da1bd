"""The collectives data parallelism uses, and nccl-tests' bus bandwidth definitions.

`size` is the whole buffer (all-reduce's buffer, all-gather's output, reduce-scatter's input).
In a ring each link carries the bus factor times `size`: 2(n-1)/n for all-reduce (a
reduce-scatter, then an all-gather) and (n-1)/n for all-gather and reduce-scatter, so bus
bandwidth = size / time x bus factor is comparable across process counts and with a link's speed.
"""

from __future__ import annotations

COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter")


def bus_factor(op: str, nproc: int) -> float:
    return 2 * (nproc - 1) / nproc if op == "all-reduce" else (nproc - 1) / nproc
