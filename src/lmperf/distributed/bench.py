"""Bench's sweep over a data-parallel world: per-step time, tokens/s per GPU and in total, MFU,
memory per rank, and (with `profile_steps`) communication share and overlap, and rank 0's table
of the profiled step's GEMM and attention kernels, the GEMMs also timed alone.

Each rank runs lmperf.bench's own sweep (`run_configs`, the same timing, rows and OOM handling)
with a DistModelStep; rank 0 appends the rows. A job is a plain JSON spec, so a launcher can hand
it to torchrun's workers (worker.py) and a run can be resumed or its missing rows filled in.
"""

from __future__ import annotations

import json
import weakref
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import torch
import torch.distributed as dist

from lmperf.model.step import StepConfig
from lmperf.run.sweep import KEY_FIELDS, BenchRow, SweepSettings, base_row, run_configs
from lmperf.distributed import gemm_alone, kernel_table, overlap
from lmperf.distributed.launch import World
from lmperf.analysis.sharding import rank_peak
from lmperf.distributed.strategies import DistModelStep, Strategy
from lmperf.report.files import write_text_whole
from lmperf.report.rundir import RunDir, key_of

DIST_KEY_FIELDS = KEY_FIELDS + ("strategy", "nproc", "bucket_mb", "reshard")


@dataclass
class DistBenchRow(BenchRow):
    """A bench row (rank 0's timing; tokens_per_s is per GPU) with the world's figures."""

    strategy: str = "none"
    nproc: int = 1
    bucket_mb: float | None = None
    reshard: bool | None = None
    tokens_per_s_total: float | None = None
    mean_ms_ranks: list[float] = field(default_factory=list)
    peak_memory_gb_ranks: list[float] = field(default_factory=list)
    persistent_memory_gb: float | None = None  # max over ranks, between steps (grads released)
    profiled_steps: int = 0
    comm_ms: float | None = None  # per step, mean over ranks
    hidden_ms: float | None = None
    exposed_ms: float | None = None
    comm_share: float | None = None
    exposed_share: float | None = None
    kernel_ms_by_category: dict = field(default_factory=dict)  # rank 0, per profiled step
    timeline: str = ""
    kernel_table: str = ""  # rank 0's kernels of the last profiled step (kernel_table), a JSONL file


@dataclass(frozen=True)
class DistBenchJob:
    configs: list[StepConfig]
    strategies: list[Strategy]
    settings: SweepSettings
    profile_steps: int = 0
    timeout_s: float = 600.0

    def to_dict(self) -> dict:
        # each configuration as its row writes it: a user's module by its record, not its code
        return {"kind": "bench", **asdict(self), "configs": [c.to_dict() for c in self.configs]}

    @classmethod
    def from_dict(cls, spec: dict) -> "DistBenchJob":
        return cls(
            [StepConfig.from_dict(c) for c in spec["configs"]],
            [Strategy(**s) for s in spec["strategies"]],
            SweepSettings(**spec["settings"]),
            spec["profile_steps"],
            spec["timeout_s"],
        )

    def expected(self) -> list[tuple[StepConfig, Strategy]]:
        return [(c, s) for s in self.strategies for c in self.configs]

    def largest_rank_peak(self, world_size: int) -> tuple[float, str]:
        """The largest analytic peak of one rank over the job, in bytes, and whose it is."""
        need, config = max(
            ((rank_peak(c, s.layout(world_size)), c) for c, s in self.expected()), key=lambda pair: pair[0]
        )
        return need, f"{config.preset} at context {config.seq_len}, {config.mode}"


def row_key(config: StepConfig, strategy: Strategy, nproc: int) -> tuple:
    return key_of({**config.to_dict(), **strategy.key(), "nproc": nproc}, DIST_KEY_FIELDS)


def stored_keys(rows: Iterable[dict]) -> set[tuple]:
    """The keys of rows a run directory holds, as row_key makes them: a field added to the
    configuration since a row was written takes its default, so a resume still finds the row."""
    return {key_of({**row, **StepConfig.from_dict(row).to_dict()}, DIST_KEY_FIELDS) for row in rows}


class _StepMaker:
    """run_configs' make_step that keeps a weak reference to its step, to profile it after the row
    (weak, so the sweep's own release of a failed step still frees its memory)."""

    def __init__(self, strategy: Strategy, world: World):
        self.strategy, self.world = strategy, world
        self._last: Callable[[], DistModelStep | None] = lambda: None

    def __call__(self, config: StepConfig, device: torch.device) -> DistModelStep:
        step = DistModelStep(config, self.world.device, self.strategy, self.world)
        self._last = weakref.ref(step)
        return step

    def live_step(self) -> DistModelStep | None:
        return self._last()


def _gather(value, world: World) -> list:
    values = [None] * world.size
    dist.all_gather_object(values, value)
    return values


