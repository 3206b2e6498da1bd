"""One step's kernels, one row each, with the op that launched them and, for a GEMM, its shape,
FLOPs and achieved TFLOP/s; and the per-shape and per-kernel summaries a report shows.

A kernel names its launching host op by the op's "External id" (overlap.kernels_and_steps reads
it); a profile taken with record_shapes gives that op's "Input Dims", "Input Strides" and "Input
type". Inside torch.compile'd code inductor still calls aten::mm, addmm and bmm for its GEMMs, so
they keep their shapes; Triton and cuDNN attention kernels may have no such op, and their rows no
shape. Rows cover the matmul and attention kernels of one step; every other category is one
summary row. `nccl_overlap_ms` is how long an NCCL kernel runs beside the kernel: time in which
the two share the GPU's SMs and memory bandwidth.

A GEMM's layout names each operand as a row-major PyTorch tensor sees it: `n` when its last
stride is 1, `t` when its second-to-last is (a transposed view), `s` otherwise. The forward of
nn.Linear (x @ W.T) is `nt`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from lmperf.analysis.kernels import ATTENTION, MATMUL, kernel_category, short_name
from lmperf.distributed import overlap

TABLE_CATEGORIES = (MATMUL, ATTENTION)
# Where an op's two matrix operands start among its inputs (addmm and baddbmm take the bias first;
# inductor's calls also pass the output last)
FIRST_OPERAND = {"aten::mm": 0, "aten::bmm": 0, "aten::addmm": 1, "aten::baddbmm": 1}
# The profiler's C++ type names as lmperf's dtype names (lmperf.dtypes)
_DTYPES = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32"}


@dataclass(frozen=True)
class Op:
    """A host op as the trace records it with record_shapes: one entry per input."""

    name: str
    dims: list
    strides: list | None
    types: list


@dataclass(frozen=True)
class Gemm:
    batch: int
    m: int
    n: int
    k: int
    dtype: str | None
    layout: str | None

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k


def launching_ops(trace: dict) -> dict[int, Op]:
    """The trace's ATen ops by External id (range markers are no ops and launch nothing here)."""
    ops = {}
    for event in trace.get("traceEvents", []):
        args = event.get("args", {})
        if event.get("cat") == "cpu_op" and "External id" in args:
            ops[args["External id"]] = Op(
                event["name"], args.get("Input Dims", []), args.get("Input Strides"), args.get("Input type", [])
            )
    return ops


def _major(strides: Sequence[int]) -> str:
    return "n" if strides[-1] == 1 else "t" if strides[-2] == 1 else "s"


def gemm_of(op: Op) -> Gemm | None:
    """(batch, M, N, K), dtype and layout of mm, addmm, bmm or baddbmm; None for any other op."""
    first = FIRST_OPERAND.get(op.name)
    if first is None or len(op.dims) < first + 2:
        return None
    a, b = op.dims[first], op.dims[first + 1]  # (M, K) and (K, N), each after a batch for bmm
    if len(a) != len(b) or len(a) not in (2, 3):
        return None
    strides = op.strides[first : first + 2] if op.strides and len(op.strides) >= first + 2 else None
    layout = "".join(_major(s) for s in strides) if strides and all(len(s) == len(a) for s in strides) else None
    dtype = _DTYPES.get(op.types[first]) if len(op.types) > first else None
    return Gemm(a[0] if len(a) == 3 else 1, a[-2], b[-1], a[-1], dtype, layout)


def _category(kernel: overlap.Kernel) -> str:
    return "nccl" if kernel.is_comm else kernel_category(kernel.name)


def _kernel_row(
    kernel: overlap.Kernel, category: str, window: overlap.Interval, op: Op | None, nccl_overlap_ms: float
) -> dict:
    gemm = gemm_of(op) if op is not None and category == MATMUL else None
    return {
        "row": "kernel",
        "name": short_name(kernel.name),
        "category": category,
        "stream": kernel.stream,
        "start_ms": (kernel.start - window[0]) / 1e3,
        "duration_ms": (kernel.end - kernel.start) / 1e3,
        "op": op.name if op else None,
        "op_id": kernel.op_id if op else None,
        "input_dims": op.dims if op else None,
        "input_strides": op.strides if op else None,
        "dtype": gemm.dtype if gemm else None,
        "layout": gemm.layout if gemm else None,
        "batch": gemm.batch if gemm else None,
        "m": gemm.m if gemm else None,
        "n": gemm.n if gemm else None,
        "k": gemm.k if gemm else None,
        "flops": gemm.flops if gemm else None,
        "tflops": None,
        "nccl_overlap_ms": nccl_overlap_ms,
        "alone_ms": None,
        "alone_tflops": None,
    }


