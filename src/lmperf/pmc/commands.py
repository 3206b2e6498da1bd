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
    hf_config: Optional[Path] = typer.Option(
        None, help="A Hugging Face config.json (random weights; needs transformers)."
    ),
    batch: int = typer.Option(2, help="Batch size."),
    context: int = typer.Option(256, "--context", "-t", "--seq-len", help="Context length (tokens per sequence)."),
    mode: str = typer.Option(
        "forward",
        help="forward, train-step (forward, backward, AdamW) or "
        "generate (prefill, then decode steps with a KV cache; --hf-config).",
    ),
    precision: str = typer.Option(
        "bf16", "--precision", "--dtype", help="fp32, fp16, bf16 (train steps use autocast)."
    ),
    attention: str = typer.Option(
        "sdpa",
        help="naive, sdpa or triton (lmperf's kernel, presets); "
        "naive runs a Hugging Face model with its eager attention.",
    ),
    sdpa_backend: Optional[str] = typer.Option(
        None, help="Pin SDPA to flash_attention, efficient_attention, cudnn_attention or math."
    ),
    new_tokens: int = typer.Option(0, help="generate: tokens to generate after a --context prompt."),
    compile_mode: Optional[str] = typer.Option(
        None,
        "--compile",
        help="torch.compile the whole model: default, max-autotune-no-cudagraphs or reduce-overhead (CUDA graphs).",
    ),
    kernels: Optional[str] = typer.Option(
        None,
        help="liger: Liger-Kernel's RMSNorm, SwiGLU, rotary and fused loss (Hugging Face Llama, Mistral, Qwen2, Qwen3).",
    ),
    loss: str = typer.Option("eager", help="A preset's train-step loss: eager or fused (lmperf's)."),
    static_cache: bool = typer.Option(
        False, "--static-cache", help="generate with a static KV cache (Hugging Face compiles the decode step)."
    ),
    range_name: str = typer.Option("step", "--range", help="NVTX range of the step, for -- CMD."),
    ncu_path: Optional[str] = typer.Option(None, "--ncu", help="The ncu executable (default: ncu on the PATH)."),
    out: Path = typer.Option(Path("capture.csv.gz"), "--out", "-o", help="Raw CSV to write (.gz to compress)."),
) -> None:
    """Profile one step with ncu: a preset, a Hugging Face config, or `-- CMD ...` (one NVTX range)."""
    from lmperf.pmc.collect import collect_command, collect_target
    from lmperf.model.hf_config import read_fields
    from lmperf.pmc.targets import Target

    program = list(ctx.args)
    chosen = [name for name, given in (("--preset", preset), ("--hf-config", hf_config), ("-- CMD", program)) if given]
    if len(chosen) != 1:
        raise UsageError("name exactly one target: --preset, --hf-config or -- CMD ...")
    if program:
        result = collect_command(program, range_name, out, ncu_path)
    else:
        target = Target(
            batch=batch,
            seq_len=context,
            mode=mode,
            dtype=precision,
            attention=attention,
            sdpa_backend=sdpa_backend,
            new_tokens=new_tokens,
            compile=compile_mode,
            kernels=kernels,
            loss=loss,
            static_cache=static_cache,
            preset=preset,
            overrides=_overrides(set_) if set_ else {},
            hf_config=read_fields(hf_config)[0] if hf_config else None,
        )
        result = collect_target(target, out, ncu_path)
    written = [result.raw_csv, result.kernels_csv] + ([result.truth_json] if result.truth_json else [])
    typer.echo(f"{result.kernels} kernels; wrote " + ", ".join(map(str, written)))
    if result.dropped_metrics:
        typer.echo("not offered by this GPU: " + ", ".join(result.dropped_metrics))
    if result.collectives:
        typer.echo(result.collectives)


