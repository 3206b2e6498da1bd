"""CLI commands of lmperf.profile (profile, memory, precision), registered by lmperf.cli."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from lmperf.attention_names import ATTENTION_IMPLEMENTATIONS
from lmperf.cli_support import clean_errors, console, resolve_device, split_list
from lmperf.model.choice import ModelChoice
from lmperf.model.checkpointing import CHECKPOINT_FORMS
from lmperf.run.options import model_options

ATTENTION_HELP = ", ".join(ATTENTION_IMPLEMENTATIONS) + "."


@model_options
def profile(
    preset: Optional[str] = typer.Option(
        None, "--preset", "-p", help="Model preset (default: tiny on a CPU, small on a GPU)."
    ),
    context: Optional[int] = typer.Option(
        None, "--context", "-t", help="Context length (default: 128 on a CPU, 512 on a GPU)."
    ),
    modes: str = typer.Option("forward,train-step", help="Comma-separated: forward, forward-backward, train-step."),
    precision: str = typer.Option("fp32", "--precision", help="fp32 or bf16 (bf16 autocast)."),
    compile: str = typer.Option("eager", "--compile", help="eager or compile (torch.compile)."),
    attention: str = typer.Option("naive", help=ATTENTION_HELP),
    batch: int = typer.Option(4, help="Batch size."),
    warmup: int = typer.Option(3, help="Warm-up steps per mode, not profiled."),
    steps: int = typer.Option(3, help="Profiled steps per mode."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    top: int = typer.Option(10, help="Kernels shown per mode on the terminal."),
    nsys: bool = typer.Option(
        False, "--nsys", help="Print (and run, where nsys is on the PATH) the nsys command for the same steps."
    ),
    under_nsys: bool = typer.Option(False, "--under-nsys", hidden=True, help="Run the steps for an nsys capture."),
    rebuild: Optional[Path] = typer.Option(
        None,
        "--rebuild",
        help="Recompute the tables of this profile run directory from its trace files, and render them again.",
    ),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where run directories are created."),
    model: ModelChoice = ModelChoice(),
) -> None:
    """Where the step's time goes: kernels, model regions, FLOPs vs time, matmul share."""
    from lmperf.profile import nsys as nsys_capture
    from lmperf.profile import report
    from lmperf.profile import tables as profile_tables
    from lmperf.profile.run import ProfileSettings, profile_config, rebuild_from_traces, run_profile
    from lmperf.report import tables
    from lmperf.report.rundir import RunDir

    out = console()

    if rebuild is not None:
        rebuild_from_traces(rebuild)
        out.print("wrote " + ", ".join(str(p) for p in [RunDir(rebuild).results, *report.write_reports(rebuild)]))
        return
    device = resolve_device(device)
    config, mode_list = profile_config(
        model,
        preset,
        context,
        split_list(modes, "modes"),
        precision,
        compile,
        attention,
        batch,
        device.startswith("cuda"),
    )
    settings = ProfileSettings(warmup, steps, device).validate()
    if under_nsys:
        nsys_capture.run_for_nsys(config, mode_list, settings)
        return
    run_dir = RunDir.create("profile", runs_root)
    if nsys:
        # The same command line again, run under nsys: this program, whichever way it was started.
        program = [sys.executable, sys.argv[0], *[a for a in sys.argv[1:] if a != "--nsys"], "--under-nsys"]
        command = nsys_capture.nsys_command(program, run_dir.path / "profile", len(mode_list))
        out.print("nsys command: " + " ".join(command), soft_wrap=True)
        status = nsys_capture.run_nsys(command)
        out.print(
            "nsys is not on the PATH; run the command above where it is"
            if status is None
            else f"nsys exited with status {status}"
        )
    out.print(
        f"[bold]lmperf profile[/]: {config.preset} ctx {config.seq_len} {precision} on {device}, rows -> {run_dir.results}"
    )
    rows = run_profile(config, mode_list, settings, run_dir)
    written = report.write_reports(run_dir.path)
    for row in rows:
        if row["status"] != "ok":
            out.print(f"{row['mode']}: {row['status']} ({row.get('error', '')})")
            continue
        out.print(
            f"[bold]{row['mode']}[/]: {row['step_ms']:.2f} ms/step ({row['time_unit']}), matmul share {row['matmul_share']:.1%}"
        )
        out.print(
            tables.rich_table(
                row["kernels"][:top], profile_tables.KERNEL_COLUMNS[:-1], title=f"top kernels, {row['mode']}"
            )
        )
        out.print(tables.rich_table(row["regions"], profile_tables.REGION_COLUMNS, title=f"regions, {row['mode']}"))
    out.print("wrote " + ", ".join(str(p) for p in [run_dir.results, *written, *sorted(run_dir.path.glob("trace-*"))]))


