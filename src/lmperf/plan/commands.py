"""CLI commands of lmperf.plan: `plan` and `plan-check`, registered on the main app by lmperf.cli."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from lmperf.attention_names import ATTENTION_IMPLEMENTATIONS
from lmperf.cli_support import clean_errors, split_list
from lmperf.model.checkpointing import CHECKPOINT_FORMS

RUNS = typer.Option(Path("runs"), "--runs", help="Where run directories are created.")


def plan(
    preset: str = typer.Option("cs336-8b", "--preset", "-p", help="Model preset."),
    context: int = typer.Option(32768, "--context", "-t", help="Context length in tokens."),
    gpus: str = typer.Option("8,64,1024", help="GPU counts to predict, comma-separated."),
    strategy: str = typer.Option("fsdp", help="ddp or fsdp (FSDP2)."),
    batch: int = typer.Option(1, help="Sequences per GPU (the same at every GPU count: weak scaling)."),
    precision: str = typer.Option("bf16", "--precision", help="fp32 or bf16 (bf16 autocast)."),
    param_dtype: str = typer.Option("fp32", help="fp32 or bf16: the stored parameters, gradients and AdamW state."),
    attention: str = typer.Option("sdpa", help=f"Attention: {', '.join(ATTENTION_IMPLEMENTATIONS)} (memory model)."),
    loss: str = typer.Option("eager", help="eager or fused (memory model)."),
    checkpoint: str = typer.Option("none", help=f"Activation checkpointing: {CHECKPOINT_FORMS} (memory model)."),
    compile: str = typer.Option("eager", "--compile", help="eager or compile (to find the --from-row step)."),
    reshard: bool = typer.Option(True, "--reshard/--no-reshard", help="FSDP2 reshard_after_forward of the blocks."),
    bucket_mb: float = typer.Option(25.0, help="DDP gradient bucket size in MiB."),
    gpus_per_node: int = typer.Option(8, help="GPUs per node, joined by NVLink."),
    inter_node_gbps: float = typer.Option(
        50.0, help="Bandwidth between nodes per GPU in GB/s (bytes; 400 Gb/s is 50)."
    ),
    comm: Optional[Path] = typer.Option(
        None,
        help="`lmperf comm` run directory or results.jsonl to fit the collectives to (default: built-in 4 x H200 fit).",
    ),
    from_row: Optional[Path] = typer.Option(
        None, help="Run directory or results.jsonl holding the measured one-GPU step of this configuration."
    ),
    mfu: float = typer.Option(0.5, help="Assumed MFU of the compute, without --from-row."),
    overlap: Optional[float] = typer.Option(
        None, help="Share of the communication compute hides (default: fitted on 4 x H200)."
    ),
    peak_tflops: Optional[float] = typer.Option(None, help="Dense peak TFLOP/s (default: the comm rows' GPU's)."),
    runs_root: Path = RUNS,
) -> None:
    """Predict a data-parallel train step on N GPUs: time, tokens/s, MFU, memory per rank, and what each rests on."""
    arguments = dict(locals())  # recorded in the run directory's manifest
    from lmperf.model.step import StepConfig
    from lmperf.plan.inputs import plan_inputs
    from lmperf.plan.run import run_plan
    from lmperf.plan.schedule import Parallelism

    counts = split_list(gpus, "gpus", int)
    step = StepConfig(
        preset,
        context,
        "train-step",
        precision,
        compile,
        attention,
        batch,
        param_dtype=param_dtype,
        loss=loss,
        checkpoint=checkpoint,
    )
    inputs = plan_inputs(
        step,
        Parallelism(strategy, reshard, bucket_mb),
        comm,
        from_row,
        mfu,
        overlap,
        gpus_per_node,
        inter_node_gbps,
        peak_tflops,
    )
    path = run_plan(inputs, counts, runs_root, arguments)
    typer.echo((path / "results.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {path / 'results.jsonl'}, {path / 'results.md'}")


def plan_check(
    steps: List[Path] = typer.Argument(
        ..., help="bench and bench-dist run directories (or results.jsonl) with one- and N-GPU steps."
    ),
    comm: Path = typer.Option(..., help="`lmperf comm` run directory or results.jsonl of the same machine."),
    runs_root: Path = RUNS,
) -> None:
    """Put the plan's model beside measured N-GPU steps: each prediction and its error."""
    from lmperf.plan.run import run_check

    path = run_check(comm, steps, runs_root)
    typer.echo((path / "results.md").read_text(encoding="utf-8"))
    typer.echo(f"wrote {path / 'results.jsonl'}, {path / 'results.md'}")


def register(app: typer.Typer) -> None:
    """Add `plan` and `plan-check` to `app`."""
    app.command("plan")(clean_errors(plan))
    app.command("plan-check")(clean_errors(plan_check))
