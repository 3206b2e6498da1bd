"""The sm90 compiler's report on FlashAttention2Triton's kernels, on a machine without a GPU.

`python benchmarks/attention/sm90_report.py [wide|atomic-32-row]` compiles every config of
flash_triton.TILES (or variants.py's WIDE_TILES, or the atomic backward's old 32-row dK/dV
tiles) for an H100 (Triton ahead-of-time, target cuda:90, bf16, every integer argument
divisible by 16 as the benchmark shapes are) and prints, per kernel, head_dim,
causal and config: registers, spilled stack bytes and shared memory (cuobjdump's resource usage),
the cp.async copies of the software pipeline, the wgmma waits that drain every matmul in
flight, and the matmuls left off wgmma (register-operand mma). This is how the candidate tiles
of docs/attention.md were chosen before any device time.
The Triton here may be newer than the device's: treat the figures as close, not exact, or
run it with the device's (`pip install triton==3.6.0` in a virtual environment), as the
report sm90-report-*-triton36.txt was.
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from lmperf.attention import flash_triton as ft

TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
POINTERS = {"Q": "*bf16", "K": "*bf16", "V": "*bf16", "O": "*bf16", "DO": "*bf16", "DK": "*bf16", "DV": "*bf16",
            "LSE": "*fp32", "DELTA": "*fp32", "DQ": "*fp32", "LOCKS": "*i32"}
FLOATS = {"qk_scale", "sm_scale"}


def compile_sm90(kernel, config, constexprs):
    """One kernel, one config: the compiled kernel for cuda:90."""
    m, n, warps, stages, *maxnreg = config
    names = kernel.arg_names
    # Only the constexprs this version of the kernel declares (the preprocess kernel has no
    # BLOCK_N; a clean-up may drop one that sass_fingerprint.py still passes).
    constexprs = {name: value for name, value in dict(constexprs, BLOCK_M=m, BLOCK_N=n).items() if name in names}
    signature, divisible = {}, []
    for index, name in enumerate(names):
        if name in constexprs:
            signature[name] = "constexpr"
        elif name in FLOATS:
            signature[name] = "fp32"
        else:
            signature[name] = POINTERS.get(name, "i32")
            divisible.append((index,))
    source = ASTSource(kernel, signature, constexprs, {i: [["tt.divisibility", 16]] for i in divisible})
    options = dict(num_warps=warps, num_stages=stages, **({"maxnreg": maxnreg[0]} if maxnreg else {}))
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=options)


def cuobjdump(compiled, flag: str) -> str:
    """cuobjdump's output for the compiled kernel's cubin (flag: --dump-resource-usage, -sass)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        return subprocess.run([TOOLS / "cuobjdump", flag, cubin.name], capture_output=True, text=True, check=True).stdout


def resources(compiled):
    report = cuobjdump(compiled, "--dump-resource-usage")
    usage = dict(re.findall(r"(REG|STACK):(\d+)", report))
    ttgir = compiled.asm["ttgir"]
    return dict(
        registers=int(usage["REG"]), stack=int(usage["STACK"]), shared_kb=compiled.metadata.shared // 1024,
        async_copies=ttgir.count("ttg.async_copy_global_to_local"),
        full_waits=len(re.findall(r"warp_group_dot_wait .*pendings = 0", ttgir)),
        # Matmuls left on the register-operand mma path (tt.dot after lowering) rather than wgmma.
        register_mma_dots=len(re.findall(r"= tt\.dot ", ttgir)),
    )


def constexprs_for(name, head_dim, causal):
    common = dict(HEAD_DIM=head_dim, BLOCK_D=head_dim, BLOCK_E=0, CAUSAL=causal, PRECISION="tf32")
    extra = {"fwd": dict(WARP_SPECIALIZE=False), "dkdv": dict(DQ_MODE=0, GROUP=1), "dkdv_dq": dict(DQ_MODE=1, GROUP=1), "dq": {}}[name]
    return dict(common, **extra)


def main(tiles):
    print("kernel d causal config: registers, stack B, shared KB, cp.async copies, waits draining all wgmma")
    for name, by_size in tiles.items():
        for large, configs in by_size.items():
            for causal in (False, True):
                for config in configs:
                    head_dim = 128 if large else 64
                    try:
                        report = resources(compile_sm90(ft._KERNELS[name], config, constexprs_for(name, head_dim, causal)))
                    except Exception as error:  # a config the compiler rejects is a line, not a crash
                        report = f"failed: {str(error).splitlines()[-1][:120]}"
                    print(f"{name} d{head_dim} {'causal' if causal else 'full'} {config}: {report}", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(__file__))
    import variants

    tables = {"wide": variants.WIDE_TILES, "atomic-32-row": {"dkdv_dq": variants.ATOMIC_32_ROW_TILES["dkdv_dq"]}}
    main(tables[sys.argv[1]] if sys.argv[1:] else ft.TILES)
