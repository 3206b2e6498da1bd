"""CLI commands of lmperf.distributed: `comm`, `bench-dist` and `dist-report`, over the library
calls of lmperf.distributed.run.

`bench-dist` takes exactly bench's sweep options (lmperf.run.options, read into one SweepOptions)
plus the data-parallel ones; registering these commands also offers `lmperf bench --nproc` the
data-parallel runner (lmperf.run.launchers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

import typer

from lmperf.cli_support import clean_errors, console
from lmperf.run.launchers import DATA_PARALLEL, register_runner
from lmperf.run.options import SweepOptions, given_fields, sweep_options


def comm(
    ops: str = typer.Option(
        "all-reduce,all-gather,reduce-scatter", help="Collectives: all-reduce, all-gather, reduce-scatter."
    ),
    sizes: Optional[str] = typer.Option(
        None, help="Message sizes, e.g. 1MB,64MB,1GB (default 1MB..1GB x4 on GPUs, 1MB,4MB on a CPU)."
    ),
    dtype: str = typer.Option("fp32", help="fp32 or bf16."),
    warmup: int = typer.Option(5, help="Warm-up iterations per size."),
    iters: int = typer.Option(20, help="Measured iterations per size."),
    nproc: Optional[int] = typer.Option(None, help="Processes (one per GPU; default all GPUs, 2 on a CPU)."),
    device: str = typer.Option("auto", help="auto, cpu (Gloo) or cuda (NCCL)."),
    timeout_s: float = typer.Option(300.0, help="Process-group timeout: a dead rank ends the run after this."),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where run directories are created."),
) -> None:
    """Latency and bus bandwidth of collectives (nccl-tests definitions), table and PNG."""
    from lmperf.distributed.run import run_comm

    _print(run_comm(ops, sizes, dtype, warmup, iters, nproc, device, timeout_s, runs_root))


@sweep_options
def bench_dist(
    context: typer.Context,
    options: SweepOptions,
    nproc: Annotated[
        Optional[int],
        typer.Option(help="Processes, one per GPU (default: all GPUs; 2 on a CPU). Inside torchrun: the launch's."),
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="ddp, fsdp (FSDP2 fully_shard), none (one plain process); comma-separated.")
    ] = "ddp",
    bucket_mb: Annotated[
        str, typer.Option(help="DDP gradient bucket sizes in MB, comma-separated (one row each).")
    ] = "25",
    reshard: Annotated[
        str,
        typer.Option(
            help="FSDP2 reshard_after_forward of the blocks (the root stays gathered): true, false or true,false."
        ),
    ] = "true",
    bucket_view: Annotated[
        bool, typer.Option("--bucket-view/--no-bucket-view", help="DDP gradient_as_bucket_view.")
    ] = True,
    profile_steps: Annotated[
        int, typer.Option(help="Profile this many steps per configuration: NCCL share, overlap, timeline PNG.")
    ] = 0,
    timeout_s: Annotated[
        float, typer.Option(help="Process-group timeout: a dead or stuck rank ends the step after this.")
    ] = 600.0,
    nnodes: Annotated[
        int, typer.Option(help="Machines in the launch (torchrun --nnodes); run the same command on each.")
    ] = 1,
    node_rank: Annotated[
        int, typer.Option(help="This machine's index, 0 .. nnodes-1 (torchrun --node-rank); node 0 writes the rows.")
    ] = 0,
    rdzv_endpoint: Annotated[
        Optional[str], typer.Option(help="host:port of node 0, where the ranks meet (needed with --nnodes > 1).")
    ] = None,
) -> None:
    """bench's sweep on N processes, one per GPU, with DDP or FSDP2 (rank 0 writes the rows)."""
    from lmperf.distributed.launch import Nodes
    from lmperf.distributed.run import DataParallelOptions, run_bench_dist

    data_parallel = DataParallelOptions(nproc, strategy, bucket_mb, reshard, bucket_view, profile_steps, timeout_s)
    _print(run_bench_dist(options, data_parallel, given_fields(context), Nodes(nnodes, node_rank, rdzv_endpoint)))


def bench_data_parallel(options: SweepOptions, nproc: int, strategy: str, given: set[str]) -> None:
    """`lmperf bench --nproc N --strategy S`: bench-dist with its other options at their defaults."""
    from lmperf.distributed.run import DataParallelOptions, run_bench_dist

    _print(run_bench_dist(options, DataParallelOptions(nproc=nproc, strategy=strategy), given))


def _print(launched) -> None:
    """The rows' table and the files written; a failed launch exits with torchrun's status."""
    out = console()
    if launched.note:
        out.print(launched.note, markup=False)
    if launched.run_dir is not None:
        out.print((launched.run_dir / "results.md").read_text(encoding="utf-8"), markup=False)
        out.print("wrote " + ", ".join(str(p) for p in [launched.run_dir / "results.jsonl", *launched.written]))
    if launched.status:
        raise typer.Exit(launched.status)


def dist_report(
    run_dirs: List[Path] = typer.Argument(..., help="Run directories of `lmperf comm` and `lmperf bench-dist`."),
    out: Path = typer.Option(..., help="Markdown file to write, e.g. benchmarks/distributed-h200x2.md."),
    title: str = typer.Option("Data-parallel training", help="Page title."),
) -> None:
    """Render one benchmark page from comm and bench-dist run directories."""
    from lmperf.distributed.report import write_benchmark_page

    write_benchmark_page(run_dirs, out, title)
    console().print(f"wrote {out}")


def register(app: typer.Typer) -> None:
    """Add `comm`, `bench-dist` and `dist-report` to `app`, and offer bench the data-parallel runner."""
    for name, command in (("comm", comm), ("dist-report", dist_report), ("bench-dist", bench_dist)):
        app.command(name)(clean_errors(command))
    register_runner(DATA_PARALLEL, bench_data_parallel)
