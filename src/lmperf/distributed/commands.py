"""CLI commands of lmperf.distributed: `comm`, `bench-dist` and `dist-report`.

`bench-dist` takes exactly bench's options (the annotated types of lmperf.bench.commands, read
into one SweepOptions) plus the data-parallel ones.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, List, Optional

import typer
from rich.console import Console

from lmperf.bench import commands as bench_commands
from lmperf.bench.options import SweepOptions
from lmperf.cli_support import clean_errors, resolve_device, split_list
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


def _run_dir(command: str, arguments: dict, runs_root: Path, resume: Optional[Path] = None,
             given: set[str] | None = None):
    """(run directory, the arguments to run with). Rank 0 (or the launcher) owns the directory;
    other ranks of a launch get None. Every rank of a launch must run the same sweep, so there a
    resume takes nothing from the directory: every argument must match what it recorded."""
    from lmperf.distributed.launch import launched
    from lmperf.report.rundir import open_run_dir

    if launched() and int(os.environ["RANK"]) != 0:
        return None, arguments
    return open_run_dir(command, arguments, resume, runs_root, None if launched() else given)


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
    run_dir, _ = _run_dir("comm", {**job.to_dict(), "nproc": count}, runs_root)
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


_DEFAULT = SweepOptions()


def bench_dist(
    context: typer.Context,
    presets: bench_commands.Presets = _DEFAULT.presets,
    contexts: bench_commands.Contexts = _DEFAULT.contexts,
    modes: bench_commands.Modes = _DEFAULT.modes,
    precisions: bench_commands.Precisions = _DEFAULT.precisions,
    compile: bench_commands.Compile = _DEFAULT.compile,
    attention: bench_commands.Attention = _DEFAULT.attention,
    batch: bench_commands.Batch = _DEFAULT.batch,
    warmup: bench_commands.Warmup = _DEFAULT.warmup,
    steps: bench_commands.Steps = _DEFAULT.steps,
    device: bench_commands.Device = _DEFAULT.device,
    peak_tflops: bench_commands.PeakTflops = _DEFAULT.peak_tflops,
    resume: bench_commands.Resume = _DEFAULT.resume,
    runs_root: bench_commands.RunsRoot = _DEFAULT.runs_root,
    param_dtype: bench_commands.ParamDtypes = _DEFAULT.param_dtypes,
    loss: bench_commands.Losses = _DEFAULT.losses,
    checkpoint: bench_commands.Checkpoints = _DEFAULT.checkpoints,
    hf_config: bench_commands.HfConfig = None,
    d_model: bench_commands.DModel = None,
    d_ff: bench_commands.DFf = None,
    layers: bench_commands.Layers = None,
    heads: bench_commands.Heads = None,
    kv_heads: bench_commands.KvHeads = None,
    vocab: bench_commands.Vocab = None,
    max_seq_len: bench_commands.MaxSeqLen = None,
    tie_embeddings: bench_commands.TieEmbeddings = None,
    mlp: bench_commands.Mlp = None,
    leaderboard_warmup_ms: bench_commands.LeaderboardWarmup = _DEFAULT.leaderboard_warmup_ms,
    leaderboard_rep_ms: bench_commands.LeaderboardRep = _DEFAULT.leaderboard_rep_ms,
    nproc: Annotated[Optional[int], typer.Option(help="Processes, one per GPU (default: all GPUs; 2 on a CPU). Inside torchrun: the launch's.")] = None,
    strategy: Annotated[str, typer.Option(help="ddp, fsdp (FSDP2 fully_shard), none (one plain process); comma-separated.")] = "ddp",
    bucket_mb: Annotated[str, typer.Option(help="DDP gradient bucket sizes in MB, comma-separated (one row each).")] = "25",
    reshard: Annotated[str, typer.Option(help="FSDP2 reshard_after_forward of the blocks (the root stays gathered): true, false or true,false.")] = "true",
    bucket_view: Annotated[bool, typer.Option("--bucket-view/--no-bucket-view", help="DDP gradient_as_bucket_view.")] = True,
    profile_steps: Annotated[int, typer.Option(help="Profile this many steps per configuration: NCCL share, overlap, timeline PNG.")] = 0,
    timeout_s: Annotated[float, typer.Option(help="Process-group timeout: a dead or stuck rank ends the step after this.")] = 600.0,
    nnodes: Annotated[int, typer.Option(help="Machines in the launch (torchrun --nnodes); run the same command on each.")] = 1,
    node_rank: Annotated[int, typer.Option(help="This machine's index, 0 .. nnodes-1 (torchrun --node-rank); node 0 writes the rows.")] = 0,
    rdzv_endpoint: Annotated[Optional[str], typer.Option(help="host:port of node 0, where the ranks meet (needed with --nnodes > 1).")] = None,
) -> None:
    """bench's sweep on N processes, one per GPU, with DDP or FSDP2 (rank 0 writes the rows)."""
    from lmperf.distributed.launch import Nodes

    options = SweepOptions(presets, contexts, modes, precisions, compile, attention, batch,
                           warmup, steps, device, peak_tflops, resume, runs_root,
                           bench_commands.model_choice(hf_config, d_model, d_ff, layers, heads, kv_heads, vocab,
                                                       max_seq_len, tie_embeddings, mlp), param_dtype, loss,
                           checkpoint, leaderboard_warmup_ms, leaderboard_rep_ms)
    run_bench_dist(options, nproc, strategy, bucket_mb, reshard, bucket_view, profile_steps, timeout_s,
                   bench_commands.given_sweep_options(context), Nodes(nnodes, node_rank, rdzv_endpoint))