@pmc_app.command()
@clean_errors
def infer(
    capture: Path = typer.Argument(..., help="ncu raw CSV (--csv --page raw), optionally .gz."),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object."),
) -> None:
    """Infer mode, dtype, batch, seq_len, layers, widths, heads, vocab and parameters."""
    import json

    from lmperf.pmc.infer import infer_file

    result = infer_file(capture)
    typer.echo(json.dumps(result.to_json()) if as_json else result.report())
    for line in result.warnings():  # on stderr too, so a --json reader sees it beside the object
        typer.echo(f"lmperf: {line}", err=True)


def _known_model(preset: Optional[str], set_: str, hf_config: Optional[Path]):
    from lmperf.model.hf_config import read_hf_config
    from lmperf.pmc.explain import from_preset

    if (preset is None) == (hf_config is None):
        raise UsageError("name the known model: --preset NAME or --hf-config PATH")
    if preset:
        return from_preset(preset, _overrides(set_) if set_ else None)
    return read_hf_config(hf_config).config


@pmc_app.command()
@clean_errors
def explain(
    capture: Optional[Path] = typer.Argument(None, help="ncu raw CSV of the known model (not with --sweep)."),
    preset: Optional[str] = typer.Option(None, help="The lmperf preset that ran."),
    set_: str = typer.Option("", "--set", help="Preset overrides, e.g. n_layers=2."),
    hf_config: Optional[Path] = typer.Option(None, help="The Hugging Face config.json that ran."),
    batch: int = typer.Option(2, help="Batch size that ran."),
    context: int = typer.Option(
        256, "--context", "-t", "--seq-len", help="Context length that ran (the sweep's base)."
    ),
    sweep: bool = typer.Option(False, help="Tables and a PNG of counted FLOPs vs T, layers, width."),
    contexts: str = typer.Option("128,256,512,1024,2048", "--contexts", "--seq-lens", help="Sweep: context lengths."),
    layers: str = typer.Option("2,4,8,16", help="Sweep: layer counts."),
    widths: str = typer.Option("256,512,1024,2048", help="Sweep: d_model values."),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where the sweep's run directory goes."),
) -> None:
    """Measured counters per kernel class and per layer op beside the analytic prediction."""
    from lmperf.pmc import explain as ex
    from lmperf.pmc.parse import read_capture
    from lmperf.report import tables

    model = _known_model(preset, set_, hf_config)
    if sweep:
        _sweep(model, batch, context, contexts, layers, widths, runs_root)
        return
    if capture is None:
        raise UsageError("give a CAPTURE to explain, or --sweep")
    recorded = read_capture(capture)
    class_rows, role_rows = (
        ex.class_rows(recorded, model, batch, context),
        ex.role_rows(recorded, model, batch, context),
    )
    typer.echo(tables.markdown(class_rows, ex.CLASS_COLUMNS))
    typer.echo(tables.markdown(role_rows, ex.ROLE_COLUMNS))
    flagged = ex.implausible(class_rows + role_rows)
    if flagged:
        low, high = ex.PLAUSIBLE_RESIDUAL
        typer.echo(
            f"lmperf: warning: {len(flagged)} residual(s) beyond what tile padding and 3xTF32 allow "
            f"({low:+.0%} to {high:+.0%}): was this the model, batch and length that ran?",
            err=True,
        )


def _sweep(model, batch, context, contexts, layers, widths, runs_root) -> None:
    from lmperf.pmc import sweep
    from lmperf.report import tables
    from lmperf.report.rundir import RunDir

    rows = sweep.sweep_rows(
        model,
        batch,
        split_list(contexts, "contexts", int),
        split_list(layers, "layers", int),
        split_list(widths, "widths", int),
        context,
    )
    written = sweep.write_sweep(rows, RunDir.create("pmc-sweep", runs_root))
    typer.echo(tables.markdown(rows, sweep.COLUMNS))
    typer.echo("wrote " + ", ".join(str(path) for path in written))


def register(app: typer.Typer) -> None:
    """Add `lmperf pmc collect / infer / explain` to `app`."""
    app.add_typer(pmc_app, name="pmc")