def _world_figures(row: DistBenchRow, world: World) -> None:
    """Per-rank times and memory onto rank 0's row (a collective: every rank calls it)."""
    persistent = torch.cuda.memory_allocated(world.device) / 1e9 if world.device.type == "cuda" else None
    ranks = _gather((row.mean_ms, row.peak_memory_gb, persistent, row.peak_reserved_gb, row.alloc_retries), world)
    row.mean_ms_ranks = [r[0] for r in ranks]
    if persistent is not None:
        row.peak_memory_gb_ranks = [r[1] for r in ranks]
        row.peak_memory_gb = max(row.peak_memory_gb_ranks)
        row.persistent_memory_gb = max(r[2] for r in ranks)
        row.peak_reserved_gb = max(r[3] for r in ranks)
        row.alloc_retries = max(r[4] for r in ranks)
    row.tokens_per_s_total = row.tokens_per_s * world.size


def _write_kernel_table(
    trace: dict,
    kernels: Sequence[overlap.Kernel],
    window: overlap.Interval,
    device: torch.device,
    path: Path,
    env: dict,
) -> str:
    """The step's kernel table with its GEMMs also timed alone, as JSONL, each row with the run's
    environment (GPU, versions, commit) as every result row has; the file's name."""
    rows = kernel_table.kernel_rows(kernels, window, kernel_table.launching_ops(trace))
    gemm_alone.time_alone(rows, device)
    write_text_whole(path, "".join(json.dumps({**row, "env": env}) + "\n" for row in rows))
    return path.name


def _profile(row: DistBenchRow, step: DistModelStep, steps: int, world: World, run_dir: RunDir | None) -> None:
    """Communication share and overlap from `steps` profiled steps, mean over ranks; on rank 0 the
    timeline and the kernel table of the last one."""
    trace = overlap.profile_trace(lambda: step.run(row.mode), steps)
    step.release_grads()
    kernels, windows = overlap.kernels_and_steps(trace)
    if not kernels:
        return  # a CPU run: Gloo's work is no GPU kernel, there is no overlap to read
    summaries = _gather(overlap.summarize(kernels, windows).to_dict(), world)
    row.profiled_steps = steps
    row.kernel_ms_by_category = overlap.kernel_ms_by_category(kernels, windows)
    for name in ("comm_ms", "hidden_ms", "exposed_ms", "comm_share", "exposed_share"):
        setattr(row, name, sum(s[name] for s in summaries) / world.size)
    if run_dir is not None:
        label = "-".join(
            str(v) for v in (row.preset, row.seq_len, row.precision, row.strategy, row.bucket_mb or row.reshard)
        )
        path = run_dir.path / f"timeline-{label}.png"
        overlap.plot_timeline(kernels, windows[-1], path, f"rank 0, one step: {label}")
        row.timeline = path.name
        row.kernel_table = _write_kernel_table(
            trace, kernels, windows[-1], world.device, run_dir.path / f"kernels-{label}.jsonl", row.env
        )
    dist.barrier()  # the other ranks wait here while rank 0 times GEMMs alone


def _todo(job: DistBenchJob, world: World, run_dir: RunDir | None) -> list[tuple[StepConfig, Strategy]]:
    """What the run directory lacks, decided by rank 0 (other nodes may not see the directory)."""
    todo = [None]
    if world.is_main:
        done = stored_keys(run_dir.rows() if run_dir and run_dir.results.exists() else [])
        todo = [[(c, s) for c, s in job.expected() if row_key(c, s, world.size) not in done]]
    dist.broadcast_object_list(todo, src=0)
    return todo[0]


def run_dist_sweep(job: DistBenchJob, world: World, run_dir: RunDir | None, on_row=lambda row: None) -> None:
    """Every rank calls this; rank 0 appends one row per (configuration, strategy) to `run_dir`."""
    todo = _todo(job, world, run_dir)
    for strategy in job.strategies:
        configs = [c for c, s in todo if s == strategy]
        maker = _StepMaker(strategy.validate(world.size), world)
        # FSDP shards parameters and optimizer state: the single-process peak would refuse steps
        # that fit (the cs336-8b step needs 130 GB of state unsharded, 65 GB per rank on two).
        for bench_row in run_configs(configs, job.settings, maker, check_memory=False):
            row = DistBenchRow(**bench_row.to_dict(), **strategy.key(), nproc=world.size)
            step = maker.live_step()
            if row.status == "ok":  # the guard makes the status the same on every rank
                _world_figures(row, world)
                if job.profile_steps and step is not None:
                    _profile(row, step, job.profile_steps, world, run_dir)
            del step
            if world.is_main and run_dir is not None:
                run_dir.append(row.to_dict())
                on_row(row)


def fill_missing(job: DistBenchJob, nproc: int, run_dir: RunDir, why: str) -> int:
    """After a launch that ended early: one `error` row for every configuration with no row."""
    done = stored_keys(run_dir.rows())
    missing = [(c, s) for c, s in job.expected() if row_key(c, s, nproc) not in done]
    for config, strategy in missing:
        base = base_row(config, job.settings, "error")
        row = DistBenchRow(**base.to_dict(), **strategy.key(), nproc=nproc)
        row.error = why
        run_dir.append(row.to_dict())
    return len(missing)