def run_bench_dist(
    options: SweepOptions, nproc: Optional[int] = None, strategy: str = "ddp", bucket_mb: str = "25",
    reshard: str = "true", bucket_view: bool = True, profile_steps: int = 0, timeout_s: float = 600.0,
    given: set[str] | None = None, nodes: "Nodes | None" = None,
) -> None:
    """Run the sweep data-parallel; rank 0 (or the launcher) writes the rows and the reports.

    Resuming, the directory's recorded options are used; those in `given` (None: all) must match."""
    from lmperf.distributed.bench import fill_missing
    from lmperf.distributed.report import write_bench_reports
    from lmperf.distributed.launch import Nodes
    from lmperf.distributed.worker import run_job

    nodes = (nodes or Nodes()).validate()
    options = replace(options, device=resolve_device(options.device)).validate()
    data_parallel = dict(nproc=_nproc(nproc, options.device), strategy=strategy, bucket_mb=bucket_mb, reshard=reshard,
                         bucket_view=bucket_view, profile_steps=profile_steps, timeout_s=timeout_s)
    _bench_job(options, data_parallel, nodes)  # bad input fails before a run directory is made
    run_dir, recorded = _run_dir("bench-dist", {**options.arguments(), **data_parallel}, options.runs_root,
                                 options.resume, given)
    options = options.with_arguments(recorded)
    data_parallel = {name: recorded[name] for name in data_parallel}
    job, count = _bench_job(options, data_parallel, nodes)
    status = run_job(job, count, run_dir, nodes=nodes)
    if nodes.rank != 0:
        console.print(f"node {nodes.rank}: torchrun exit status {status}; node 0 writes the rows")
        raise typer.Exit(status)
    if status and run_dir is not None:
        missing = fill_missing(job, count * nodes.count, run_dir, f"the process group ended early (torchrun exit {status}): "
                               "a rank died, failed inside a collective or timed out; see the log above")
        console.print(f"[red]torchrun exited with status {status}[/]; {missing} configuration(s) recorded as errors")
    _finish(run_dir, status, write_bench_reports)


def _bench_job(options: SweepOptions, data_parallel: dict, nodes: "Nodes"):
    """The job and its processes per node from bench's options and the data-parallel ones."""
    from lmperf.distributed.bench import DistBenchJob

    device = resolve_device(options.device)
    dp = data_parallel
    if dp["profile_steps"] < 0:
        raise UsageError(f"need --profile-steps >= 0, got {dp['profile_steps']}")
    count = _nproc(dp["nproc"], device)
    strategies = _strategies(dp["strategy"], dp["bucket_mb"], dp["reshard"], dp["bucket_view"], count * nodes.count)
    job = DistBenchJob(options.configs(device.startswith("cuda")), strategies, options.settings(device),
                       dp["profile_steps"], dp["timeout_s"])
    return job, count


def _finish(run_dir, status: int, write_reports) -> None:
    """Rank 0 (or the launcher) renders the tables; a failed launch exits with its status."""
    if run_dir is None:
        return
    written = write_reports(run_dir.path)
    run_dir.release()  # a caller in the same process may resume it next
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


def register(app: typer.Typer) -> None:
    """Add `comm`, `bench-dist` and `dist-report` to `app`."""
    for name, command in (("comm", comm), ("dist-report", dist_report), ("bench-dist", bench_dist)):
        app.command(name)(clean_errors(command))
