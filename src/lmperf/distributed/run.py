"""The data-parallel commands as library calls: `run_comm` and `run_bench_dist` launch their
processes (torchrun, one per GPU), and rank 0 or the launcher writes the rows and the reports."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from lmperf.cli_support import resolve_device, split_list
from lmperf.errors import UsageError
from lmperf.report.rundir import open_run_dir, reports_rendered
from lmperf.run.options import SweepOptions, flag_of

if TYPE_CHECKING:
    from lmperf.distributed.launch import Nodes


@dataclass(frozen=True)
class DataParallelOptions:
    """bench-dist's options beside bench's own."""

    nproc: Optional[int] = None  # default: every GPU, 2 processes on a CPU; inside torchrun the launch's
    strategy: str = "ddp"  # comma-separated: ddp, fsdp, none
    bucket_mb: str = "25"  # DDP bucket sizes, comma-separated
    reshard: str = "true"  # FSDP2 reshard_after_forward: true, false or true,false
    bucket_view: bool = True
    profile_steps: int = 0
    timeout_s: float = 600.0


@dataclass(frozen=True)
class Launched:
    """What a launch left: its run directory (None on a process that writes none), torchrun's
    exit status, the reports rendered, and a line for the user when something went wrong."""

    run_dir: Optional[Path]
    status: int
    written: list[Path] = field(default_factory=list)
    note: str = ""


def world_size(nproc: Optional[int], device: str) -> int:
    """The launch's world size inside a launch; otherwise `nproc`, checked against the GPUs."""
    from lmperf.distributed.launch import check_backend, check_nproc, launched

    check_backend(device)
    if launched():
        size = int(os.environ["WORLD_SIZE"])
        if nproc is not None and nproc != size:
            raise UsageError(f"--nproc {nproc} differs from the launch's world size {size}")
        return size
    if nproc is None:
        import torch

        nproc = torch.cuda.device_count() if device.startswith("cuda") else 2
    check_nproc(nproc, device)
    return nproc


def _run_dir(
    command: str, arguments: dict, runs_root: Path, resume: Optional[Path] = None, given: set[str] | None = None
):
    """(run directory, the arguments to run with). Rank 0 (or the launcher) owns the directory;
    other ranks of a launch get None. Every rank of a launch must run the same sweep, so there a
    resume takes nothing from the directory: every argument must match what it recorded."""
    from lmperf.distributed.launch import launched

    if launched() and int(os.environ["RANK"]) != 0:
        return None, arguments
    return open_run_dir(command, arguments, resume, runs_root, None if launched() else given, flag_of)


def run_comm(
    ops: str = "all-reduce,all-gather,reduce-scatter",
    sizes: Optional[str] = None,
    dtype: str = "fp32",
    warmup: int = 5,
    iters: int = 20,
    nproc: Optional[int] = None,
    device: str = "auto",
    timeout_s: float = 300.0,
    runs_root: Path = Path("runs"),
) -> Launched:
    """Latency and bus bandwidth of collectives on `nproc` processes, rows and reports."""
    from lmperf.distributed.comm import CommJob, parse_size
    from lmperf.distributed.launch import check_host_memory, launched
    from lmperf.distributed.report import write_comm_reports
    from lmperf.distributed.worker import run_job

    device = resolve_device(device)
    default_sizes = "1MB,4MB,16MB,64MB,256MB,1GB" if device.startswith("cuda") else "1MB,4MB"
    job = CommJob(
        split_list(ops, "ops"),
        [parse_size(s) for s in split_list(sizes or default_sizes, "sizes")],
        dtype,
        warmup,
        iters,
        device,
        timeout_s,
    ).validate()
    count = world_size(nproc, device)
    if device == "cpu" and not launched():
        check_host_memory(count, job.buffer_bytes(count), f"the {max(job.sizes) / 2**20:,.0f} MiB buffers")
    run_dir, _ = _run_dir("comm", {**job.to_dict(), "nproc": count}, runs_root)
    with reports_rendered(run_dir, write_comm_reports) as written:
        status = run_job(job, count, run_dir)
    return Launched(run_dir.path if run_dir else None, status, written)


