"""`run_bench`: bench's sweep in this process, into a new or resumed run directory, with its
reports rendered from the rows on disk (also when the sweep stops early)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from lmperf.cli_support import resolve_device
from lmperf.report.rundir import open_run_dir, reports_rendered
from lmperf.run.options import SweepOptions, flag_of

COMMAND = "bench"


@dataclass(frozen=True)
class BenchStart:
    """What a sweep is about to do: told to `on_start` before the first configuration runs."""

    configurations: int  # to run now: the sweep's less those a resumed directory has rows for
    total: int  # the whole sweep's
    device: str
    results: Path


@dataclass(frozen=True)
class BenchRun:
    run_dir: Path
    rows: list[dict]
    written: list[Path]  # results.md, results.csv, the plot


def run_bench(
    options: SweepOptions,
    given: set[str] | None = None,
    on_start: Callable[[BenchStart], None] = lambda start: None,
    on_row: Callable[[dict], None] = lambda row: None,
) -> BenchRun:
    """Run the grid into a run directory (`options.resume`, or a new one under `options.runs_root`).

    Resuming, the directory's recorded options are used; those in `given` (None: all) must match
    them. Reports are rendered from the rows on disk even when the sweep stops early."""
    from lmperf.bench import report
    from lmperf.run.sweep import remaining, run_sweep

    device = resolve_device(options.device)
    options = replace(options, device=device).validate().resolved(device.startswith("cuda"))
    run_dir, recorded = open_run_dir(COMMAND, options.arguments(), options.resume, options.runs_root, given, flag_of)
    with reports_rendered(run_dir, report.write_reports) as written:
        options = options.with_arguments(recorded)
        device = resolve_device(options.device)  # a resumed directory's device may be missing here
        configs = options.configs(device.startswith("cuda"))
        on_start(BenchStart(len(remaining(configs, run_dir)), len(configs), device, run_dir.results))
        rows = run_sweep(configs, options.settings(device), run_dir, on_row=on_row)
    return BenchRun(run_dir.path, rows, written)
