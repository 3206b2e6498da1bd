"""Profiler events read back from an exported trace (`trace-<mode>.json.gz`), so the tables of a
profile can be rebuilt from its trace alone, with the same attribution code (trace.kernel_calls).

The Chrome-trace export keeps what attribution needs: host ops and range markers (`cpu_op`,
`user_annotation`) with thread, start and duration, sequence number and forward-thread id, and
device activities (`kernel`, `gpu_memcpy`, `gpu_memset`) with the external id of the op that
launched them. Nesting is rebuilt from the time intervals on each thread. CUPTI's own overhead
events have category `overhead` and are left out. The trace names threads by OS id while the
backward nodes name their forward thread by the profiler's own id (1, 2, ... in the order the
threads first recorded an op), so threads are renumbered that way.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from lmperf.errors import UsageError

HOST_CATEGORIES = ("cpu_op", "user_annotation")
DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


@dataclass(frozen=True)
class Kernel:
    name: str
    duration: float  # us


@dataclass(frozen=True)
class TimeRange:
    start: float
    end: float


@dataclass(eq=False)
class TraceEvent:
    """The attributes of torch's FunctionEvent that trace.kernel_calls reads."""

    name: str
    id: int
    thread: int
    time_range: TimeRange
    sequence_nr: int = -1
    fwd_thread: int = 0
    is_user_annotation: bool = False
    device_type: torch.autograd.DeviceType = torch.autograd.DeviceType.CPU
    cpu_parent: "TraceEvent | None" = None
    kernels: list[Kernel] = field(default_factory=list)
    children_us: float = 0.0

    @property
    def self_cpu_time_total(self) -> float:
        # The trace keeps ns: round away the float noise of the subtraction (an op whose
        # children take all its time has 0 self time, as in torch's own events).
        return round(self.time_range.end - self.time_range.start - self.children_us, 3)


def _host_event(raw: dict, threads: dict[int, int]) -> TraceEvent:
    args = raw.get("args", {})
    return TraceEvent(
        name=raw["name"],
        id=args.get("External id", 0),
        thread=threads[raw["tid"]],
        time_range=TimeRange(raw["ts"], raw["ts"] + raw.get("dur", 0.0)),
        sequence_nr=args.get("Sequence number", -1),
        fwd_thread=args.get("Fwd thread id", 0),
        is_user_annotation=raw["cat"] == "user_annotation",
    )


def _nest(events: list[TraceEvent]) -> None:
    """Set cpu_parent (innermost enclosing event on the same thread) and children time."""
    ordered = sorted(events, key=lambda e: (e.thread, e.time_range.start, -e.time_range.end))
    stack: list[TraceEvent] = []
    for event in ordered:
        while stack and (stack[-1].thread != event.thread or stack[-1].time_range.end <= event.time_range.start):
            stack.pop()
        if stack:
            event.cpu_parent = stack[-1]
            stack[-1].children_us += event.time_range.end - event.time_range.start
        stack.append(event)


@dataclass(frozen=True)
class TraceFile:
    events: list[TraceEvent]  # host events, nested, with the device activities they launched
    device_activities: int  # every kernel, memcpy and memset in the trace


def _merge_self_calls(events: list[TraceEvent]) -> list[TraceEvent]:
    """Fold an op that is the only child of an op of the same name (aten::div_ calling another
    aten::div_ overload) into its parent, as torch's own event list does."""
    children: dict[int, list[TraceEvent]] = {}
    for event in events:
        if event.cpu_parent is not None:
            children.setdefault(id(event.cpu_parent), []).append(event)
    merged = set()
    for event in events:
        parent = event.cpu_parent
        if parent is not None and parent.name == event.name and len(children[id(parent)]) == 1:
            parent.children_us = event.children_us
            parent.kernels += event.kernels
            for child in children.get(id(event), []):
                child.cpu_parent = parent
            merged.add(id(event))
    return [event for event in events if id(event) not in merged]


def read_trace(path: Path) -> TraceFile:
    """The host events of an exported trace, with their device activities attached."""
    try:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as file:
            raw_events = json.load(file)["traceEvents"]
    except (OSError, ValueError, KeyError) as error:
        raise UsageError(f"cannot read the trace {path}: {error}") from None
    host = sorted((e for e in raw_events if e.get("cat") in HOST_CATEGORIES), key=lambda e: e["ts"])
    threads: dict[int, int] = {}
    for raw in host:
        threads.setdefault(raw["tid"], len(threads) + 1)
    events = [_host_event(raw, threads) for raw in host]
    _nest(events)
    launcher = {event.id: event for event in events if not event.is_user_annotation}
    device = [raw for raw in raw_events if raw.get("cat") in DEVICE_CATEGORIES]
    for raw in device:
        op = launcher.get(raw.get("args", {}).get("External id"))
        if op is not None:
            op.kernels.append(Kernel(raw["name"], raw.get("dur", 0.0)))
    events = _merge_self_calls(events)
    return TraceFile(events, len(device))
