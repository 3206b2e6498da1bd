"""Does Triton 3.6's Gluon reach the TMA bulk reduction on sm90? (compile only; no GPU needed)

Gluon's `hopper.tma` module wraps TMA loads and stores but not reductions; its op builder has
`create_async_tma_reduce`. This compiles a kernel that adds a 64 x 64 fp32 shared-memory tile into
a tensor through the builtin `_tma_reduce_add` (first the Gluon backward trial's mode 11, since
2026-11-25 lmperf.attention.flash_gluon_backward's) and prints the PTX instructions it became.

    PYTHONPATH=src python benchmarks/facts/gluon_tma_reduce_probe.py
"""

import re

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma

from lmperf.attention.flash_gluon_backward import _tma_reduce_add as tma_reduce_add


@gluon.jit
def _kernel(desc, num_warps: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 4], [2, 16], [num_warps, 1], [1, 0])
    tile = gl.full([64, 64], 1.0, gl.float32, layout)
    smem = gl.allocate_shared_memory(gl.float32, [64, 64], desc.layout, tile)
    fence_async_shared()
    tma_reduce_add(desc, [gl.program_id(0) * 64, 0], smem)
    tma.store_wait(0)


def main() -> None:
    layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.float32)
    source = GluonASTSource(_kernel, {"desc": f"tensordesc<fp32[64, 64],{layout!r}>", "num_warps": "constexpr"},
                            {"num_warps": 4})
    ptx = triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4)).asm["ptx"]
    print(f"triton {triton.__version__}, sm90:")
    for line in sorted({re.sub(r"\s+", " ", x.strip()) for x in ptx.splitlines() if "cp.reduce" in x or "bulk.wait" in x}):
        print("  " + line)


if __name__ == "__main__":
    main()
