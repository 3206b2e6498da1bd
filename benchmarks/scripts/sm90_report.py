"""The sm90 compiler's report on lmperf's attention kernels, on a machine without a GPU.

    python benchmarks/scripts/sm90_report.py > benchmarks/attention-sm90-report.txt

compiles every specialisation the attention code launches for an H100 (Triton ahead-of-time,
target cuda:90, bf16) and prints one line each: registers, spilled stack bytes, shared memory,
and the SASS instruction count and a hash of the instructions (cuobjdump -sass without
addresses, encodings or comments: kernel names and parameter order enter the hash only through
the instructions themselves, e.g. parameter offsets). Two runs with equal hashes mean the H100
runs the same machine code, so a clean-up that keeps them needs no device time to show that it
changed neither results nor speed. For the Gluon kernels also each partition's setmaxnreg and
whether ptxas serialises the wgmma pipeline (its C7514 note).

  gluon forward    every head_dim, causal or not, in the schedule the host picks (causal:
                   ordered single tiles or pairs), plus the pairs where ordered tiles are the
                   default (the fallback) and the split-keys runs where they are used
  gluon backward   every head_dim, causal or not, a program per item and persistent
  triton ...       the portable kernels at head_dim 64, 128 (one column block), 80, 96, 48
                   (two), with the first tile config of each autotuning table, every dQ mode
  combine          the merge of split-keys runs

Run it with the device's Triton (3.6 on the H100: `pip install triton==3.6.0` in a virtual
environment): another version compiles other code, and compared runs must use the same.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource

from lmperf.attention.sm90 import backward, combine, forward
from lmperf.attention.sm90.tma import column_blocks
from lmperf.attention.sm90.tuning import BACKWARD_KEYS, DQ_COLUMNS, HEAD_DIMS, ROWS, current
from lmperf.attention.triton_kernels import backward as triton_backward
from lmperf.attention.triton_kernels import tiles as triton_tiles

TOOLS = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
TARGET = GPUTarget("cuda", 90, 32)
_ADDRESS = re.compile(r"/\*[0-9a-f]{4,}\*/")

# ----------------------------------------------------------------------------- reading a cubin


def cuobjdump(compiled, flag: str) -> str:
    """cuobjdump's output for the compiled kernel's cubin (flag: --dump-resource-usage, -sass)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        return subprocess.run(
            [TOOLS / "cuobjdump", flag, cubin.name], capture_output=True, text=True, check=True
        ).stdout


def sass_summary(compiled) -> str:
    """The instruction count and a hash of the instructions: equal, the same machine code."""
    lines = []
    for line in cuobjdump(compiled, "-sass").splitlines():
        if _ADDRESS.match(line.strip()):  # "/*0070*/   IMAD ... ;   /* 0x... */"
            lines.append(_ADDRESS.sub("", line.split(";")[0]).strip())
    return f"SASS {len(lines)} instructions, {hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:16]}"


def resources(compiled) -> str:
    usage = dict(re.findall(r"(REG|STACK):(\d+)", cuobjdump(compiled, "--dump-resource-usage")))
    return f"registers {usage['REG']}, stack {usage['STACK']} B, shared {compiled.metadata.shared // 1024} KB"


