"""How much of a step is communication, and how much of that the GPU hides under compute.

From a torch.profiler trace of a few steps: NCCL kernels are communication, every other kernel
is compute. Per step, `comm` is the time at least one NCCL kernel runs (the union of their
intervals), `hidden` the part of it during which a compute kernel also runs, `exposed` the rest:
time the step spends only communicating. Hidden is not free: the NCCL kernels take SMs and memory
bandwidth from the compute they overlap, which shows as a longer step, not as exposed time.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import torch

from lmperf.report.plots import pyplot, save_figure

STEP_MARK = "lmperf_step"
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")

Interval = tuple[float, float]  # (start, end) in microseconds


@dataclass(frozen=True)
class Kernel:
    name: str
    stream: int
    start: float  # microseconds on the trace's clock
    end: float
    op_id: int | None = None  # the "External id" of the host op that launched it

    @property
    def is_comm(self) -> bool:
        return "nccl" in self.name.lower()


@dataclass(frozen=True)
class CommOverlap:
    """Milliseconds per step, averaged over the profiled steps."""

    steps: int
    step_ms: float
    comm_ms: float
    hidden_ms: float
    exposed_ms: float

    @property
    def comm_share(self) -> float:
        return self.comm_ms / self.step_ms if self.step_ms else 0.0

    @property
    def exposed_share(self) -> float:
        return self.exposed_ms / self.step_ms if self.step_ms else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "comm_share": self.comm_share, "exposed_share": self.exposed_share}


def union(intervals: Sequence[Interval]) -> list[Interval]:
    """Sorted, non-overlapping intervals covering the same time."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def length(intervals: Sequence[Interval]) -> float:
    return sum(end - start for start, end in union(intervals))


def overlap_length(a: Sequence[Interval], b: Sequence[Interval]) -> float:
    """Time covered by both sets of intervals."""
    a, b = union(a), union(b)
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, end - start)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def kernels_and_steps(trace: dict) -> tuple[list[Kernel], list[Interval]]:
    """GPU kernels and the step windows marked with STEP_MARK, from a Chrome trace.

    A kernel names its launching op by the op's "External id"; where it carries only the
    "correlation" of its launch, the runtime call with that correlation names the op."""
    events = [event for event in trace.get("traceEvents", []) if event.get("ph") == "X"]
    launches = {
        event["args"]["correlation"]: event["args"].get("External id")
        for event in events
        if event.get("cat") in LAUNCH_CATEGORIES and "correlation" in event.get("args", {})
    }
    kernels, steps = [], []
    for event in events:
        start, end = float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0))
        if event.get("cat") == "kernel":
            args = event.get("args", {})
            op_id = args.get("External id", launches.get(args.get("correlation")))
            kernels.append(Kernel(event["name"], int(args.get("stream", 0)), start, end, op_id))
        elif event.get("name") == STEP_MARK and event.get("cat") == "user_annotation":
            steps.append((start, end))
    return kernels, sorted(steps)


def in_window(kernels: Sequence[Kernel], window: Interval) -> list[Kernel]:
    return [k for k in kernels if k.start >= window[0] and k.end <= window[1]]


def summarize(kernels: Sequence[Kernel], steps: Sequence[Interval]) -> CommOverlap:
    if not steps:
        raise ValueError(f"the trace has no {STEP_MARK!r} ranges")
    step_us = comm_us = hidden_us = 0.0
    for window in steps:
        inside = in_window(kernels, window)
        comm = [(k.start, k.end) for k in inside if k.is_comm]
        compute = [(k.start, k.end) for k in inside if not k.is_comm]
        step_us += window[1] - window[0]
        comm_us += length(comm)
        hidden_us += overlap_length(comm, compute)
    n = len(steps) * 1e3  # microseconds summed over steps -> milliseconds per step
    return CommOverlap(len(steps), step_us / n, comm_us / n, hidden_us / n, (comm_us - hidden_us) / n)


def kernel_ms_by_category(kernels: Sequence[Kernel], steps: Sequence[Interval]) -> dict[str, float]:
    """Milliseconds per step of kernel time by category (lmperf.analysis.kernels; NCCL kernels
    as "nccl"), summed kernel by kernel: kernels on different streams overlap, so the total
    can exceed the step."""
    from lmperf.analysis.kernels import kernel_category

    totals: dict[str, float] = {}
    for window in steps:
        for kernel in in_window(kernels, window):
            category = "nccl" if kernel.is_comm else kernel_category(kernel.name)
            totals[category] = totals.get(category, 0.0) + (kernel.end - kernel.start) / 1e3 / len(steps)
    return dict(sorted(totals.items(), key=lambda item: -item[1]))


def profile_trace(step: Callable[[], None], steps: int) -> dict:
    """Chrome trace of `steps` calls of `step`, each inside a STEP_MARK range, with every op's
    input shapes and strides (kernel_table reads the GEMMs' shapes from them)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities, record_shapes=True) as profiler:
        for _ in range(steps):
            with torch.profiler.record_function(STEP_MARK):
                step()
            if torch.cuda.is_available():
                torch.cuda.synchronize()  # the step's kernels end inside its range
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.json"
        profiler.export_chrome_trace(str(path))
        return json.loads(path.read_text(encoding="utf-8"))


def plot_timeline(kernels: Sequence[Kernel], window: Interval, path: Path, title: str) -> None:
    """One lane per CUDA stream over one step: compute kernels blue, NCCL kernels red."""
    from matplotlib.patches import Patch

    plt = pyplot()
    inside = in_window(kernels, window)
    streams = sorted({k.stream for k in inside})
    fig, ax = plt.subplots(figsize=(12, 1 + 0.5 * max(len(streams), 1)))
    for lane, stream in enumerate(streams):
        for is_comm, color in ((False, "tab:blue"), (True, "tab:red")):
            bars = [
                ((k.start - window[0]) / 1e3, (k.end - k.start) / 1e3)
                for k in inside
                if k.stream == stream and k.is_comm == is_comm
            ]
            ax.broken_barh(bars, (lane - 0.4, 0.8), color=color)
    ax.set(
        yticks=range(len(streams)),
        yticklabels=[f"stream {s}" for s in streams],
        xlabel="ms from step start",
        title=title,
    )
    legend = [Patch(color="tab:blue", label="compute"), Patch(color="tab:red", label="NCCL")]
    ax.legend(handles=legend, loc="upper right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
