"""The producer/consumer pipeline both Gluon kernels are built on.

A producer warp fills a ring of shared-memory slots by TMA; two consumer warp groups (the
kernel's own four warps and four more) compute from them and release each slot when done.
`ring_barriers` makes a ring's mbarriers; `specialise` forks a kernel into that pipeline.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language import _core as gl_core
from triton.experimental.gluon.language.nvidia.hopper import mbarrier


@gluon.jit
def ring_barriers(STAGES: gl.constexpr, CONSUMERS: gl.constexpr):
    """A ring's mbarriers: `ready` (a slot's TMA loads landed; the producer's one arrival with
    the byte count) and `empty` (every consumer warp group done with the slot: one arrival each)."""
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for s in gl.static_range(STAGES):
        mbarrier.init(ready.index(s), count=1)
        mbarrier.init(empty.index(s), count=CONSUMERS)
    return ready, empty


@gl_core.builtin
def specialise(consumer, consumer_args, producer, producer_args, consumer_registers, producer_registers,
               _semantic=None, _generator=None):
    """gl.warp_specialize into consumer warp groups 0 (the default partition) and 1, each called
    as consumer(*consumer_args, WG), and a one-warp producer(*producer_args), with setmaxnreg's
    register counts for each.

    A builtin rather than a Gluon function: a partition function passed to a Gluon function
    arrives wrapped as a constexpr, which gl.warp_specialize cannot call; and the argument
    tuples are built here, since a tuple bound to a name in Gluon code turns its constexprs
    (WG, the kernels' flags) into tensors."""
    consumer, producer = gl_core._unwrap_if_constexpr(consumer), gl_core._unwrap_if_constexpr(producer)
    partitions = [(consumer, gl_core.tuple([*consumer_args, gl.constexpr(wg)])) for wg in (0, 1)]
    return gl.warp_specialize(partitions + [(producer, producer_args)], [4, 1],
                              [consumer_registers, producer_registers], _semantic=_semantic, _generator=_generator)
