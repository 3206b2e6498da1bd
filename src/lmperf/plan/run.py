"""The library calls behind `lmperf plan` and `lmperf plan-check`: rows to a run directory and
its Markdown report."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from lmperf.errors import UsageError
from lmperf.plan.check import check, fitted_overlaps, pair_rows
from lmperf.plan.collectives import Network, fit_links
from lmperf.plan.inputs import rows_at
from lmperf.plan.predict import PlanInputs, predict
from lmperf.plan.report import check_markdown, write_plan_report
from lmperf.report.environment import environment
from lmperf.report.rundir import RunDir


def _write(command: str, rows: list[dict], runs_root: Path, arguments: dict) -> RunDir:
    run_dir = RunDir.create(command, runs_root, arguments)
    for row in rows:
        run_dir.append(row)
    return run_dir


def run_plan(
    inputs: PlanInputs, gpus: Sequence[int], runs_root: Path = Path("runs"), arguments: dict | None = None
) -> Path:
    """One row per GPU count in a new run directory, and its results.md; returns the directory."""
    rows = []
    for n in gpus:  # every count is checked before a directory is made
        row = predict(inputs, n)
        row.env = environment("cpu")
        rows.append(row.to_dict())
    run_dir = _write("plan", rows, runs_root, arguments or {})
    write_plan_report(run_dir.path)
    run_dir.release()
    return run_dir.path


def run_check(comm: Path, steps: Sequence[Path], runs_root: Path = Path("runs")) -> Path:
    """The model beside every N-GPU step of `steps` that has a one-GPU row there too."""
    comm_rows = rows_at(comm)
    network = Network(fit_links(comm_rows, str(comm)))
    pairs, unpaired = pair_rows(row for path in steps for row in rows_at(path))
    if not pairs:
        raise UsageError("no N-GPU train step in the rows has a one-GPU row of the same configuration")
    rows = [row.to_dict() for row in check(pairs, network)]
    run_dir = _write("plan-check", rows, runs_root, {"comm": str(comm), "steps": [str(p) for p in steps]})
    md = run_dir.path / "results.md"
    md.write_text(
        check_markdown(rows, network.links, comm_rows, fitted_overlaps(pairs, network), unpaired), encoding="utf-8"
    )
    run_dir.release()
    return run_dir.path
