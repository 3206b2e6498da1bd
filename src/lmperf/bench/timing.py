"""Per-step timing: the cold first step on its own, then warm-up, then measured steps.

On CUDA every step is bracketed by CUDA events (the host may run ahead; the events measure the
GPU's time between them) and one synchronisation at the end reads them all. On a CPU the host
clock is exact because nothing runs asynchronously.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch


@dataclass(frozen=True)
class Stats:
    mean: float
    std: float
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, samples: list[float]) -> "Stats":
        if not samples:
            raise ValueError("no samples to summarise")
        std = statistics.stdev(samples) if len(samples) > 1 else 0.0
        return cls(
            statistics.fmean(samples), std, statistics.median(samples), min(samples), max(samples)
        )


@dataclass(frozen=True)
class StepTimes:
    """Milliseconds of every step in order: cold (first) step, warm-up steps, measured steps."""

    cold_ms: float
    warmup_ms: list[float]
    measured_ms: list[float]

    @property
    def stats(self) -> Stats:
        return Stats.of(self.measured_ms)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time_cold(step: Callable[[], None], device: torch.device) -> float:
    # Wall clock with synchronisation: the cold step's cost is mostly on the host (compilation,
    # cuBLAS handles, allocator growth), which CUDA events would only see as an idle gap.
    _synchronize(device)
    start = time.perf_counter()
    step()
    _synchronize(device)
    return (time.perf_counter() - start) * 1e3


def _time_each(step: Callable[[], None], count: int, device: torch.device) -> list[float]:
    if count == 0:
        return []
    if device.type != "cuda":
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            step()
            samples.append((time.perf_counter() - start) * 1e3)
        return samples
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(count)]
    _synchronize(device)
    for start, end in events:
        start.record()
        step()
        end.record()
    _synchronize(device)
    return [start.elapsed_time(end) for start, end in events]


def time_steps(
    step: Callable[[], None], warmup: int, steps: int, device: torch.device
) -> StepTimes:
    """Run `warmup + steps` steps; the first one is also reported alone as the cold step.

    With warmup=0 the cold step is one of the measured steps, so the statistics show what
    skipping warm-up does to a measurement.
    """
    if warmup < 0 or steps <= 0:
        raise ValueError(f"need warmup >= 0 and steps > 0, got {warmup}, {steps}")
    cold = _time_cold(step, device)
    if warmup == 0:
        return StepTimes(cold, [], [cold] + _time_each(step, steps - 1, device))
    warm = [cold] + _time_each(step, warmup - 1, device)
    return StepTimes(cold, warm, _time_each(step, steps, device))
