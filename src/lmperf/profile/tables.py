"""The profile's tables as rows (dicts), rendered by lmperf.report.tables from the column specs.

- kernel table: per (phase, kernel) calls and time per step, share of the step, category;
- region table: per model region its time by phase, its FLOPs from the analytic model, achieved
  TFLOP/s, and time share over FLOP share (1 = the region costs what its FLOPs say; 30 = thirty
  times more time than its FLOPs would get);
- category shares, and the matmul share of the step.
All times are per step: the profiled total divided by the number of profiled steps.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from lmperf import regions
from lmperf.analysis.kernels import CATEGORIES, MATMUL, MATMUL_AUX, short_name
from lmperf.profile.kernels import category
from lmperf.profile.trace import KernelCall, MODEL_REGION_ORDER, PHASES
from lmperf.report.tables import Column

REGION_ORDER = (*MODEL_REGION_ORDER, regions.OPTIMIZER)
ATTENTION_REGIONS = (regions.ATTN_SCORES, regions.ATTN_SOFTMAX, regions.ATTN_WEIGHTED_SUM, regions.ATTN_FUSED)

KERNEL_COLUMNS: list[Column] = [
    ("phase", "phase", ""),
    ("kernel", "kernel", ""),
    ("category", "category", ""),
    ("calls/step", "calls_per_step", ".1f"),
    ("ms/step", "ms_per_step", ".3f"),
    ("mean us", "mean_us", ".1f"),
    ("share", "share", ".1%"),
    ("full name", "name", ""),
]
REGION_COLUMNS: list[Column] = [
    ("region", "region", ""),
    ("fwd ms", "forward_ms", ".3f"),
    ("bwd ms", "backward_ms", ".3f"),
    ("opt ms", "optimizer_step_ms", ".3f"),
    ("total ms", "total_ms", ".3f"),
    ("time share", "time_share", ".1%"),
    ("share of attention", "attention_share", ".1%"),
    ("GFLOP", "gflop", ",.2f"),
    ("FLOP share", "flop_share", ".2%"),
    ("TFLOP/s", "tflops", ".2f"),
    ("time/FLOP share", "time_over_flop_share", ".2f"),
]
CATEGORY_COLUMNS: list[Column] = [
    ("category", "category", ""),
    ("ms/step", "ms_per_step", ".3f"),
    ("share", "share", ".1%"),
]


def kernel_rows(calls: Sequence[KernelCall], steps: int) -> list[dict]:
    """One row per (phase, kernel, category), longest total time first."""
    groups: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for call in calls:
        key = (call.phase, call.name, category(call.name, call.region, call.phase))
        groups[key].append(call.duration_us)
    step_us = sum(call.duration_us for call in calls) or 1.0
    rows = [
        {
            "phase": phase,
            "kernel": short_name(name),
            "category": cat,
            "name": name,
            "calls_per_step": len(times) / steps,
            "ms_per_step": sum(times) / steps / 1e3,
            "mean_us": sum(times) / len(times),
            "share": sum(times) / step_us,
        }
        for (phase, name, cat), times in groups.items()
    ]
    return sorted(rows, key=lambda row: -row["ms_per_step"])


def _time_by_region(calls: Sequence[KernelCall], steps: int) -> dict[str, dict[str, float]]:
    times: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for call in calls:
        times[call.region][call.phase] += call.duration_us / steps / 1e3
    return times


def region_rows(
    calls: Sequence[KernelCall],
    steps: int,
    flops_by_region: dict[str, float],
    order: Sequence[str] = REGION_ORDER,
) -> list[dict]:
    """One row per region that has time or FLOPs, in model order (`order`), then the others."""
    times = _time_by_region(calls, steps)
    total_ms = sum(sum(phases.values()) for phases in times.values()) or 1.0
    total_flops = sum(flops_by_region.values()) or 1.0
    attention_ms = sum(sum(times[r].values()) for r in ATTENTION_REGIONS if r in times) or 1.0
    extra = sorted(set(times) - set(order))
    rows = []
    for region in [r for r in order if r in times or flops_by_region.get(r)] + extra:
        phases = times.get(region, {})
        region_ms = sum(phases.values())
        flops = flops_by_region.get(region)
        row = {"region": region, "total_ms": region_ms, "time_share": region_ms / total_ms}
        row.update({f"{phase}_ms": phases.get(phase, 0.0) for phase in PHASES})
        if region in ATTENTION_REGIONS:
            row["attention_share"] = region_ms / attention_ms
        if flops is not None:
            row.update(gflop=flops / 1e9, flop_share=flops / total_flops)
            row["tflops"] = flops / (region_ms / 1e3) / 1e12 if region_ms else None
            row["time_over_flop_share"] = row["time_share"] / row["flop_share"] if flops else None
        rows.append(row)
    return rows


def category_rows(calls: Sequence[KernelCall], steps: int) -> list[dict]:
    ms: dict[str, float] = defaultdict(float)
    for call in calls:
        ms[category(call.name, call.region, call.phase)] += call.duration_us / steps / 1e3
    total = sum(ms.values()) or 1.0
    return [{"category": cat, "ms_per_step": ms[cat], "share": ms[cat] / total} for cat in CATEGORIES if cat in ms]


def matmul_share(calls: Sequence[KernelCall]) -> float:
    """Fraction of kernel time spent in matmul kernels (split-K's reduction included)."""
    total = sum(call.duration_us for call in calls)
    matmul = sum(
        call.duration_us for call in calls if category(call.name, call.region, call.phase) in (MATMUL, MATMUL_AUX)
    )
    return matmul / total if total else 0.0
