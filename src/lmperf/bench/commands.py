"""CLI command of lmperf.bench: `bench`, registered by lmperf.cli.

The sweep's options are declared once here (as annotated types) and shared with `bench-dist`,
which takes exactly bench's options plus the data-parallel ones.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import Progress

from lmperf.attention_names import ATTENTION_IMPLEMENTATIONS
from lmperf.bench.options import SweepOptions
from lmperf.cli_support import clean_errors, given_options, resolve_device
from lmperf.model.choice import ModelChoice

# A terminal (or COLUMNS) sets the width; a file or a pipe gets room for the whole table.
console = Console(width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200)

Presets = Annotated[Optional[str], typer.Option("--presets", "-p", help="Comma-separated presets (default: tiny on a CPU, small on a GPU).")]
Contexts = Annotated[Optional[str], typer.Option("--contexts", "-t", help="Comma-separated context lengths (default: 128 on a CPU, 512 on a GPU).")]
Modes = Annotated[str, typer.Option(help="forward, forward-backward, train-step.")]
Precisions = Annotated[Optional[str], typer.Option("--precisions", help="fp32, bf16 (bf16 autocast). Default: fp32 on a CPU, fp32,bf16 on a GPU.")]
Compile = Annotated[str, typer.Option("--compile", help="eager, compile (torch.compile), or both.")]
Attention = Annotated[str, typer.Option(help=", ".join(ATTENTION_IMPLEMENTATIONS) + " (comma-separated for several).")]
Batch = Annotated[int, typer.Option(help="Batch size.")]
Warmup = Annotated[int, typer.Option(help="Warm-up steps before measuring (0 allowed).")]
Steps = Annotated[int, typer.Option(help="Measured steps.")]
Device = Annotated[str, typer.Option(help="auto, cpu or cuda.")]
PeakTflops = Annotated[Optional[float], typer.Option(help="Override the GPU's dense peak TFLOP/s used for MFU.")]
Resume = Annotated[Optional[Path], typer.Option(help="Continue the sweep in this run directory, skipping finished rows.")]
RunsRoot = Annotated[Path, typer.Option("--runs", help="Where run directories are created.")]
# The model's own shape: a Hugging Face config instead of presets, and fields laid over either.
HfConfig = Annotated[Optional[str], typer.Option(help="A Hugging Face config.json (or its folder, or a model name already in the local HF cache) instead of presets.")]
DModel = Annotated[Optional[int], typer.Option(help="Model width, over the preset or config.")]
DFf = Annotated[Optional[int], typer.Option(help="MLP width.")]
Layers = Annotated[Optional[int], typer.Option(help="Transformer blocks.")]
Heads = Annotated[Optional[int], typer.Option(help="Query heads.")]
KvHeads = Annotated[Optional[int], typer.Option(help="K/V heads (fewer than --heads: grouped-query; 1: multi-query).")]
Vocab = Annotated[Optional[int], typer.Option(help="Vocabulary size.")]
MaxSeqLen = Annotated[Optional[int], typer.Option("--max-context", "--max-seq-len", help="Longest context (rotary table length).")]
TieEmbeddings = Annotated[Optional[bool], typer.Option("--tie-embeddings/--untie-embeddings", help="LM head shares the embedding matrix (or not).")]
Mlp = Annotated[Optional[str], typer.Option(help="swiglu or gelu (a two-matrix GELU MLP).")]
ParamDtypes = Annotated[str, typer.Option("--param-dtype", help="fp32 (fp32 master weights, gradients, AdamW state; bf16 via autocast) or bf16 (pure bf16 parameters and optimizer state; needs --precisions bf16); comma-separated.")]
Losses = Annotated[str, typer.Option("--loss", help="eager (logits, then F.cross_entropy) or fused (lmperf.ops fused linear cross-entropy, no logits); comma-separated.")]
Checkpoints = Annotated[str, typer.Option("--checkpoint", help="Activation checkpointing per block: none, full, selective (keeps SDPA's attention output); comma-separated.")]
LeaderboardWarmup = Annotated[float, typer.Option(help="do_bench warm-up budget in ms for the leaderboard_ms figure (the leaderboard: 10000).")]
LeaderboardRep = Annotated[float, typer.Option(help="do_bench repetition budget in ms for leaderboard_ms (the leaderboard: 30000); 0 skips it.")]

_DEFAULT = SweepOptions()


def bench(
    context: typer.Context,
    presets: Presets = _DEFAULT.presets,
    contexts: Contexts = _DEFAULT.contexts,
    modes: Modes = _DEFAULT.modes,
    precisions: Precisions = _DEFAULT.precisions,
    compile: Compile = _DEFAULT.compile,
    attention: Attention = _DEFAULT.attention,
    batch: Batch = _DEFAULT.batch,
    warmup: Warmup = _DEFAULT.warmup,
    steps: Steps = _DEFAULT.steps,
    device: Device = _DEFAULT.device,
    peak_tflops: PeakTflops = _DEFAULT.peak_tflops,
    resume: Resume = _DEFAULT.resume,
    runs_root: RunsRoot = _DEFAULT.runs_root,
    hf_config: HfConfig = None,
    d_model: DModel = None,
    d_ff: DFf = None,
    layers: Layers = None,
    heads: Heads = None,
    kv_heads: KvHeads = None,
    vocab: Vocab = None,
    max_seq_len: MaxSeqLen = None,
    tie_embeddings: TieEmbeddings = None,
    mlp: Mlp = None,
    param_dtype: ParamDtypes = _DEFAULT.param_dtypes,
    loss: Losses = _DEFAULT.losses,
    checkpoint: Checkpoints = _DEFAULT.checkpoints,
    leaderboard_warmup_ms: LeaderboardWarmup = _DEFAULT.leaderboard_warmup_ms,
    leaderboard_rep_ms: LeaderboardRep = _DEFAULT.leaderboard_rep_ms,
    nproc: Annotated[Optional[int], typer.Option(help="Data-parallel on N processes, one per GPU (same as lmperf bench-dist).")] = None,
    strategy: Annotated[str, typer.Option(help="With --nproc: ddp or fsdp (FSDP2); more options in lmperf bench-dist.")] = "ddp",
) -> None:
    """Time forward, forward-backward and training steps over a grid of configurations."""
    model = model_choice(hf_config, d_model, d_ff, layers, heads, kv_heads, vocab, max_seq_len, tie_embeddings, mlp)
    options = SweepOptions(presets, contexts, modes, precisions, compile, attention, batch,
                           warmup, steps, device, peak_tflops, resume, runs_root, model, param_dtype, loss,
                           checkpoint, leaderboard_warmup_ms, leaderboard_rep_ms)
    if nproc is not None:
        from lmperf.distributed.commands import run_bench_dist

        return run_bench_dist(options, nproc, strategy, given=given_sweep_options(context))
    run_bench(options, given_sweep_options(context))


def model_choice(hf_config, d_model, d_ff, layers, heads, kv_heads, vocab, max_seq_len, tie_embeddings, mlp) -> ModelChoice:
    """The model flags (HfConfig .. Mlp above, in that order) as a ModelChoice; shared by every
    command that takes a model."""
    return ModelChoice.from_options(
        hf_config, d_model=d_model, d_ff=d_ff, n_layers=layers, n_heads=heads, n_kv_heads=kv_heads,
        vocab_size=vocab, max_seq_len=max_seq_len, tie_embeddings=tie_embeddings, mlp=mlp,
    )


MODEL_OPTIONS = ("hf_config", "d_model", "d_ff", "layers", "heads", "kv_heads", "vocab", "max_seq_len",
                 "tie_embeddings", "mlp")


# Flags named in the singular for SweepOptions fields named in the plural (each takes a list).
_FIELD_OF_FLAG = {"param_dtype": "param_dtypes", "loss": "losses", "checkpoint": "checkpoints"}


def given_sweep_options(context: typer.Context) -> set[str]:
    """The SweepOptions fields given on the command line (any model option gives `model`)."""
    return {"model" if name in MODEL_OPTIONS else _FIELD_OF_FLAG.get(name, name) for name in given_options(context)}


def run_bench(options: SweepOptions, given: set[str] | None = None) -> None:
    """One process: run the grid into a (new or resumed) run directory, then render its reports.

    Resuming, the directory's recorded options are used; those in `given` (None: all) must match."""
    from lmperf.bench import report
    from lmperf.bench.sweep import run_sweep
    from lmperf.report import tables
    from lmperf.report.rundir import open_run_dir

    options = replace(options, device=resolve_device(options.device)).validate()
    run_dir, recorded = open_run_dir("bench", options.arguments(), options.resume, options.runs_root, given)
    options = options.with_arguments(recorded)
    device = resolve_device(options.device)  # a resumed directory's device may be missing here
    settings = options.settings(device)
    configs = options.configs(device.startswith("cuda"))
    console.print(f"[bold]lmperf bench[/]: {len(configs)} configurations on {device}, rows -> {run_dir.results}")
    try:
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("benchmarking", total=len(configs))
            rows = run_sweep(configs, settings, run_dir, on_row=lambda row: progress.advance(task))
    finally:
        if run_dir.results.exists():
            written = report.write_reports(run_dir.path)
        run_dir.release()  # a caller in the same process may resume it next
    shown = tables.fitting_columns(rows, report.COLUMNS, console.width, report.TERMINAL_PRIORITY)
    console.print(tables.rich_table(rows, shown, title="lmperf bench"))
    if len(shown) < len(report.COLUMNS):
        console.print(f"({len(report.COLUMNS) - len(shown)} more columns in results.md and results.csv)")
    console.print("wrote " + ", ".join(str(p) for p in [run_dir.results, *written]))


def register(app: typer.Typer) -> None:
    """Add `bench` to `app`."""
    app.command()(clean_errors(bench))
