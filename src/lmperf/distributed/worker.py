"""Running a job (bench or comm) in a data-parallel world, launched here or by the user.

Outside a launch, `run_job` writes the job to `<run dir>/job.json` and starts torchrun, whose
workers run `python -m lmperf.distributed.worker <run dir>`; inside a launch it joins it directly.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from lmperf.cli_support import quiet_other_libraries
from lmperf.distributed.bench import DistBenchJob, run_dist_sweep
from lmperf.distributed.comm import CommJob, run_comm
from lmperf.distributed.launch import Nodes, joined_world, launched, run_torchrun
from lmperf.report.rundir import RunDir

JOB_FILE = "job.json"
Job = DistBenchJob | CommJob


def _device(job: Job) -> str:
    return job.settings.device if isinstance(job, DistBenchJob) else job.device


def run_in_world(job: Job, run_dir: RunDir | None, on_row=lambda row: None) -> None:
    """Join the launch's world and run `job`; only rank 0 writes (it is given `run_dir`)."""
    with joined_world(_device(job), job.timeout_s) as world:
        main_dir = run_dir if world.is_main else None
        if isinstance(job, DistBenchJob):
            run_dist_sweep(job, world, main_dir, on_row)
        else:
            run_comm(job, world, main_dir, on_row)


def run_job(job: Job, nproc: int, run_dir: RunDir | None, on_row=lambda row: None, nodes: Nodes = Nodes()) -> int:
    """Run `job` on `nproc` processes per node (or in the launch this process is part of); exit
    status. Rank 0, on node 0, writes the rows into node 0's run directory."""
    if launched():
        run_in_world(job, run_dir, on_row)
        return 0
    (run_dir.path / JOB_FILE).write_text(json.dumps(job.to_dict(), indent=1), encoding="utf-8")
    run_dir.results.touch()  # workers resume into it
    return run_torchrun(nproc, "lmperf.distributed.worker", [str(run_dir.path)], nodes)


def load_job(run_path: Path) -> Job:
    spec = json.loads((Path(run_path) / JOB_FILE).read_text(encoding="utf-8"))
    return DistBenchJob.from_dict(spec) if spec["kind"] == "bench" else CommJob.from_dict(spec)


def log_row(row) -> None:
    """One line per finished row in the launch's log, so a run cut short shows how far it got."""
    fields = (
        "op",
        "size_bytes",
        "preset",
        "seq_len",
        "strategy",
        "bucket_mb",
        "reshard",
        "status",
        "mean_us",
        "mean_ms",
        "error",
    )
    shown = (f"{name}={_rounded(getattr(row, name))}" for name in fields if getattr(row, name, None) not in (None, ""))
    print("lmperf row: " + " ".join(shown), flush=True)


def _rounded(value):
    """Four significant figures are what a progress line needs (the row keeps every digit)."""
    return f"{value:.4g}" if isinstance(value, float) else value


def main(argv: list[str]) -> None:
    quiet_other_libraries()  # the launcher's --verbose reaches the workers through the environment
    run_dir = RunDir.attach(Path(argv[0]))
    run_in_world(load_job(run_dir.path), run_dir, log_row)
    # The rows are written and the group is gone; leave without the interpreter's teardown, in
    # which torch's C++ threads can still abort a finished rank and fail the whole launch.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
