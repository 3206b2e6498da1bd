"""The `lmperf` command line: parse, call the library, print. Each command is a library call."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.progress import Progress

from lmperf.cli_support import bench_grid, clean_errors, resolve_device

app = typer.Typer(
    help="Measure, explain and speed up the GPU cost of Transformer language models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
# Wide enough for the bench table when output goes to a file or a pipe.
console = Console(width=None if sys.stdout.isatty() else 200)


@app.callback()
def _root() -> None:
    """Keeps `lmperf` a group of subcommands even while it has only one."""


@app.command()
@clean_errors
def bench(
    presets: Optional[str] = typer.Option(None, "--presets", "-p", help="Comma-separated presets (default: tiny on a CPU, small on a GPU)."),
    contexts: Optional[str] = typer.Option(None, "--contexts", "-t", help="Comma-separated context lengths (default: 128 on a CPU, 512 on a GPU)."),
    modes: str = typer.Option("forward,forward-backward,train-step", help="forward, forward-backward, train-step."),
    precisions: Optional[str] = typer.Option(None, help="fp32, bf16 (bf16 autocast). Default: fp32 on a CPU, fp32,bf16 on a GPU."),
    compile: str = typer.Option("eager", "--compile", help="eager, compile (torch.compile), or both."),
    attention: str = typer.Option("naive", help="naive, sdpa, torch, triton (comma-separated for several)."),
    batch: int = typer.Option(4, help="Batch size."),
    warmup: int = typer.Option(5, help="Warm-up steps before measuring (0 allowed)."),
    steps: int = typer.Option(10, help="Measured steps."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    peak_tflops: Optional[float] = typer.Option(None, help="Override the GPU's dense peak TFLOP/s used for MFU."),
    resume: Optional[Path] = typer.Option(None, help="Continue the sweep in this run directory, skipping finished rows."),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where run directories are created."),
    nproc: Optional[int] = typer.Option(None, help="Data-parallel on N processes, one per GPU (same as lmperf bench-dist)."),
    strategy: str = typer.Option("ddp", help="With --nproc: ddp or fsdp (FSDP2); more options in lmperf bench-dist."),
) -> None:
    """Time forward, forward-backward and training steps over a grid of configurations."""
    if nproc is not None:
        options = {k: v for k, v in locals().items() if k not in ("nproc", "strategy")}
        return importlib.import_module("lmperf.distributed.commands").bench_dist(nproc, strategy, **options)
    from lmperf.bench import report
    from lmperf.bench.sweep import SweepSettings, run_sweep
    from lmperf.errors import UsageError
    from lmperf.report import tables
    from lmperf.report.rundir import RunDir

    device = resolve_device(device)
    on_gpu = device.startswith("cuda")
    if warmup < 0 or steps <= 0:
        raise UsageError(f"need --warmup >= 0 and --steps > 0, got {warmup} and {steps}")
    configs = bench_grid(locals(), on_gpu)
    run_dir = RunDir.resume(resume) if resume else RunDir.create("bench", runs_root)
    settings = SweepSettings(warmup, steps, device, peak_tflops)
    console.print(f"[bold]lmperf bench[/]: {len(configs)} configurations on {device}, rows -> {run_dir.results}")
    try:
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("benchmarking", total=len(configs))
            rows = run_sweep(configs, settings, run_dir, on_row=lambda row: progress.advance(task))
    finally:
        if run_dir.results.exists():
            written = report.write_reports(run_dir.path)
    console.print(tables.rich_table(rows, report.COLUMNS, title="lmperf bench"))
    console.print("wrote " + ", ".join(str(p) for p in [run_dir.results, *written]))


# Each area adds its commands from lmperf/<area>/commands.py (a register(app) function), so the
# areas can grow without touching one another here.
for _area in ("profile", "attention_bench", "pmc", "distributed"):
    importlib.import_module(f"lmperf.{_area}.commands").register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
