"""The sm90 compiler's report on the Gluon kernels (flash_gluon's forward, flash_gluon_backward's
backward), on a machine without a GPU.

`python benchmarks/attention/gluon_sm90_report.py` compiles them for an H100 (Triton
ahead-of-time, target cuda:90, bf16) at each head_dim they take, causal and not, and
prints registers at launch and each partition's setmaxnreg, spilled stack bytes, shared memory,
whether ptxas serialises the wgmma pipeline (its C7514 note: what a wgmma left in flight
across a loop's back edge caused in benchmarks/attention/trials/gluon_forward.py), and the SASS
instruction count and hash (sass_fingerprint.py's: equal, the same machine code). Run it with
the device's Triton (`pip install triton==3.6.0` in a virtual environment) for exact figures,
as gluon-sm90-report-triton36.txt was.
"""

import re
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource

from lmperf.attention import flash_gluon, flash_gluon_backward
from sass_fingerprint import sass_summary
from sm90_report import TOOLS, resources


def compile_sm90(head_dim: int, causal: bool, consumers: int | None = None, o_by_tma: bool | None = None,
                 pieces: bool = False):
    consumers = consumers or flash_gluon.CONSUMERS[head_dim]
    if o_by_tma is None:  # as flash_gluon.forward decides
        o_by_tma = flash_gluon.stores_o_by_tma(head_dim, causal, consumers)
    block_n, stages = flash_gluon.tiles(head_dim, consumers)
    rows = flash_gluon.ROWS
    main, tail = flash_gluon.column_blocks(head_dim)

    def desc(n, columns):
        if not columns:  # without a tail the kernel gets None (a constexpr) for its descriptors
            return "constexpr"
        layout = gl.NVMMASharedLayout.get_default_for([1, 1, n, columns], gl.bfloat16)
        return f"tensordesc<bf16[1, 1, {n}, {columns}],{layout!r}>"

    signature = {
        "q_desc": desc(rows, main), "k_desc": desc(block_n, main), "v_desc": desc(block_n, main),
        "qt_desc": desc(rows, tail), "kt_desc": desc(block_n, tail), "vt_desc": desc(block_n, tail),
        "o_desc": desc(rows, main if o_by_tma else 0), "ot_desc": desc(rows, tail if o_by_tma else 0),
        "O": "*bf16", "LSE": "*fp32", "TABLE": "*i32", "PART_O": "*fp32", "PART_LSE": "*fp32", "qk_scale": "fp32",
        **{name: "i32" for name in ("seq_q", "seq_k", "H", "group", "n_m", "per_head", "items", "whole", "parts",
                                    "stride_ob", "stride_oh", "stride_on")},
        **{name: "constexpr" for name in ("HEAD_DIM", "TAIL", "SPLIT", "BLOCK_N", "STAGES", "CAUSAL", "PAIRS",
                                          "ORDERED", "CONSUMERS", "REGISTERS", "O_BY_TMA", "PIECES", "Q_SLOTS",
                                          "num_warps")},
    }
    constexprs = dict(HEAD_DIM=main, TAIL=tail or 16, SPLIT=bool(tail), BLOCK_N=block_n, STAGES=stages, CAUSAL=causal,
                      PAIRS=causal and head_dim not in flash_gluon.ORDERED_CAUSAL,
                      ORDERED=causal and head_dim in flash_gluon.ORDERED_CAUSAL,
                      CONSUMERS=consumers,
                      REGISTERS=flash_gluon.CONSUMER_REGISTERS[consumers], O_BY_TMA=o_by_tma, PIECES=pieces,
                      Q_SLOTS=flash_gluon.query_slots(head_dim, consumers),
                      num_warps=4,
                      **{name: None for name, kind in signature.items() if kind == "constexpr" and name.endswith("_desc")})
    source = GluonASTSource(flash_gluon._fwd_kernel, signature, constexprs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4))


