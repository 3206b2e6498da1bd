"""A rank that fails ends the step on every rank with one row saying what happened, never a hang."""

import os
import subprocess
import sys
from pathlib import Path

import torch

from lmperf.model.step import ModelStep, StepConfig
from lmperf.run.sweep import SweepSettings
from lmperf.distributed.bench import DistBenchJob, fill_missing, run_dist_sweep
from lmperf.distributed.launch import joined_world
from lmperf.distributed.strategies import Strategy
from lmperf.report.rundir import RunDir
from world_spawn import spawn_world

CONFIG = StepConfig("tiny", 32, "train-step", batch=2)
JOB = DistBenchJob([CONFIG], [Strategy("ddp"), Strategy("fsdp")], SweepSettings(warmup=1, steps=2), timeout_s=60)


def _fail_once_on_rank_one(method: str, error: Exception):
    """Make ModelStep.<method> raise `error` the first time rank 1 calls it."""
    real, calls = getattr(ModelStep, method), []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise error
        return real(self, *args, **kwargs)

    setattr(ModelStep, method, failing)


def _sweep_with_a_failure(run_path: Path, method: str, error: Exception, timeout_s: float) -> None:
    with joined_world("cpu", timeout_s) as world:
        if world.rank == 1:
            _fail_once_on_rank_one(method, error)
        run_dist_sweep(JOB, world, RunDir(run_path) if world.is_main else None)


def test_one_rank_out_of_memory_is_an_oom_row_and_the_sweep_goes_on(tmp_path):
    # Building the model has no collective, so every rank learns of the failure at the phase's end.
    oom = torch.OutOfMemoryError("CUDA out of memory (injected)")
    spawn_world(_sweep_with_a_failure, 2, tmp_path, "__init__", oom, 60.0)
    ddp, fsdp = RunDir(tmp_path).rows()
    assert (ddp["strategy"], ddp["status"]) == ("ddp", "oom")
    assert ddp["error"].startswith("rank 1: OutOfMemoryError: CUDA out of memory (injected)")
    assert "rank 0" not in ddp["error"]
    assert (fsdp["strategy"], fsdp["status"], fsdp["nproc"]) == ("fsdp", "ok", 2)
    assert len(fsdp["mean_ms_ranks"]) == 2 and fsdp["tokens_per_s_total"] == 2 * fsdp["tokens_per_s"]


# Loaded by every Python process started with it on the path: torchrun's rank 1 fails in its step.
FAULT = """
import os
if os.environ.get("RANK") == "1":
    from lmperf.model.step import ModelStep
    def failing_run(self, mode):
        raise RuntimeError("injected fault")
    ModelStep.run = failing_run
"""


def test_a_rank_failing_inside_collectives_ends_the_launch_with_error_rows(tmp_path):
    # Rank 1 fails in its step while rank 0 is in DDP's all-reduce: the mismatched collective
    # or the timeout ends the world, and the launcher writes the rows nobody wrote.
    (tmp_path / "fault").mkdir()
    (tmp_path / "fault" / "sitecustomize.py").write_text(FAULT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "fault"), *sys.path])}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lmperf.cli",
            "bench-dist",
            "--device",
            "cpu",
            "--nproc",
            "2",
            "--strategy",
            "ddp,fsdp",
            "--modes",
            "train-step",
            "--contexts",
            "32",
            "--warmup",
            "0",
            "--steps",
            "1",
            "--timeout-s",
            "5",
            "--runs",
            str(tmp_path / "runs"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode not in (0, 2), result.stderr[-3000:]  # a failed sweep is no success
    assert "lmperf: rank 1: RuntimeError: injected fault" in result.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = RunDir(run_dir).rows()
    assert [(r["strategy"], r["status"]) for r in rows] == [("ddp", "error"), ("fsdp", "error")]
    assert "process group ended early" in rows[-1]["error"]


def test_a_launch_that_died_leaves_an_error_row_for_each_missing_configuration(tmp_path):
    run_dir = RunDir(tmp_path)
    finished = {**CONFIG.to_dict(), **Strategy("ddp").key(), "nproc": 2, "status": "ok"}  # as a run writes it
    run_dir.append(finished)
    assert fill_missing(JOB, 2, run_dir, "torchrun exit 1: a rank died") == 1
    rows = run_dir.rows()
    assert [r["strategy"] for r in rows] == ["ddp", "fsdp"]
    assert (rows[1]["status"], rows[1]["error"], rows[1]["nproc"]) == ("error", "torchrun exit 1: a rank died", 2)
    assert fill_missing(JOB, 2, run_dir, "again") == 0
