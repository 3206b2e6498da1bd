"""CLI command of lmperf.attention_bench, registered on the main app by lmperf.cli."""

from __future__ import annotations

from pathlib import Path

import typer

from lmperf.attention_names import BENCHMARK_DEFAULT, BENCHMARK_IMPLEMENTATIONS
from lmperf.cli_support import clean_errors, console as make_console, resolve_device, split_list
from lmperf.errors import UsageError

ALL_CONTEXTS = ",".join(str(2**n) for n in range(7, 17))  # 128 ... 65536


def _causal_flags(text: str) -> list[bool]:
    names = {"causal": [True], "non-causal": [False], "both": [False, True]}
    if text not in names:
        raise UsageError(f"--causal must be causal, non-causal or both, got {text!r}")
    return names[text]


def attention_command(
    impls: str = typer.Option(
        ",".join(BENCHMARK_DEFAULT),
        help=f"Implementations to time, of: {', '.join(BENCHMARK_IMPLEMENTATIONS)} (triton-<backward>: the Triton kernel with that backward; triton-no-gluon: with Triton's kernels where the Gluon forward and backward would run).",
    ),
    contexts: str = typer.Option(ALL_CONTEXTS, "--contexts", "-t", "--seqs", help="Context (sequence) lengths."),
    head_dims: str = typer.Option("16,32,64,128", help="Head dimensions."),
    dtypes: str = typer.Option("fp32,bf16", help="Element type of q, k, v: fp32, fp16, bf16."),
    causal: str = typer.Option("both", help="causal, non-causal or both."),
    batch: int = typer.Option(0, help="Batch size (0: 16384 tokens / seq)."),
    heads: int = typer.Option(0, help="Heads (0: 2048 / head_dim)."),
    rep_ms: int = typer.Option(100, help="Milliseconds do_bench repeats each measurement for."),
    rounds: int = typer.Option(
        1,
        help="Times each point's implementations are timed, in turn (every other round in reverse order); the report gives medians and the per-round ratios' range.",
    ),
    torch_max_seq: int = typer.Option(
        4096, "--torch-max-context", "--torch-max-seq", help="Longest context for torch-compiled (its loops unroll)."
    ),
    device: str = typer.Option("auto", help="cuda (auto picks it when present)."),
    runs_root: Path = typer.Option(Path("runs"), "--runs", help="Where run directories are created."),
) -> None:
    """Time attention implementations: forward, backward, forward+backward, TFLOP/s, memory."""
    from lmperf.attention_bench import report
    from lmperf.attention_bench.benchmark import cases, check_rounds, run_attention_sweep
    from lmperf.report import tables
    from lmperf.report.rundir import RunDir

    console = make_console()
    device = resolve_device(device)
    case_list = cases(
        split_list(impls, "impls"),
        split_list(contexts, "contexts", int),
        split_list(head_dims, "head-dims", int),
        split_list(dtypes, "dtypes"),
        _causal_flags(causal),
        batch,
        heads,
    )
    check_rounds(rounds)  # before the run directory is created
    if not device.startswith("cuda"):
        raise UsageError("lmperf attention times GPU kernels and needs CUDA")
    run_dir = RunDir.create("attention", runs_root)
    console.print(
        f"[bold]lmperf attention[/]: {len(case_list)} cases x {rounds} round(s) on {device}, rows -> {run_dir.results}"
    )
    try:
        rows = run_attention_sweep(
            case_list,
            run_dir,
            device,
            rep_ms,
            torch_max_seq,
            rounds=rounds,
            on_row=lambda row: console.print(
                f"r{row.round} {row.impl} seq={row.seq} d={row.head_dim} {row.dtype} causal={row.causal}: {row.status} {'' if row.fwd_bwd_ms is None else f'{row.fwd_bwd_ms:.4g} ms fwd+bwd'}"
            ),
        )
    finally:
        if run_dir.results.exists():
            written = report.write_reports(run_dir.path)
    console.print(tables.rich_table([vars(r) for r in rows], report.COLUMNS, title="lmperf attention"))
    console.print("wrote " + ", ".join(str(p) for p in [run_dir.results, *written]))


def register(app: typer.Typer) -> None:
    """Add `lmperf attention` to `app`."""
    app.command("attention")(clean_errors(attention_command))
