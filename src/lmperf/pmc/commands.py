"""CLI commands of lmperf.pmc, registered on the main app by lmperf.cli: `lmperf pmc ...`."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from lmperf.cli_support import clean_errors, split_list
from lmperf.errors import UsageError

pmc_app = typer.Typer(
    help="Infer a Transformer's architecture from Nsight Compute hardware counters.",
    no_args_is_help=True,
)


def _overrides(text: str) -> dict:
    """'n_layers=2,d_model=512' -> {'n_layers': 2, 'd_model': 512}."""
    out = {}
    for item in split_list(text, "set"):
        key, _, value = item.partition("=")
        if not value or not value.strip().lstrip("-").isdigit():
            raise UsageError(f"--set: expected NAME=INTEGER, got {item!r}")
        out[key.strip()] = int(value)
    return out


@pmc_app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
@clean_errors
def collect(
    ctx: typer.Context,
    preset: Optional[str] = typer.Option(None, help="An lmperf preset to profile (tiny, small, ...)."),
    set_: str = typer.Option("", "--set", help="Preset overrides, e.g. n_layers=2,d_model=512."),
    hf_config: Optional[Path] = typer.Option(None, help="A Hugging Face config.json (random weights; needs transformers)."),
    batch: int = typer.Option(2, help="Batch size."),
    seq_len: int = typer.Option(256, help="Sequence length."),
    mode: str = typer.Option("forward", help="forward or train-step (forward, backward, AdamW)."),
    dtype: str = typer.Option("bf16", help="fp32, fp16, bf16 (train steps use autocast)."),
    attention: str = typer.Option("sdpa", help="eager or sdpa."),
    range_name: str = typer.Option("step", "--range", help="NVTX range of the step, for -- CMD."),
    ncu_path: Optional[str] = typer.Option(None, "--ncu", help="The ncu executable (default: ncu on the PATH)."),
    out: Path = typer.Option(Path("capture.csv.gz"), "--out", "-o", help="Raw CSV to write (.gz to compress)."),
) -> None:
    """Profile one step with ncu: a preset, a Hugging Face config, or `-- CMD ...` (one NVTX range)."""
    from lmperf.pmc.collect import collect_command, collect_target
    from lmperf.pmc.targets import Target, read_hf_config

    program = list(ctx.args)
    chosen = [name for name, given in (("--preset", preset), ("--hf-config", hf_config),
                                       ("-- CMD", program)) if given]
    if len(chosen) != 1:
        raise UsageError("name exactly one target: --preset, --hf-config or -- CMD ...")
    if program:
        result = collect_command(program, range_name, out, ncu_path)
    else:
        target = Target(
            batch=batch, seq_len=seq_len, mode=mode, dtype=dtype, attention=attention,
            preset=preset, overrides=_overrides(set_) if set_ else {},
            hf_config=read_hf_config(hf_config) if hf_config else None,
        )
        result = collect_target(target, out, ncu_path)
    written = [result.raw_csv, result.kernels_csv] + ([result.truth_json] if result.truth_json else [])
    typer.echo(f"{result.kernels} kernels; wrote " + ", ".join(map(str, written)))
    if result.dropped_metrics:
        typer.echo("not offered by this GPU: " + ", ".join(result.dropped_metrics))


def register(app: typer.Typer) -> None:
    """Add `lmperf pmc collect / infer / explain` to `app`."""
    app.add_typer(pmc_app, name="pmc")
