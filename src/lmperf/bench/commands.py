"""`lmperf bench`: parses the sweep's options (lmperf.run.options), calls lmperf.bench.run_bench
(or, with --nproc, the data-parallel runner lmperf.distributed registers), prints the table."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lmperf.cli_support import clean_errors, console
from lmperf.run.options import SweepOptions, given_fields, sweep_options


@sweep_options
def bench(
    context: typer.Context,
    options: SweepOptions,
    nproc: Annotated[Optional[int], typer.Option(help="Data-parallel on N processes, one per GPU (same as lmperf bench-dist).")] = None,
    strategy: Annotated[str, typer.Option(help="With --nproc: ddp or fsdp (FSDP2); more options in lmperf bench-dist.")] = "ddp",
) -> None:
    """Time forward, forward-backward and training steps over a grid of configurations."""
    if nproc is not None:
        from lmperf.run.launchers import DATA_PARALLEL, runner

        return runner(DATA_PARALLEL)(options, nproc, strategy, given=given_fields(context))
    _run_and_print(options, given_fields(context))


def _run_and_print(options: SweepOptions, given: set[str]) -> None:
    from rich.progress import Progress

    from lmperf.bench import report, run_bench
    from lmperf.report import tables

    out = console()
    with Progress(console=out, transient=True) as progress:
        task = None

        def started(start):
            nonlocal task
            out.print(f"[bold]lmperf bench[/]: {start.configurations} configurations on {start.device}, rows -> {start.results}")
            task = progress.add_task("benchmarking", total=start.configurations)

        result = run_bench(options, given, on_start=started, on_row=lambda row: progress.advance(task))
    shown = tables.fitting_columns(result.rows, report.COLUMNS, out.width, report.TERMINAL_PRIORITY)
    out.print(tables.rich_table(result.rows, shown, title="lmperf bench"))
    if len(shown) < len(report.COLUMNS):
        out.print(f"({len(report.COLUMNS) - len(shown)} more columns in results.md and results.csv)")
    out.print("wrote " + ", ".join(str(p) for p in [result.run_dir / "results.jsonl", *result.written]))


def register(app: typer.Typer) -> None:
    """Add `bench` to `app`."""
    app.command()(clean_errors(bench))