def compile_backward_sm90(head_dim: int, causal: bool, persistent: bool | None = None):
    if persistent is None:  # as flash_gluon_backward.backward decides for long key ranges
        from_keys = flash_gluon_backward.PERSISTENT_CAUSAL_FROM_KEYS if causal else flash_gluon_backward.PERSISTENT_FROM_KEYS
        persistent = head_dim in from_keys
    rows, keys = flash_gluon_backward.ROWS, flash_gluon_backward.KEYS
    main, tail = flash_gluon.column_blocks(head_dim)
    assert rows == keys  # one descriptor type for Q, K, V, dO

    def desc(columns, dtype="bf16"):
        if not columns:  # without a tail the kernel gets None (a constexpr) for its descriptors
            return "constexpr"
        block = [1, 1, rows, columns]
        layout = gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16 if dtype == "bf16" else gl.float32)
        return f"tensordesc<{dtype}{block},{layout!r}>"

    signature = {
        **{name: desc(main) for name in ("q_desc", "k_desc", "v_desc", "do_desc")},
        "dq_desc": desc(min(flash_gluon_backward.DQ_COLUMNS, main), "fp32"),
        **{name: desc(tail) for name in ("qt_desc", "kt_desc", "vt_desc", "dot_desc")},
        "dqt_desc": desc(tail, "fp32"),
        "dk_desc": desc(main), "dv_desc": desc(main), "dkt_desc": desc(tail), "dvt_desc": desc(tail),
        "LSE": "*fp32", "DELTA": "*fp32", "counter": "*i32" if persistent else "*fp32", "DQ_ACC": "*fp32", "DQ": "*bf16" if persistent else "*fp32", "scale": "fp32",
        "qk_scale": "fp32",
        **{name: "i32" for name in ("seq_q", "seq_k", "H", "group", "n_kblocks", "items", "end")},
        **{name: "constexpr" for name in ("HEAD_DIM", "TAIL", "SPLIT", "STAGES", "CAUSAL", "PERSISTENT", "DYNAMIC", "CONVERT",
                                          "num_warps")},
    }
    constexprs = dict(HEAD_DIM=main, TAIL=tail or 16, SPLIT=bool(tail), STAGES=flash_gluon_backward.PERSISTENT_STAGES if persistent else flash_gluon_backward.STAGES,
                      CAUSAL=causal,
                      PERSISTENT=persistent, DYNAMIC=persistent, CONVERT=persistent and head_dim == 64, num_warps=4,
                      **{name: None for name, kind in signature.items() if kind == "constexpr" and name.endswith("_desc")})
    source = GluonASTSource(flash_gluon_backward._bwd_kernel, signature, constexprs)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(num_warps=4))


def warp_specialised_report(compiled) -> str:
    """Registers at launch and each partition's setmaxnreg, spills, shared memory, and whether
    ptxas serialises the wgmma pipeline (its C7514 note), for one compiled Gluon kernel."""
    usage = resources(compiled)
    ptx = compiled.asm["ptx"]
    maxnreg = sorted(set(re.findall(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)", ptx)))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as file:
        file.write(ptx)
        file.flush()
        note = subprocess.run([TOOLS / "ptxas", "-arch=sm_90a", "-v", file.name, "-o", "/dev/null"],
                              capture_output=True, text=True).stderr
    return (f"registers at launch {usage['registers']}, setmaxnreg {maxnreg}, stack {usage['stack']} B, "
            f"shared {usage['shared_kb']} KB, ptxas serialises wgmma: {'serialized' in note}, SASS {sass_summary(compiled)}")


def main() -> None:
    print(f"triton {triton.__version__}: flash_gluon's forward for sm90 (bf16)")
    for head_dim in flash_gluon.TILES:
        for causal in (False, True):
            for consumers in sorted({flash_gluon.CONSUMERS[head_dim], 2, 3}):
                print(f"d{head_dim} {'causal' if causal else 'full'} (BLOCK_N, slots) {flash_gluon.tiles(head_dim, consumers)}, "
                      f"{consumers} consumers: {warp_specialised_report(compile_sm90(head_dim, causal, consumers))}")
    print(f"triton {triton.__version__}: flash_gluon_backward's backward for sm90 (bf16)")
    for head_dim in (64, 80, 128):
        for causal in (False, True):  # one program per item, and persistent where the backward can be
            from_keys = flash_gluon_backward.PERSISTENT_CAUSAL_FROM_KEYS if causal else flash_gluon_backward.PERSISTENT_FROM_KEYS
            for persistent in sorted({False, head_dim in from_keys}):
                report = warp_specialised_report(compile_backward_sm90(head_dim, causal, persistent))
                print(f"d{head_dim} {'causal' if causal else 'full'}{' persistent' if persistent else ''}: {report}")


if __name__ == "__main__":
    main()
