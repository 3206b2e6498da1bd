"""The CLI as a user meets it: real processes, real exit codes, real stderr."""

import subprocess
import sys

import pytest
import torch

from lmperf.report.rundir import read_rows


def lmperf(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "lmperf.cli", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    result = lmperf("bench", "--runs", str(root), "--warmup", "1", "--steps", "2", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    (run_dir,) = root.iterdir()
    return run_dir, result


def test_default_bench_runs_tiny_on_cpu_and_leaves_its_files(finished_run):
    run_dir, result = finished_run
    rows = read_rows(run_dir / "results.jsonl")
    assert [r["mode"] for r in rows] == ["forward", "forward-backward", "train-step"]
    assert {r["preset"] for r in rows} == {"tiny"} and all(r["status"] == "ok" for r in rows)
    for name in ("results.md", "results.csv", "time_per_step.png"):
        assert (run_dir / name).stat().st_size > 0
    assert "train-step" in result.stdout


BAD_INPUTS = [
    (["--presets", "gigantic"], "unknown preset"),
    (["--contexts", "100000"], "exceeds the model's maximum"),
    (["--contexts", "0"], "must be positive"),
    (["--contexts", "abc"], "cannot read"),
    (["--modes", "inference"], "unknown mode"),
    (["--precisions", "fp8"], "unknown precision"),
    (["--attention", "magic"], "unknown attention"),
    (["--batch", "0"], "batch must be positive"),
    (["--steps", "0"], "--steps > 0"),
    (["--peak-tflops", "-1", "--steps", "1", "--warmup", "0"], "must be positive"),
]
if not torch.cuda.is_available():
    BAD_INPUTS.append((["--device", "cuda"], "CUDA is not available"))


@pytest.mark.parametrize("args, message", BAD_INPUTS)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    result = lmperf("bench", "--runs", str(tmp_path), *args)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr


def test_bad_input_on_resume_leaves_finished_rows_alone(finished_run):
    run_dir, _ = finished_run
    before = (run_dir / "results.jsonl").read_bytes()
    result = lmperf("bench", "--resume", str(run_dir), "--presets", "gigantic")
    assert result.returncode == 2
    assert (run_dir / "results.jsonl").read_bytes() == before


def test_resume_of_a_finished_run_adds_nothing(finished_run, tmp_path):
    run_dir, _ = finished_run
    before = read_rows(run_dir / "results.jsonl")
    result = lmperf("bench", "--resume", str(run_dir), "--device", "cpu", "--warmup", "1", "--steps", "2")
    assert result.returncode == 0, result.stderr
    assert read_rows(run_dir / "results.jsonl") == before


def test_resume_of_a_missing_run_is_one_line(tmp_path):
    result = lmperf("bench", "--resume", str(tmp_path / "nowhere"))
    assert result.returncode == 2 and "cannot resume" in result.stderr
