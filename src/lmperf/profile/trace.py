"""Run steps under torch.profiler and attribute every kernel to a phase and a model region.

Forward kernels take the innermost region (record_function range) that encloses the op which
launched them. Backward kernels run outside those ranges (on CUDA even on another thread), so
they are mapped back through autograd's sequence numbers, the method torch.profiler documents
for linking backward to forward: every forward op records the sequence number of the autograd
node it creates, and the backward event `autograd::engine::evaluate_function: <Node>` carries
that node's sequence number and forward thread. The forward op with that (thread, sequence
number) that started last is the one that created the node (the ops that share a number are
the node creator and the wrappers and non-differentiable ops before it), and its region is the
backward kernel's region. Backward work with no forward node (AccumulateGrad, the loss seed)
goes to "backward (other)". A user's module names its regions by module path
(lmperf.model.module_tree: `module:layers.3.attn`); they count as model regions too.

On CUDA the "kernels" are the GPU kernels (and memcpy/memset) each op launched, with GPU time;
on a CPU they are the ATen ops themselves with their self CPU time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import torch
from torch.autograd.profiler_util import FunctionEvent

from lmperf import regions
from lmperf.model.module_tree import is_module_region

PHASES = (regions.FORWARD, regions.BACKWARD, regions.OPTIMIZER)
# The model's own regions in the order a step reaches them (profile tables list them so).
MODEL_REGION_ORDER = (
    regions.EMBEDDING,
    regions.ATTN_NORM,
    regions.QKV_PROJ,
    regions.QK_NORM,
    regions.ROPE,
    regions.ATTN_SCORES,
    regions.ATTN_SOFTMAX,
    regions.ATTN_WEIGHTED_SUM,
    regions.ATTN_FUSED,
    regions.OUT_PROJ,
    regions.FFN_NORM,
    regions.FFN,
    regions.FINAL_NORM,
    regions.LM_HEAD,
    regions.LOSS,
)
MODEL_REGIONS = frozenset(MODEL_REGION_ORDER)
BACKWARD_NODE = "autograd::engine::evaluate_function: "
MEASURED = "lmperf_measured"  # the NVTX range around measured steps (nsys captures only it)
# Range names: on CUDA kineto also shows them on the GPU timeline, never to be counted as kernels.
MARKERS = MODEL_REGIONS | set(PHASES) | {MEASURED}
OTHER = "other"


@dataclass(frozen=True)
class KernelCall:
    """One kernel launch (or, on a CPU, one ATen op) and where in the step it ran."""

    name: str
    phase: str
    region: str
    duration_us: float


def _ancestors(event: FunctionEvent) -> Iterable[FunctionEvent]:
    parent = event.cpu_parent
    while parent is not None:
        yield parent
        parent = parent.cpu_parent


def is_region(name: str) -> bool:
    return name in MODEL_REGIONS or is_module_region(name)


def is_marker(name: str) -> bool:
    return name in MARKERS or is_module_region(name)


def _placement(event: FunctionEvent) -> tuple[str, str, FunctionEvent | None]:
    """(phase, innermost model region or "", the enclosing backward node event if any)."""
    phase, region, node = OTHER, "", None
    for ancestor in _ancestors(event):
        if not region and is_region(ancestor.name):
            region = ancestor.name
        if node is None and ancestor.name.startswith(BACKWARD_NODE):
            node = ancestor
            phase = regions.BACKWARD if phase == OTHER else phase
        if phase == OTHER and ancestor.name in PHASES:
            phase = ancestor.name
    return phase, region, node


def _forward_regions(placed: list[tuple[FunctionEvent, tuple]]) -> dict[tuple[int, int], str]:
    """(thread, sequence number) -> region of the forward op that created that autograd node."""
    latest: dict[tuple[int, int], tuple[float, str]] = {}
    for event, (phase, region, _) in placed:
        if phase != regions.FORWARD or not region or event.sequence_nr < 0:
            continue
        key = (event.thread, event.sequence_nr)
        start = event.time_range.start
        if key not in latest or start >= latest[key][0]:
            latest[key] = (start, region)
    return {key: region for key, (_, region) in latest.items()}


def _region_of(phase: str, region: str, node: FunctionEvent | None, forward: dict) -> str:
    if phase == regions.BACKWARD:
        found = forward.get((node.fwd_thread, node.sequence_nr)) if node is not None else None
        return found or "backward (other)"
    if phase == regions.OPTIMIZER:
        return regions.OPTIMIZER
    return region or f"{phase} (other)"


# CUPTI reports its own host-side overhead (e.g. "Command Buffer Full" while the host waits for
# a full launch queue, common when the GPU runs far behind) as events without a thread that carry
# the correlation id of the op being launched; torch 2.11 attaches that op's kernels to them as
# well, which counts the kernels again. Those events are skipped; a kernel list is taken once
# per correlation id.
CUPTI_OVERHEAD = frozenset(
    {
        "Command Buffer Full",
        "Activity Buffer Request",
        "CUPTI Buffer Flush",
        "CUPTI Instrumentation",
        "CUPTI Resource",
        "Driver Compiler",
    }
)


def _is_profiler_overhead(event: FunctionEvent) -> bool:
    return getattr(event, "activity_type", "") == "overhead" or event.name in CUPTI_OVERHEAD or event.thread == 0


def _is_cpu_kernel(event: FunctionEvent) -> bool:
    """A CPU op whose own time is work, not a range marker or the autograd engine's wrapper."""
    return not (
        getattr(event, "is_user_annotation", False) or is_marker(event.name) or event.name.startswith(BACKWARD_NODE)
    )


def kernel_calls(events: Iterable[FunctionEvent], on_gpu: bool) -> list[KernelCall]:
    """Every kernel (GPU) or ATen op (CPU) in `events`, placed in its phase and region."""
    cpu_events = [e for e in events if e.device_type == torch.autograd.DeviceType.CPU and not _is_profiler_overhead(e)]
    placed = [(event, _placement(event)) for event in cpu_events]
    forward = _forward_regions(placed)
    calls, launched = [], set()
    for event, (phase, region, node) in placed:
        where = _region_of(phase, region, node, forward)
        if on_gpu:
            if event.id not in launched:
                launched.add(event.id)
                calls.extend(
                    KernelCall(k.name, phase, where, k.duration) for k in event.kernels if not is_marker(k.name)
                )
        elif _is_cpu_kernel(event) and event.self_cpu_time_total > 0:
            calls.append(KernelCall(event.name, phase, where, event.self_cpu_time_total))
    return calls


def run_measured(step: Callable[[], None], steps: int, device: torch.device) -> None:
    """Run `step` `steps` times inside one `lmperf_measured` range, finished on the device."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    with regions.region(MEASURED):
        for _ in range(steps):
            step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def profile_steps(step: Callable[[], None], steps: int, device: torch.device) -> torch.profiler.profile:
    """`run_measured` under torch.profiler (CPU ops, and CUDA kernels on a GPU)."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as profiler:
        run_measured(step, steps, device)
    return profiler