def kernel_rows(kernels: Sequence[overlap.Kernel], window: overlap.Interval, ops: dict[int, Op]) -> list[dict]:
    """One row per matmul and attention kernel of the step `window`, in launch order, then one
    summary row per other category (count, ms, ms beside NCCL), longest first."""
    inside = sorted(overlap.in_window(kernels, window), key=lambda k: k.start)
    nccl = overlap.union([(k.start, k.end) for k in inside if k.is_comm])
    rows, summaries = [], {}
    for kernel in inside:
        category = _category(kernel)
        shared_ms = 0.0 if kernel.is_comm else overlap.overlap_length([(kernel.start, kernel.end)], nccl) / 1e3
        if category in TABLE_CATEGORIES:
            rows.append(_kernel_row(kernel, category, window, ops.get(kernel.op_id), shared_ms))
            continue
        summary = summaries.setdefault(
            category, {"row": "category", "category": category, "count": 0, "duration_ms": 0.0, "nccl_overlap_ms": 0.0}
        )
        summary["count"] += 1
        summary["duration_ms"] += (kernel.end - kernel.start) / 1e3
        summary["nccl_overlap_ms"] += shared_ms
    if "nccl" in summaries:
        summaries["nccl"]["nccl_overlap_ms"] = None  # NCCL beside itself says nothing
    _set_tflops(rows)
    return rows + sorted(summaries.values(), key=lambda s: -s["duration_ms"])


def _set_tflops(rows: list[dict]) -> None:
    """An op that launches several GEMM kernels does its FLOPs in all of them together."""
    op_ms: dict[int, float] = {}
    for row in rows:
        if row["flops"]:
            op_ms[row["op_id"]] = op_ms.get(row["op_id"], 0.0) + row["duration_ms"]
    for row in rows:
        if row["flops"] and op_ms[row["op_id"]] > 0:
            row["tflops"] = row["flops"] / op_ms[row["op_id"]] / 1e9


def gemm_key(row: dict) -> tuple | None:
    """What makes two GEMM rows the same GEMM: op, (batch, M, N, K), dtype and layout."""
    if row.get("row") != "kernel" or row.get("m") is None:
        return None
    return (row["op"], row["batch"], row["m"], row["n"], row["k"], row["dtype"], row["layout"])


def gemm_summary(rows: Sequence[dict]) -> list[dict]:
    """Per distinct GEMM (and one line for matmul kernels with no shape): calls per step, ms,
    TFLOP/s in the step and alone, their ratio and the share of its time beside NCCL."""
    groups: dict[tuple | None, list[dict]] = {}
    for row in rows:
        if row.get("row") == "kernel" and row["category"] == MATMUL:
            groups.setdefault(gemm_key(row), []).append(row)
    summary = []
    for key, group in groups.items():
        ms = sum(r["duration_ms"] for r in group)
        flops = {r["op_id"]: r["flops"] for r in group if r["flops"]}  # an op counts once
        first = group[0]
        step_tflops = sum(flops.values()) / ms / 1e9 if flops and ms > 0 else None
        alone = first["alone_tflops"]
        summary.append(
            {
                "op": first["op"].removeprefix("aten::") if key else "(no shape)",
                **{field: first[field] for field in ("batch", "m", "n", "k", "dtype", "layout")},
                "count": len(flops) if key else len(group),
                "total_ms": ms,
                "step_tflops": step_tflops,
                "alone_tflops": alone,
                "alone_over_step": alone / step_tflops if alone and step_tflops else None,
                "nccl_share": sum(r["nccl_overlap_ms"] for r in group) / ms if ms > 0 else None,
            }
        )
    return sorted(summary, key=lambda s: -s["total_ms"])


def attention_summary(rows: Sequence[dict]) -> list[dict]:
    """Per attention kernel name: calls per step, total and mean ms, share beside NCCL."""
    groups: dict[str, list[dict]] = {}
    for row in rows:
        if row.get("row") == "kernel" and row["category"] == ATTENTION:
            groups.setdefault(row["name"], []).append(row)
    summary = []
    for name, group in groups.items():
        ms = sum(r["duration_ms"] for r in group)
        summary.append(
            {
                "name": name,
                "count": len(group),
                "total_ms": ms,
                "mean_ms": ms / len(group),
                "nccl_share": sum(r["nccl_overlap_ms"] for r in group) / ms if ms > 0 else None,
            }
        )
    return sorted(summary, key=lambda s: -s["total_ms"])