def warp_specialised(compiled) -> str:
    """Each partition's setmaxnreg and whether ptxas serialises the wgmma pipeline."""
    ptx = compiled.asm["ptx"]
    maxnreg = sorted(set(re.findall(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)", ptx)))
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as file:
        file.write(ptx)
        file.flush()
        note = subprocess.run(
            [TOOLS / "ptxas", "-arch=sm_90a", "-v", file.name, "-o", "/dev/null"], capture_output=True, text=True
        ).stderr
    return f"setmaxnreg {maxnreg}, ptxas serialises wgmma: {'serialized' in note}"


def report(compile_one, *args, gluon: bool = False) -> str:
    """compile_one(*args)'s resources and SASS as one line."""
    try:
        compiled = compile_one(*args)
    except Exception as error:  # a variant the compiler rejects is a line, not a crash
        return f"failed: {str(error).splitlines()[-1][:120]}"
    parts = [resources(compiled)] + ([warp_specialised(compiled)] if gluon else []) + [sass_summary(compiled)]
    return ", ".join(parts)


# ----------------------------------------------------------------------------- Gluon kernels


def _descriptor_type(rows: int, columns: int, dtype: str = "bf16") -> str:
    """A tensor descriptor argument's signature, or constexpr where the kernel gets None."""
    if not columns:
        return "constexpr"
    layout = gl.NVMMASharedLayout.get_default_for([1, 1, rows, columns], gl.bfloat16 if dtype == "bf16" else gl.float32)
    return f"tensordesc<{dtype}[1, 1, {rows}, {columns}],{layout!r}>"


def _gluon(kernel, signature: dict, constexprs: dict):
    constexprs = dict(
        constexprs, **{name: None for name, kind in signature.items() if kind == "constexpr" and name.endswith("_desc")}
    )
    signature = dict(signature, **{name: "constexpr" for name in constexprs})
    return triton.compile(GluonASTSource(kernel, signature, constexprs), target=TARGET, options=dict(num_warps=4))


def compile_forward(head_dim: int, causal: bool, pairs: bool, pieces: bool = False):
    tuning = current()
    constexprs = forward.kernel_constexprs(tuning, head_dim, causal, pairs, causal and not pairs, pieces)
    main, tail = column_blocks(head_dim)
    block_n, o_columns = tuning.key_tile, constexprs["O_BY_TMA"]
    signature = {
        "q_desc": _descriptor_type(ROWS, main),
        "k_desc": _descriptor_type(block_n, main),
        "v_desc": _descriptor_type(block_n, main),
        "qt_desc": _descriptor_type(ROWS, tail),
        "kt_desc": _descriptor_type(block_n, tail),
        "vt_desc": _descriptor_type(block_n, tail),
        "o_desc": _descriptor_type(ROWS, main if o_columns else 0),
        "ot_desc": _descriptor_type(ROWS, tail if o_columns else 0),
        "O": "*bf16",
        "LSE": "*fp32",
        "TABLE": "*i32",
        "PART_O": "*fp32",
        "PART_LSE": "*fp32",
        "qk_scale": "fp32",
        **{
            name: "i32"
            for name in (
                "seq_q",
                "seq_k",
                "H",
                "group",
                "n_m",
                "per_head",
                "items",
                "whole",
                "parts",
                "stride_ob",
                "stride_oh",
                "stride_on",
            )
        },
    }
    return _gluon(forward._fwd_kernel, signature, constexprs)


def compile_backward(head_dim: int, causal: bool, persistent: bool):
    main, tail = column_blocks(head_dim)
    assert ROWS == BACKWARD_KEYS  # one descriptor type for Q, K, V, dO
    signature = {
        **{name: _descriptor_type(ROWS, main) for name in ("q_desc", "k_desc", "v_desc", "do_desc")},
        "dq_desc": _descriptor_type(ROWS, min(DQ_COLUMNS, main), "fp32"),
        **{name: _descriptor_type(ROWS, tail) for name in ("qt_desc", "kt_desc", "vt_desc", "dot_desc")},
        "dqt_desc": _descriptor_type(ROWS, tail, "fp32"),
        "dk_desc": _descriptor_type(ROWS, main),
        "dv_desc": _descriptor_type(ROWS, main),
        "dkt_desc": _descriptor_type(ROWS, tail),
        "dvt_desc": _descriptor_type(ROWS, tail),
        "LSE": "*fp32",
        "DELTA": "*fp32",
        "counter": "*i32" if persistent else "*fp32",
        "DQ_ACC": "*fp32",
        "DQ": "*bf16" if persistent else "*fp32",
        "scale": "fp32",
        "qk_scale": "fp32",
        **{name: "i32" for name in ("seq_q", "seq_k", "H", "group", "n_kblocks", "items", "end")},
    }
    return _gluon(backward._bwd_kernel, signature, backward.kernel_constexprs(current(), head_dim, causal, persistent))


def gluon_lines():
    tuning = current()
    for head_dim in HEAD_DIMS:
        for causal in (False, True):
            ordered = causal and head_dim in tuning.ordered_causal
            schedules = [("ordered" if ordered else "pairs" if causal else "", not ordered and causal, False)]
            if ordered:  # the fallback once the order tables are full, or while a CUDA graph is captured
                schedules.append(("pairs", True, False))
            if not causal and head_dim in tuning.split_from_keys:
                schedules.append(("split-keys runs", False, True))
            for name, pairs, pieces in schedules:
                label = f"gluon forward d{head_dim} {'causal' if causal else 'full'}{' ' + name if name else ''}"
                yield label, report(compile_forward, head_dim, causal, pairs, pieces, gluon=True)
    for head_dim in HEAD_DIMS:
        for causal in (False, True):
            for persistent in sorted({False, head_dim in tuning.persistent_backward_from_keys}):
                label = (
                    f"gluon backward d{head_dim} {'causal' if causal else 'full'}{' persistent' if persistent else ''}"
                )
                yield label, report(compile_backward, head_dim, causal, persistent, gluon=True)


# ----------------------------------------------------------------------------- portable kernels

POINTERS = {
    "Q": "*bf16",
    "K": "*bf16",
    "V": "*bf16",
    "O": "*bf16",
    "DO": "*bf16",
    "DK": "*bf16",
    "DV": "*bf16",
    "LSE": "*fp32",
    "DELTA": "*fp32",
    "DQ": "*fp32",
    "LOCKS": "*i32",
    "PART_O": "*fp32",
    "PART_LSE": "*fp32",
}
FLOATS = {"qk_scale", "sm_scale"}


def compile_triton(kernel, config, constexprs):
    """One kernel, one tile config (BLOCK_M, BLOCK_N, warps, stages[, maxnreg]), every integer
    argument divisible by 16 as the benchmark shapes' are."""
    m, n, warps, stages, *maxnreg = config
    names = kernel.arg_names
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
    return triton.compile(source, target=TARGET, options=options)


# (tile table, extra constexprs) of each portable kernel variant the host launches
TRITON_VARIANTS = [
    ("fwd", {}),
    ("dkdv", dict(DQ_MODE=0, GROUP=1)),
    ("dkdv", dict(DQ_MODE=0, GROUP=4)),
    ("dkdv_dq", dict(DQ_MODE=1, GROUP=1)),
    ("dkdv_dq", dict(DQ_MODE=1, GROUP=4)),
    ("dkdv_dq", dict(DQ_MODE=2, GROUP=1)),
    ("dkdv_dq", dict(DQ_MODE=3, GROUP=1)),  # "atomic" by TMA: one column block only
    ("dq", {}),
]


def triton_lines():
    for head_dim in (64, 128, 80, 96, 48):
        for causal in (False, True):
            for table, extra in TRITON_VARIANTS:
                # as the host launches them: "ordered" (DQ_MODE 2) pads the head_dim, TMA needs one block
                blocks = triton_tiles.column_blocks(head_dim, split=extra.get("DQ_MODE") != 2)
                if extra.get("DQ_MODE") == 3 and blocks["BLOCK_E"]:
                    continue
                constexprs = dict(HEAD_DIM=head_dim, **blocks, CAUSAL=causal, PRECISION="tf32", **extra)
                config = triton_tiles.TILES[table][head_dim > 64][0]
                label = f"triton {table} d{head_dim} {'causal' if causal else 'full'} {extra} {config}"
                yield label, report(compile_triton, triton_tiles.KERNELS[table], config, constexprs)
        preprocess = dict(HEAD_DIM=head_dim, **triton_tiles.column_blocks(head_dim), BLOCK_M=64)
        # as row_delta launches it: BLOCK_M 64, Triton's default 4 warps and 3 stages
        yield (
            f"triton preprocess d{head_dim}",
            report(compile_triton, triton_backward._bwd_preprocess_kernel, (64, 0, 4, 3), preprocess),
        )


def combine_lines():
    for head_dim, parts in ((64, 8), (80, 4), (128, 2)):
        padded, columns = triton.next_power_of_2(parts), triton.next_power_of_2(head_dim)
        rows = combine.rows_per_program(128, padded, columns)
        constexprs = dict(ROWS=rows, RUNS=padded, HEAD_DIM=head_dim, COLUMNS=columns)
        yield (
            f"combine d{head_dim} {parts} runs",
            report(compile_triton, combine._combine_kernel, (128, 0, 4, 3), constexprs),
        )


def main() -> None:
    print(f"triton {triton.__version__}, sm90, bf16: resources and SASS per specialisation")
    for lines in (gluon_lines(), triton_lines(), combine_lines()):
        for label, line in lines:
            print(f"{label}: {line}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
