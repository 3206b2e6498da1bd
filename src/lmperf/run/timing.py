"""Per-step timing: the cold first step on its own, then warm-up, then measured steps.

On CUDA every step is bracketed by CUDA events (the host may run ahead; the events measure the
GPU's time between them) and one synchronisation at the end reads them all. On a CPU the host
clock is exact because nothing runs asynchronously.

A measurement is noisy when its steps' standard deviation exceeds NOISY_SPREAD of their mean
(shared CPU cores, a GPU clocking down); rows also record the machine's load average before and
after, so a reader can tell a busy machine from a jittery step.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
import torch.distributed


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
        return cls(statistics.fmean(samples), std, statistics.median(samples), min(samples), max(samples))

    @property
    def spread(self) -> float | None:
        """Standard deviation over mean (None for a zero mean)."""
        return self.std / self.mean if self.mean else None

    @property
    def noisy(self) -> bool:
        return self.spread is not None and self.spread > NOISY_SPREAD


# std above half the mean: a figure that moves this much from step to step is no figure to quote
NOISY_SPREAD = 0.5


def load_average() -> float | None:
    """The operating system's one-minute load average (runnable processes), None where there is none."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # Windows has no load average
        return None


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


def time_steps(step: Callable[[], None], warmup: int, steps: int, device: torch.device) -> StepTimes:
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


@dataclass(frozen=True)
class DoBench:
    mean_ms: float
    median_ms: float
    calls: int  # measured calls after the estimate and the warm-up


def do_bench_ms(
    step: Callable[[], None], warmup_ms: float, rep_ms: float, device: torch.device, every_rank: bool = True
) -> DoBench:
    """triton.testing.do_bench's procedure: time 5 calls for an estimate, run warmup_ms / estimate
    warm-up calls, then time rep_ms / estimate calls one by one; their mean and median.

    Inside a torch.distributed world the estimate is the slowest rank's, so every rank makes the
    same number of calls: do_bench itself would let each rank count its own, and a rank making
    one call more than the others would wait in that call's collectives for ever. A step that one
    rank times on its own (`every_rank=False`) keeps its own estimate. Unlike do_bench it does not
    overwrite the L2 cache before each call (a step moves ~100 times the L2).
    """
    estimate = statistics.fmean(_time_each(step, 5, device))
    if every_rank and torch.distributed.is_available() and torch.distributed.is_initialized():
        slowest = torch.tensor([estimate], dtype=torch.float64, device=device)
        torch.distributed.all_reduce(slowest, op=torch.distributed.ReduceOp.MAX)
        estimate = slowest.item()
    _time_each(step, max(1, int(warmup_ms / estimate)), device)
    samples = _time_each(step, max(1, int(rep_ms / estimate)), device)
    return DoBench(statistics.fmean(samples), statistics.median(samples), len(samples))
