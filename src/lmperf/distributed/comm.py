"""Collective benchmarks: all-reduce, all-gather and reduce-scatter over NCCL (GPUs) or Gloo (CPUs).

Figures follow nccl-tests (lmperf.analysis.collectives): `size` is the whole buffer; time is each
rank's mean over the measured iterations, averaged over ranks (nccl-tests' default); algorithm
bandwidth = size / time; bus bandwidth = algorithm bandwidth x the collective's bus factor.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch
import torch.distributed as dist

from lmperf.analysis.collectives import COLLECTIVES, bus_factor
from lmperf.run.timing import time_steps
from lmperf.distributed.guard import on_all_ranks
from lmperf.distributed.launch import World
from lmperf.dtypes import torch_dtype
from lmperf.errors import UsageError
from lmperf.report.environment import environment
from lmperf.report.rows import ResultRow, failure_row
from lmperf.report.rundir import RunDir

COMM_DTYPES = ("fp32", "bf16")
# Newer torch deprecates these two names for *_single ones; the old names work in every torch lmperf supports.
warnings.filterwarnings("ignore", r".*(all_gather_into_tensor|reduce_scatter_tensor)` is deprecated", FutureWarning)
UNITS = {"": 1, "B": 1, "KB": 2**10, "MB": 2**20, "GB": 2**30}


def parse_size(text: str) -> int:
    """'1MB' -> 1048576 (binary units, as nccl-tests); a plain number is bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?B?)\s*", text.upper())
    if not match or int(match.group(1)) <= 0:
        raise UsageError(f"cannot read message size {text!r}; use e.g. 512KB, 1MB, 1GB")
    return int(match.group(1)) * UNITS[match.group(2)]


@dataclass(frozen=True)
class CommJob:
    ops: list[str]
    sizes: list[int]  # bytes
    dtype: str = "fp32"
    warmup: int = 5
    iters: int = 20
    device: str = "cpu"
    timeout_s: float = 600.0

    def validate(self) -> "CommJob":
        for op in self.ops:
            if op not in COLLECTIVES:
                raise UsageError(f"unknown collective {op!r}; choose from {', '.join(COLLECTIVES)}")
        torch_dtype(self.dtype, COMM_DTYPES)
        if self.warmup < 0 or self.iters <= 0:
            raise UsageError(f"need --warmup >= 0 and --iters > 0, got {self.warmup} and {self.iters}")
        return self

    def buffer_bytes(self, nproc: int) -> float:
        """What one rank allocates for the largest message (`collective`): the whole buffer, its
        1/nproc part, and the fp32 random draw it is cast from when the dtype is narrower."""
        size = max(self.sizes)
        staging = 0 if self.dtype == "fp32" else size * 4 / torch_dtype(self.dtype, COMM_DTYPES).itemsize
        return size * (1 + 1 / nproc) + staging

    def to_dict(self) -> dict:
        return {"kind": "comm", **asdict(self)}

    @classmethod
    def from_dict(cls, spec: dict) -> "CommJob":
        return cls(**{k: v for k, v in spec.items() if k != "kind"})


@dataclass
class CommRow(ResultRow):
    op: str
    size_bytes: int
    dtype: str
    nproc: int
    backend: str
    warmup: int
    iters: int
    mean_us: float | None = None  # mean over ranks of each rank's mean
    median_us: float | None = None  # rank 0
    min_us: float | None = None  # rank 0
    max_us: float | None = None  # rank 0
    mean_us_ranks: list[float] = field(default_factory=list)
    algbw_gbps: float | None = None
    busbw_gbps: float | None = None


def collective(op: str, size_bytes: int, dtype: torch.dtype, world: World) -> tuple[Callable[[], None], int]:
    """The collective as a call on random buffers, and the size it moves (a multiple of n)."""
    element = torch.tensor([], dtype=dtype).element_size()
    numel = max(size_bytes // element // world.size, 1) * world.size
    whole = torch.randn(numel, device=world.device).to(dtype)
    part = torch.empty(numel // world.size, dtype=dtype, device=world.device)
    calls = {
        "all-reduce": lambda: dist.all_reduce(whole),
        "all-gather": lambda: dist.all_gather_into_tensor(whole, part),
        "reduce-scatter": lambda: dist.reduce_scatter_tensor(part, whole),
    }
    return calls[op], numel * element


def _measure(op: str, size: int, job: CommJob, world: World) -> CommRow:
    row = CommRow(
        op, size, job.dtype, world.size, dist.get_backend(), job.warmup, job.iters, env=environment(str(world.device))
    )
    try:
        call, row.size_bytes = on_all_ranks(lambda: collective(op, size, torch_dtype(job.dtype), world), world)
        times = on_all_ranks(lambda: time_steps(call, job.warmup, job.iters, world.device), world)
    except RuntimeError as error:  # out of memory included: every rank records the same row
        return failure_row(row, error)
    stats = times.stats
    ranks = [None] * world.size
    dist.all_gather_object(ranks, stats.mean * 1e3)
    row.mean_us_ranks, row.mean_us = ranks, sum(ranks) / world.size
    row.median_us, row.min_us, row.max_us = stats.median * 1e3, stats.min * 1e3, stats.max * 1e3
    row.algbw_gbps = row.size_bytes / (row.mean_us / 1e6) / 1e9
    row.busbw_gbps = row.algbw_gbps * bus_factor(op, world.size)
    return row


def run_comm(job: CommJob, world: World, run_dir: RunDir | None, on_row=lambda row: None) -> None:
    """Every rank calls this; rank 0 appends one row per (collective, size)."""
    for op in job.ops:
        for size in job.sizes:
            row = _measure(op, size, job, world)
            if world.device.type == "cuda":
                torch.cuda.empty_cache()  # a 1 GB buffer pair per size adds up otherwise
            if world.is_main and run_dir is not None:
                run_dir.append(row.to_dict())
                on_row(row)
