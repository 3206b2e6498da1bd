"""Every tuning choice of the sm90 Gluon kernels, each with the reason for its value.

`current()` is the `Tuning` in force; `variant(**changes)` runs a block with some of its fields
replaced, which is how benchmarks time an alternative and tests reach a rarer path:

    with tuning.variant(query_slots={64: 1}):
        ...  # the forward at head_dim 64 with one Q buffer

A variant is checked before it takes effect: a field it names must exist, and every forward and
backward configuration must still fit sm90's shared memory (`resources`). The measurements
behind the values are tabled in docs/attention-tuning.md; this module keeps only the reasons.
Plain Python (no Triton), so that dispatch can read it with any Triton installed.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator, Mapping

from lmperf.attention.sm90 import resources

# The structural constants, read here beside the tuning fields by the kernels' host code
from lmperf.attention.sm90.shape import BACKWARD_KEYS as BACKWARD_KEYS
from lmperf.attention.sm90.shape import COMBINE_ELEMENTS as COMBINE_ELEMENTS
from lmperf.attention.sm90.shape import CONSUMERS as CONSUMERS
from lmperf.attention.sm90.shape import DQ_COLUMNS as DQ_COLUMNS
from lmperf.attention.sm90.shape import HEAD_DIMS as HEAD_DIMS
from lmperf.attention.sm90.shape import ROWS as ROWS


def _default(value):
    return dataclasses.field(default_factory=lambda: value.copy())


@dataclasses.dataclass(frozen=True)
class Tuning:
    """The sm90 kernels' tuning choices. Per-head_dim tables name only the head dims that differ
    from the default given with them."""

    # --- forward
    # Keys per K/V tile: S, P and O of a consumer fit its registers (at most 104 bytes spilled),
    # and Q K^T from shared memory needs three quarters of the SM's shared-memory bandwidth at
    # 128 keys where 64 keys need all of it.
    key_tile: int = 128
    # K/V ring slots: two starve the ring; four do not fit beside Q at head_dim 128.
    kv_slots: int = 3
    # head_dim -> Q buffers (default 1): a second lets the producer load the next query tile's Q
    # under the current one's last Q K^T; slower at 80, and 128 has no room.
    query_slots: Mapping[int, int] = _default({64: 2})
    # (head_dim, causal) whose O leaves by a TMA store staged in shared memory, where that beats
    # register stores; slower at causal 80, and 128 has no room.
    o_by_tma: frozenset = frozenset({(64, False), (64, True), (80, False)})
    # Causal head dims that take single query tiles in the host's longest-first order (balanced
    # over the SMs) instead of pairs of tiles in a fixed turn; the pairs are faster at 80.
    ordered_causal: frozenset = frozenset({64, 128})
    # Bytes of K and V a section of heads reads in the ordered schedule, so that the tiles at
    # work at once share the L2 (an H100's holds 50 MB).
    l2_share: int = 16 << 20
    # A query tile's own cost beside its key tiles (first S, last P V, epilogue), in key tiles,
    # in the ordered schedule's balance.
    tile_cost: float = 1.0
    # head_dim -> the fewest keys at which a non-causal forward runs a sparse last round as runs
    # over keys (schedule.split_plan): faster at 64 from 4096 keys, mixed at 80; the benchmark
    # shapes leave no sparse last round at 128.
    split_from_keys: Mapping[int, int] = _default({64: 4096})
    # Causal head dims whose consumers run a diagonal tile they see only half of at half width:
    # faster at 128, mixed at 64.
    half_diagonal: frozenset = frozenset({128})
    # Head dims whose consumers store their row sums to shared memory every key tile: the store
    # keeps ptxas from moving the P V wait above the softmax. Faster at 128 only, where the
    # tensor and MUFU pipes were not already both busy.
    sums_to_shared: frozenset = frozenset({128})
    # (head_dim, causal) -> the fewest keys at which the Gluon forward runs (default 1): it
    # trails the portable forward only at head_dim 64 causal below 2048 keys.
    forward_from_keys: Mapping[tuple[int, bool], int] = _default({(64, True): 2048})
    # setmaxnreg of the consumer warp groups and of the producer (padded to a warp group): two
    # consumers at 240 and a producer at 24 fill the 64K registers of an SM.
    consumer_registers: int = 240
    producer_registers: int = 24

    # --- backward
    # The fewest keys at which the Gluon backward runs, at every head_dim it takes: ahead of
    # both portable backwards from 1024 keys, the shortest benchmark length.
    backward_from_keys: int = 1024
    # head_dim -> the fewest keys at which the backward is persistent (one program per SM
    # taking items from a counter, dQ converted in the kernel): faster at 64; at 80 and 128
    # there is no shared memory left for the second K/V buffer.
    persistent_backward_from_keys: Mapping[int, int] = _default({64: 1024})
    # Q/dO ring slots of a program per item, and of the persistent kernel (which holds a third
    # in its shared memory and is faster with it; a program per item gains nothing).
    backward_slots: int = 2
    persistent_backward_slots: int = 3
    # Backward head dims with K and V as the register operands of S^T and dP^T (read from shared
    # memory once per item): faster at 64; at 80 the consumers spill.
    kv_in_registers: frozenset = frozenset({64})

    def query_buffers(self, head_dim: int) -> int:
        return self.query_slots.get(head_dim, 1)

    def stores_o_by_tma(self, head_dim: int, causal: bool) -> bool:
        return (head_dim, causal) in self.o_by_tma

    def backward_persistent(self, head_dim: int, seq_k: int) -> bool:
        return seq_k >= self.persistent_backward_from_keys.get(head_dim, float("inf"))


DEFAULT = Tuning()
_active = DEFAULT


def current() -> Tuning:
    """The tuning in force: DEFAULT, or the innermost `variant`'s."""
    return _active


@contextlib.contextmanager
def variant(**changes) -> Iterator[Tuning]:
    """Run the block with `changes` (Tuning's field names) replacing the tuning in force; a
    change that names no field, or leaves a configuration over sm90's shared memory, raises
    ValueError before the block runs."""
    global _active
    unknown = set(changes) - {field.name for field in dataclasses.fields(Tuning)}
    if unknown:
        raise ValueError(f"no sm90 tuning field {', '.join(sorted(unknown))}")
    chosen = dataclasses.replace(_active, **changes)
    resources.check(chosen)
    previous, _active = _active, chosen
    try:
        yield chosen
    finally:
        _active = previous
