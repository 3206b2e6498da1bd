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
    nproc: Annotated[
        Optional[int], typer.Option(help="Data-parallel on N processes, one per GPU (same as lmperf bench-dist).")
    ] = None,
    strategy: Annotated[
        str, typer.Option(help="With --nproc: ddp or fsdp (FSDP2); more options in lmperf bench-dist.")
    ] = "ddp",
) -> None:
    """Time forward, forward-backward and training steps over a grid of configurations."""
    if nproc is not None or _made_data_parallel(options.resume):
        from lmperf.run.launchers import DATA_PARALLEL, runner

        # resumed without --nproc, the directory's own process count and strategy come back
        return runner(DATA_PARALLEL)(options, nproc, strategy, given=given_fields(context))
    _run_and_print(options, given_fields(context))


def _made_data_parallel(resume) -> bool:
    """Whether `--resume` names a directory of a data-parallel sweep (`bench --nproc`, bench-dist)."""
    from lmperf.report.rundir import RESULTS, command_of

    return resume is not None and (resume / RESULTS).is_file() and command_of(resume) == "bench-dist"


def _run_and_print(options: SweepOptions, given: set[str]) -> None:
    from rich.progress import Progress

    from lmperf.bench import report, run_bench
    from lmperf.report import tables

    out = console()
    with Progress(console=out, transient=True) as progress:
        task = None

        def started(start):
            nonlocal task
            of_total = f" of {start.total}" if start.configurations < start.total else ""
            out.print(
                f"[bold]lmperf bench[/]: {start.configurations}{of_total} configurations to run on "
                f"{start.device}, rows -> {start.results}"
            )
            task = progress.add_task("benchmarking", total=start.configurations)

        result = run_bench(options, given, on_start=started, on_row=lambda row: progress.advance(task))
    rows = report.flagged(result.rows)
    layout = tables.layout(rows, report.COLUMNS, report.IDENTIFYING)
    shown = tables.fitting_columns(rows, layout.columns, out.width, report.TERMINAL_PRIORITY)
    if layout.constants:
        out.print(layout.line(), markup=False)
    out.print(tables.rich_table(rows, shown, title="lmperf bench"))
    if len(shown) < len(layout.columns):
        out.print(f"({len(layout.columns) - len(shown)} more columns in results.md and results.csv)")
    out.print("wrote " + ", ".join(str(p) for p in [result.run_dir / "results.jsonl", *result.written]))


def register(app: typer.Typer) -> None:
    """Add `bench` to `app`."""
    app.command()(clean_errors(bench))
