"""Reading a CUDA memory snapshot (torch.cuda.memory._snapshot(), the dict behind the .pickle
files pytorch.org/memory_viz opens): allocated memory over time and the largest allocations.

The allocator trace lists events in order: `alloc` (a tensor got a block), `free_requested`
(the tensor died) and `free_completed` (the block is reusable once pending kernels finish),
plus segment events of cudaMalloc/cudaFree. Allocated memory rises at `alloc` and falls at
`free_completed`. Each event carries the Python frames that made it, innermost first.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

ALLOC, FREED = "alloc", "free_completed"


def trace_events(snapshot: dict, device: int = 0) -> list[dict]:
    return list(snapshot["device_traces"][device])


def allocated_over_time(events: Sequence[dict], start_bytes: int = 0) -> list[int]:
    """Bytes allocated after each trace event, starting from `start_bytes`."""
    allocated, series = start_bytes, []
    for event in events:
        if event["action"] == ALLOC:
            allocated += event["size"]
        elif event["action"] == FREED:
            allocated -= event["size"]
        series.append(allocated)
    return series


def python_line(frames: Sequence[dict], package: str = "lmperf") -> str:
    """The innermost frame in `package` code ("file.py:line in function"), else the innermost
    frame outside torch's own Python, else "-" (backward allocations come from autograd's C++
    thread and carry no Python frame)."""
    python = [f for f in frames if f.get("filename", "").endswith(".py")]
    chosen = next((f for f in python if f"/{package}/" in f["filename"]), None)
    chosen = chosen or next((f for f in python if "/torch/" not in f["filename"]), None)
    if chosen is None:
        return "-"
    return f"{chosen['filename'].split('/')[-1]}:{chosen['line']} in {chosen['name']}"


@dataclass(frozen=True)
class Allocation:
    size_mb: float
    count: int
    phase: str
    line: str


def phase_at(index: int, phase_starts: dict[str, int]) -> str:
    """The phase whose start is the last one at or before event `index`."""
    started = [(start, phase) for phase, start in phase_starts.items() if start <= index]
    return max(started)[1] if started else "-"


def largest_allocations(events: Sequence[dict], phase_starts: dict[str, int], top: int = 10) -> list[Allocation]:
    """The largest allocations, alike ones (same size, phase and line) counted together."""
    groups: Counter = Counter()
    for index, event in enumerate(events):
        if event["action"] == ALLOC:
            key = (event["size"], phase_at(index, phase_starts), python_line(event.get("frames", [])))
            groups[key] += 1
    ordered = sorted(groups.items(), key=lambda item: -item[0][0])[:top]
    return [Allocation(size / 1e6, count, phase, line) for (size, phase, line), count in ordered]
