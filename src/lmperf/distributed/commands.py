"""CLI commands of lmperf.distributed: `comm`, `bench-dist` and `dist-report`.

`bench-dist` takes exactly bench's options (read from the registered `bench` command, so the two
never drift apart) plus the data-parallel ones.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
from typing import List, Optional

import typer
from rich.console import Console

from lmperf.cli_support import bench_grid, clean_errors, resolve_device, split_list
from lmperf.errors import UsageError

console = Console(width=None if sys.stdout.isatty() else 200)


def _nproc(nproc: Optional[int], device: str) -> int:
    """The launch's world size inside a launch; otherwise --nproc, checked against the GPUs."""
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


def _run_dir(command: str, runs_root: Path, resume: Optional[Path] = None):
    """Rank 0 (or the launcher) owns the run directory; other ranks of a launch get None."""
    from lmperf.distributed.launch import launched
    from lmperf.report.rundir import RunDir

    if launched() and int(os.environ["RANK"]) != 0:
        return None
    return RunDir.resume(resume) if resume else RunDir.create(command, runs_root)


def comm(
    ops: str = typer.Option("all-reduce,all-gather,reduce-scatter", help="Collectives: all-reduce, all-gather, reduce-scatter."),
    sizes: Optional[str] = typer.Option(None, help="Message sizes, e.g. 1MB,64MB,1GB (default 1MB..1GB x4 on GPUs, 1MB,4MB on a CPU)."),
    dtype: str = typer.Option("fp32", help="fp32 or bf16."),
    warmup: int = typer.Option(5, help="Warm-up iterations per size."),
    iters: int = typer.Option(20, help="Measured iterations per size."),
    nproc: Optional[int] = typer.Option(None, help="Processes (one per GPU; default all GPUs, 2 on a CPU)."),
    device: str = typer.Option("auto", help="auto, cpu (Gloo) or cuda (NCCL)."),
    timeout_s: float = typer.Option(300.0, help="Process-group timeout: a dead rank ends the run after this."),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where run directories are created."),
) -> None:
    """Latency and bus bandwidth of collectives (nccl-tests definitions), table and PNG."""
    from lmperf.distributed.comm import CommJob, parse_size
    from lmperf.distributed.report import write_comm_reports
    from lmperf.distributed.worker import run_job

    device = resolve_device(device)
    default_sizes = "1MB,4MB,16MB,64MB,256MB,1GB" if device.startswith("cuda") else "1MB,4MB"
    job = CommJob(split_list(ops, "ops"), [parse_size(s) for s in split_list(sizes or default_sizes, "sizes")],
                  dtype, warmup, iters, device, timeout_s).validate()
    count = _nproc(nproc, device)
    run_dir = _run_dir("comm", runs_root)
    status = run_job(job, count, run_dir)
    _finish(run_dir, status, write_comm_reports)


def _strategies(strategy: str, bucket_mb: str, reshard: str, bucket_view: bool, nproc: int) -> list:
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


def bench_dist(
    nproc: Optional[int] = None, strategy: str = "ddp", bucket_mb: str = "25", reshard: str = "true",
    bucket_view: bool = True, profile_steps: int = 0, timeout_s: float = 600.0, **bench_options,
) -> None:
    """bench's sweep on N processes, one per GPU, with DDP or FSDP2 (rank 0 writes the rows)."""
    from lmperf.bench.sweep import SweepSettings
    from lmperf.distributed.bench import DistBenchJob, fill_missing
    from lmperf.distributed.report import write_bench_reports
    from lmperf.distributed.worker import run_job

    o = bench_options
    device = resolve_device(o["device"])
    if o["warmup"] < 0 or o["steps"] <= 0 or profile_steps < 0:
        raise UsageError("need --warmup >= 0, --steps > 0 and --profile-steps >= 0")
    configs = bench_grid(o, device.startswith("cuda"))
    count = _nproc(nproc, device)
    job = DistBenchJob(configs, _strategies(strategy, bucket_mb, reshard, bucket_view, count),
                       SweepSettings(o["warmup"], o["steps"], device, o["peak_tflops"]), profile_steps, timeout_s)
    run_dir = _run_dir("bench-dist", o["runs_root"], o["resume"])
    status = run_job(job, count, run_dir)
    if status and run_dir is not None:
        missing = fill_missing(job, count, run_dir, f"the process group ended early (torchrun exit {status}): "
                               "a rank died, failed inside a collective or timed out; see the log above")
        console.print(f"[red]torchrun exited with status {status}[/]; {missing} configuration(s) recorded as errors")
    _finish(run_dir, 0, write_bench_reports)


def _finish(run_dir, status: int, write_reports) -> None:
    """Rank 0 (or the launcher) renders the tables; a failed launch exits with its status."""
    if run_dir is None:
        return
    written = write_reports(run_dir.path)
    console.print((run_dir.path / "results.md").read_text(encoding="utf-8"), markup=False)
    console.print("wrote " + ", ".join(str(p) for p in [run_dir.results, *written]))
    if status:
        raise typer.Exit(status)


def dist_report(
    run_dirs: List[Path] = typer.Argument(..., help="Run directories of `lmperf comm` and `lmperf bench-dist`."),
    out: Path = typer.Option(..., help="Markdown file to write, e.g. benchmarks/distributed-h200x2.md."),
    title: str = typer.Option("Data-parallel training", help="Page title."),
) -> None:
    """Render one benchmark page from comm and bench-dist run directories."""
    from lmperf.distributed.report import write_benchmark_page

    write_benchmark_page(run_dirs, out, title)
    console.print(f"wrote {out}")


_DIST_OPTIONS = {
    "nproc": typer.Option(None, help="Processes, one per GPU (default: all GPUs; 2 on a CPU). Inside torchrun: the launch's."),
    "strategy": typer.Option("ddp", help="ddp, fsdp (FSDP2 fully_shard), none (one plain process); comma-separated."),
    "bucket_mb": typer.Option("25", help="DDP gradient bucket sizes in MB, comma-separated (one row each)."),
    "reshard": typer.Option("true", help="FSDP2 reshard_after_forward of the blocks (the root stays gathered): true, false or true,false."),
    "bucket_view": typer.Option(True, "--bucket-view/--no-bucket-view", help="DDP gradient_as_bucket_view."),
    "profile_steps": typer.Option(0, help="Profile this many steps per configuration: NCCL share, overlap, timeline PNG."),
    "timeout_s": typer.Option(600.0, help="Process-group timeout: a dead or stuck rank ends the step after this."),
}


def _bench_dist_signature(app: typer.Typer) -> inspect.Signature:
    """bench's parameters (from its registered command) followed by the data-parallel ones."""
    bench = next(c.callback for c in app.registered_commands if c.callback and c.callback.__name__ == "bench")
    own = inspect.signature(bench_dist, eval_str=True).parameters
    dist_params = [own[name].replace(kind=inspect.Parameter.KEYWORD_ONLY, default=option)
                   for name, option in _DIST_OPTIONS.items()]
    # Skips names bench may share with bench-dist (--nproc, --strategy when bench routes to it).
    bench_params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
                    for p in inspect.signature(bench, eval_str=True).parameters.values() if p.name not in _DIST_OPTIONS]
    return inspect.Signature(bench_params + dist_params)


def register(app: typer.Typer) -> None:
    """Add `comm`, `bench-dist` and `dist-report` to `app`."""
    app.command("comm")(clean_errors(comm))
    app.command("dist-report")(clean_errors(dist_report))
    command = clean_errors(bench_dist)
    command.__signature__ = _bench_dist_signature(app)
    app.command("bench-dist")(command)
