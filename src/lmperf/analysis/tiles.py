"""How much of the causal score square a tiled attention kernel executes (torch-free, so that
`lmperf pmc infer` reads a capture without importing torch)."""

from __future__ import annotations

import math


def causal_tile_fraction(seq_len: int, tile_q: int = 128, tile_k: int = 128) -> float:
    """Share of the T×T score square a causal kernel executes when it skips whole masked tiles:
    every (tile_q × tile_k) tile that touches the diagonal or below runs in full (4 tiles of 64:
    10/16; a 256-long sequence in 128-tiles: 3/4). Hardware counters see this, not T²/2."""
    executed = sum(
        tile_q * tile_k * math.ceil(min((i + 1) * tile_q, seq_len) / tile_k) for i in range(math.ceil(seq_len / tile_q))
    )
    return executed / (seq_len * seq_len)