def strategies(strategy: str, bucket_mb: str, reshard: str, bucket_view: bool, nproc: int) -> list:
    """One Strategy per comma-separated choice (and per DDP bucket size, per FSDP2 reshard)."""
    from lmperf.distributed.strategies import Strategy

    truth = {"true": True, "false": False}
    out = []
    for name in split_list(strategy, "strategy"):
        if name == "ddp":
            out += [Strategy(name, b, None, bucket_view) for b in split_list(bucket_mb, "bucket-mb", float)]
        elif name == "fsdp":
            if any(r.lower() not in truth for r in split_list(reshard, "reshard")):
                raise UsageError(f"--reshard takes true, false or both (true,false), got {reshard!r}")
            out += [Strategy(name, None, truth[r.lower()]) for r in split_list(reshard, "reshard")]
        else:
            out.append(Strategy(name))
    return [s.validate(nproc) for s in out]


def run_bench_dist(
    options: SweepOptions,
    data_parallel: DataParallelOptions = DataParallelOptions(),
    given: set[str] | None = None,
    nodes: "Nodes | None" = None,
) -> Launched:
    """bench's sweep data-parallel; rank 0 (or the launcher) writes the rows and the reports.

    Resuming, the directory's recorded options are used; those in `given` (None: all) must match."""
    from lmperf.distributed.bench import fill_missing
    from lmperf.distributed.launch import Nodes
    from lmperf.distributed.report import write_bench_reports
    from lmperf.distributed.worker import run_job

    nodes = (nodes or Nodes()).validate()
    device = resolve_device(options.device)
    options = replace(options, device=device).validate().resolved(device.startswith("cuda"))
    data_parallel = replace(data_parallel, nproc=world_size(data_parallel.nproc, options.device))
    _bench_job(options, data_parallel, nodes)  # bad input fails before a run directory is made
    dp_arguments = vars(data_parallel)
    run_dir, recorded = _run_dir(
        "bench-dist", {**options.arguments(), **dp_arguments}, options.runs_root, options.resume, given
    )
    # node 0 writes the rows; another node's directory only records what it was asked
    with reports_rendered(run_dir if nodes.rank == 0 else None, write_bench_reports) as written:
        options = options.with_arguments(recorded)
        data_parallel = DataParallelOptions(**{name: recorded[name] for name in dp_arguments})
        job, count = _bench_job(options, data_parallel, nodes)
        status = run_job(job, count, run_dir, nodes=nodes)
        if nodes.rank != 0:
            return Launched(
                None, status, note=f"node {nodes.rank}: torchrun exit status {status}; node 0 writes the rows"
            )
        note = ""
        if status and run_dir is not None:
            missing = fill_missing(
                job,
                count * nodes.count,
                run_dir,
                f"the process group ended early (torchrun exit {status}): "
                "a rank died, failed inside a collective or timed out; see the log above",
            )
            note = f"torchrun exited with status {status}; {missing} configuration(s) recorded as errors"
    return Launched(run_dir.path if run_dir else None, status, written, note)


def _bench_job(options: SweepOptions, data_parallel: DataParallelOptions, nodes: "Nodes"):
    """The job and its processes per node from bench's options and the data-parallel ones."""
    from lmperf.distributed.bench import DistBenchJob
    from lmperf.distributed.launch import check_host_memory, launched

    device = resolve_device(options.device)
    dp = data_parallel
    if dp.profile_steps < 0:
        raise UsageError(f"need --profile-steps >= 0, got {dp.profile_steps}")
    count = world_size(dp.nproc, device)
    chosen = strategies(dp.strategy, dp.bucket_mb, dp.reshard, dp.bucket_view, count * nodes.count)
    job = DistBenchJob(
        options.configs(device.startswith("cuda")), chosen, options.settings(device), dp.profile_steps, dp.timeout_s
    )
    if device == "cpu" and not launched():
        need, what = job.largest_rank_peak(count * nodes.count)
        check_host_memory(count, need, f"the analytic peak of {what}")
    return job, count