@model_options
def memory(
    preset: Optional[str] = typer.Option(
        None, "--preset", "-p", help="Model preset (default: small, unless --hf-config)."
    ),
    contexts: str = typer.Option("128,256,512", "--contexts", "-t", help="Comma-separated context lengths."),
    precisions: str = typer.Option("fp32,bf16", "--precisions", help="Comma-separated: fp32, bf16 (bf16 autocast)."),
    batch: int = typer.Option(4, help="Batch size."),
    attention: str = typer.Option("naive", help=ATTENTION_HELP),
    compile: str = typer.Option("eager", "--compile", help="eager or compile."),
    snapshot_context: Optional[int] = typer.Option(
        None, help="Context of the snapshots (default: the longest; first precision)."
    ),
    checkpoints: str = typer.Option(
        "none",
        "--checkpoint",
        help=f"Activation checkpointing of the repeated blocks: {CHECKPOINT_FORMS}; comma-separated.",
    ),
    render: Optional[Path] = typer.Option(
        None, "--render", help="Render memory.md of this memory run directory again (no GPU needed)."
    ),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where run directories are created."),
    model: ModelChoice = ModelChoice(),
) -> None:
    """Where the memory goes: peaks vs the analytic model, snapshots, largest allocations (CUDA);
    a --module model's parameters, gradients, optimizer state and activations (any device)."""
    from lmperf.profile.memory import MemorySettings, require_cuda, run_memory
    from lmperf.profile.memory_report import PEAK_COLUMNS, breakdown_section, write_memory_report
    from lmperf.report import tables
    from lmperf.report.rundir import RunDir

    out = console()

    if render is not None:
        out.print("wrote " + ", ".join(str(p) for p in write_memory_report(RunDir.resume(render, "memory").path)))
        return
    settings = MemorySettings(
        preset,
        tuple(split_list(contexts, "contexts", int)),
        tuple(split_list(precisions, "precisions")),
        batch,
        attention,
        compile,
        snapshot_context,
        model,
        tuple(split_list(checkpoints, "checkpoint")),
    )
    name = settings.configs()[0].preset  # validates before the CUDA check and the run directory
    if not settings.user_module:
        require_cuda()
    run_dir = RunDir.create("memory", runs_root)
    out.print(f"[bold]lmperf memory[/]: {name}, rows -> {run_dir.results}")
    rows = run_memory(settings, run_dir)
    written = write_memory_report(run_dir.path)
    if settings.user_module:
        out.print(breakdown_section([r for r in rows if r["kind"] == "breakdown"]), markup=False)
    else:
        out.print(tables.rich_table([r for r in rows if r["kind"] == "peak"], PEAK_COLUMNS, title="peak memory"))
    out.print("wrote " + ", ".join(str(p) for p in [run_dir.results, *written]))


@model_options
def precision(
    preset: Optional[str] = typer.Option(
        None, "--preset", "-p", help="Model preset (default: tiny, unless --hf-config)."
    ),
    autocast: str = typer.Option("bf16", "--precision", "--autocast", help="bf16 or fp16 (the autocast dtype)."),
    device: str = typer.Option("auto", help="auto, cpu or cuda (fp16 autocast wants CUDA)."),
    model: ModelChoice = ModelChoice(),
) -> None:
    """Each module's parameter, output and gradient dtypes under autocast, and the loss dtype."""
    from lmperf.profile.precision import ACCUMULATION_COLUMNS, DTYPE_COLUMNS, accumulation_demo, dtype_table
    from lmperf.report import tables

    out = console()

    base = model.base(preset, "tiny")
    rows, loss_dtype = dtype_table(base, autocast, resolve_device(device))
    out.print(tables.rich_table(rows, DTYPE_COLUMNS, title=f"{base.preset} under {autocast} autocast"))
    out.print(f"loss dtype: {loss_dtype}")
    demo = [vars(result) for result in accumulation_demo()]
    out.print(tables.rich_table(demo, ACCUMULATION_COLUMNS, title="0.01 added 1000 times (exact: 10)"))


def register(app: typer.Typer) -> None:
    """Add `profile`, `memory` and `precision` to `app`."""
    for command in (profile, memory, precision):
        app.command()(clean_errors(command))
