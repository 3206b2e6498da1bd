"""Tile arithmetic of GPU kernels: counts rounded up to whole tiles, and how much of the causal
score square a tiled attention kernel executes (torch-free, so that `lmperf pmc infer` reads a
capture without importing torch)."""

from __future__ import annotations


def ceil_div(count: int, size: int) -> int:
    """How many pieces of `size` cover `count`: ceil(count / size) in integers, exact where a
    float division would round (100 rows in tiles of 64: 2; 128: 2; 129: 3; 0: 0)."""
    return -(-count // size)


def round_up(count: int, multiple: int) -> int:
    """`count` rounded up to a whole number of `multiple`s: the rows or columns a kernel runs when
    it pads them to whole tiles (100 rows in tiles of 64: 128; 128: 128; 129: 192; 0: 0)."""
    return ceil_div(count, multiple) * multiple


def causal_tile_fraction(seq_len: int, tile_q: int = 128, tile_k: int = 128) -> float:
    """Share of the T×T score square a causal kernel executes when it skips whole masked tiles:
    every (tile_q × tile_k) tile that touches the diagonal or below runs in full (4 tiles of 64:
    10/16; a 256-long sequence in 128-tiles: 3/4). Hardware counters see this, not T²/2."""
    executed = sum(
        tile_q * tile_k * ceil_div(min((i + 1) * tile_q, seq_len), tile_k) for i in range(ceil_div(seq_len, tile_q))
    )
    return executed / (seq_len * seq_len)
