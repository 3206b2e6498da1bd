"""What a tuning asks of an SM: the Gluon kernels' shared memory and registers, from their tiles.

The counts follow the kernels' allocations (sm90.forward._fwd_kernel, sm90.backward._bwd_kernel)
buffer by buffer, in bf16/fp16; the compiler adds mbarriers and alignment on top (under 2 KB for
every configuration here). `check` refuses a tuning that cannot run, before anything compiles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lmperf.attention.sm90 import shape
from lmperf.attention.sm90.tma import column_blocks

if TYPE_CHECKING:
    from lmperf.attention.sm90.tuning import Tuning

SHARED_BYTES = 227 * 1024  # shared memory one sm90 block may allocate
REGISTERS = 64 * 1024  # 32-bit registers of an SM, which one persistent program holds alone
WARP_GROUP = 128  # threads; setmaxnreg applies per warp group
ELEMENT = 2  # bytes of a bf16/fp16 element
FP32 = 4


def forward_shared_bytes(tuning: Tuning, head_dim: int, causal: bool) -> int:
    """The forward's buffers: Q (query_buffers x CONSUMERS tiles of ROWS rows), the K/V ring,
    O's staging where it leaves by TMA, and each consumer's row sums."""
    rows = shape.CONSUMERS * shape.ROWS
    q = tuning.query_buffers(head_dim) * rows * head_dim * ELEMENT
    ring = 2 * tuning.kv_slots * tuning.key_tile * head_dim * ELEMENT
    o_stage = rows * head_dim * ELEMENT if tuning.stores_o_by_tma(head_dim, causal) else 0
    return q + ring + o_stage + rows * FP32


def backward_shared_bytes(tuning: Tuning, head_dim: int, persistent: bool) -> int:
    """The backward's buffers: the Q/dO ring with its LSE and delta rows, K and V of 128 keys
    (twice when persistent), dS^T slots, dQ_i's fp32 buffers, and the persistent kernel's dK/dV
    staging."""
    main, tail = column_blocks(head_dim)
    rows, keys = shape.ROWS, 2 * shape.BACKWARD_KEYS
    slots = tuning.persistent_backward_slots if persistent else tuning.backward_slots
    ring = slots * (2 * rows * head_dim * ELEMENT + 2 * rows * FP32)
    kv = (2 if persistent else 1) * 2 * keys * head_dim * ELEMENT
    dq_width = min(shape.DQ_COLUMNS, main)
    ds = (2 if dq_width != main else 3) * keys * rows * ELEMENT  # a third slot where dQ_i is made a tile late
    dq = (2 if dq_width == main else 4) * rows * dq_width * FP32 + (2 * rows * tail * FP32 if tail else 0)
    dkv_stage = 4 * rows * main * ELEMENT if persistent else 0
    return ring + kv + ds + dq + dkv_stage


def register_file(tuning: Tuning) -> int:
    """Registers of a program after setmaxnreg: the consumer warp groups' and the producer's."""
    return WARP_GROUP * (shape.CONSUMERS * tuning.consumer_registers + tuning.producer_registers)


def check(tuning: Tuning) -> None:
    """ValueError unless every forward and backward configuration of `tuning` fits an SM."""
    problems = [
        f"forward head_dim {d} causal {c}: {n} B of shared memory"
        for d in shape.HEAD_DIMS
        for c in (False, True)
        if (n := forward_shared_bytes(tuning, d, c)) > SHARED_BYTES
    ]
    problems += [
        f"backward head_dim {d}{' persistent' if p else ''}: {n} B of shared memory"
        for d in shape.HEAD_DIMS
        for p in (False, d in tuning.persistent_backward_from_keys)
        if (n := backward_shared_bytes(tuning, d, p)) > SHARED_BYTES
    ]
    if register_file(tuning) > REGISTERS:
        problems.append(f"{register_file(tuning)} registers a program")
    if any(r % 8 or not 24 <= r <= 256 for r in (tuning.consumer_registers, tuning.producer_registers)):
        problems.append("setmaxnreg takes multiples of 8 from 24 to 256")
    if problems:
        raise ValueError(
            f"sm90 tuning exceeds an SM ({SHARED_BYTES} B shared, {REGISTERS} registers): " + "; ".join(problems)
        )
